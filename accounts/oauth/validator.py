"""django-oauth-toolkit's request validator with this service's rules (docs/oauth.md).

* Every authorization code and access token belongs to an ``OAuthConnection`` (the consent page
  makes it and passes its id as a credential): codes carry an ``OAuthGrantLink``, tokens an
  ``OAuthTokenLink``; a refreshed token inherits its predecessor's connection. A revoked connection
  exchanges and refreshes nothing.
* Redirect URIs follow ``accounts.oauth.redirect_uri_problem`` (https or a configured private-use
  scheme; http only to loopback, any port).
* Client ID Metadata Documents resolve through ``accounts.oauth.cimd`` (the fetch is restricted
  there).

Everything else — PKCE (S256 only), code single use, redirect URI matching, resource indicators
(RFC 8707) and refresh-token rotation — is the library's.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauthlib.oauth2.rfc6749 import errors

from accounts.models import OAuthConnection, OAuthGrantLink, OAuthTokenLink
from accounts.oauth.protocol import redirect_uri_problem


def _live_connection(connection_id: Any) -> OAuthConnection | None:
    if connection_id is None:
        return None
    return OAuthConnection.objects.filter(pk=connection_id, revoked_at__isnull=True).first()


class OAuthValidator(OAuth2Validator):
    def _load_application(self, client_id: str, request: Any) -> Any:
        application = super()._load_application(client_id, request)
        if application is None:
            from accounts.oauth.cimd import resolve_http_client_id

            application = resolve_http_client_id(client_id, request)  # development-only http CIMD
            if application is not None:
                request.client = application
        return application

    def validate_redirect_uri(self, client_id: str, redirect_uri: str, request: Any, *args: Any, **kwargs: Any) -> bool:
        return redirect_uri_problem(redirect_uri) is None and super().validate_redirect_uri(
            client_id, redirect_uri, request, *args, **kwargs
        )

    def _create_authorization_code(self, request: Any, code: Any, expires: Any = None) -> Any:
        connection = _live_connection(getattr(request, "rb_connection_id", None))
        if connection is None:  # only the consent page issues codes, and it always names one
            raise errors.AccessDeniedError(description="no consent for this authorization", request=request)
        grant = super()._create_authorization_code(request, code, expires)
        OAuthGrantLink.objects.create(grant=grant, connection=connection, organization_id=connection.organization_id)
        return grant

    def validate_code(self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        if not super().validate_code(client_id, code, client, request, *args, **kwargs):
            return False
        link = OAuthGrantLink.objects.filter(grant__code=code, grant__application=client).first()
        connection = _live_connection(link.connection_id if link else None)
        if connection is None:
            return False
        request.rb_connection = connection
        return True

    def validate_refresh_token(self, refresh_token: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        if not super().validate_refresh_token(refresh_token, client, request, *args, **kwargs):
            return False
        rt = request.refresh_token_instance
        link = OAuthTokenLink.objects.filter(access_token_id=rt.access_token_id).first() if rt.access_token_id else None
        connection = _live_connection(link.connection_id if link else None)
        if connection is None:
            return False
        request.rb_connection = connection
        return True

    def _create_access_token(self, expires: Any, request: Any, token: Any, source_refresh_token: Any = None) -> Any:
        access_token = super()._create_access_token(expires, request, token, source_refresh_token)
        connection = getattr(request, "rb_connection", None)
        if connection is not None:
            OAuthTokenLink.objects.create(
                access_token=access_token, connection=connection, organization_id=connection.organization_id
            )
            OAuthConnection.objects.filter(pk=connection.pk).update(last_used_at=timezone.now())
        return access_token
