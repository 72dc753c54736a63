"""Bearer-token authentication for the REST API (the MCP endpoint reuses ``bearer_authenticate``): an
org API token (``rb_...``) or an OAuth access token of a connected app (``rbo_...``,
docs/oauth.md#tokens) resolve to the same ``Principal``. Failed tokens are throttled by client address
and token prefix (``accounts/throttling.py``), answered 429 with ``Retry-After``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.request import Request

from accounts.access import Principal, principal_for_token
from accounts.oauth import ACCESS_TOKEN_PREFIX, API_RESOURCE_PATH, api_resource, bearer_challenge
from accounts.throttling import Throttled as ThrottledAnswer
from accounts.throttling import bearer_blocked, bearer_failure, request_client_address, token_authenticate_throttled
from reasoningbank.request_context import request_principal_note


def bearer_token_from_header(header: bytes | str | None) -> str | None:
    """The raw token from an ``Authorization: Bearer ...`` header value, or None."""
    if not header:
        return None
    if isinstance(header, bytes):
        try:
            header = header.decode("latin-1")
        except UnicodeDecodeError:
            return None
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return None
    return parts[1]


def invalid_token_message(raw: str) -> str:
    """The 401's description for a token nobody knows: an OAuth client is told to refresh or sign in
    again (its token may simply have been revoked, or cleared after expiring), never about API
    tokens it has never seen."""
    if raw.startswith(ACCESS_TOKEN_PREFIX):
        return "Invalid, expired or revoked OAuth access token: refresh it, or sign in again."
    return "Invalid, expired or revoked API token."


def bearer_authenticate(raw: str, *, address: str, resource: str) -> Any:
    """A bearer token → its ``Principal``; a ``Throttled`` answer once the address (or the token's
    prefix) has failed too often; ``OAuthRefused`` (with the reason) for an OAuth token that may not
    be used for ``resource``; None for an unknown token. API tokens are not bound to a resource."""
    from accounts.services_oauth import oauth_authenticate

    if raw.startswith(ACCESS_TOKEN_PREFIX):
        blocked = bearer_blocked(address)
        if blocked is not None:
            return blocked
        result = oauth_authenticate(raw, resource=resource)
        if isinstance(result, Principal):
            # the same display prefix the MCP tools see for an OAuth token (accounts/mcp_auth.py)
            request_principal_note(org=result.organization.slug, token_prefix=raw[:10])
            return result
        return bearer_failure(address, raw) or result
    token = token_authenticate_throttled(raw, address=address)
    if token is None or isinstance(token, ThrottledAnswer):
        return token
    principal = principal_for_token(token)
    # every later log line of this request names the org and the token's display prefix, never the token
    request_principal_note(org=principal.organization.slug, token_prefix=token.prefix)
    return principal


# what the 401's challenge says went wrong (RFC 6750 section 3.1), noted on the request by ``authenticate``
BEARER_ERROR_ATTRIBUTE = "rb_bearer_error"


def _refuse(request: Request, error: str, message: str) -> AuthenticationFailed:
    setattr(request, BEARER_ERROR_ATTRIBUTE, error)
    return AuthenticationFailed(message)


class ApiTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer rb_...`` (an API token) or ``Bearer rbo_...`` (an OAuth access token
    issued for the REST API, ``<issuer>/api/v1``). Missing → DRF's 401 with ``WWW-Authenticate``.

    The challenge follows RFC 6750 section 3.1: a token that was sent but is unknown, expired, revoked or
    minted for another resource → ``error="invalid_token"`` (a client then refreshes or signs in
    again); a malformed ``Bearer`` header → ``error="invalid_request"``; no token at all, or another
    scheme → no error code."""

    def authenticate(self, request: Request) -> tuple[Principal, Any] | None:
        from accounts.services_oauth import OAuthRefused

        header = get_authorization_header(request)
        if not header:
            return None
        raw = bearer_token_from_header(header)
        if raw is None:
            message = "Malformed Authorization header; expected 'Bearer <token>'."
            scheme = header.split(maxsplit=1)[0].lower() if header.split() else b""
            if scheme == b"bearer":
                raise _refuse(request, "invalid_request", message)
            raise AuthenticationFailed(message)  # another scheme: no bearer credentials were attempted
        address = request_client_address(request)
        principal = bearer_authenticate(raw, address=address, resource=api_resource())
        if isinstance(principal, ThrottledAnswer):
            raise Throttled(wait=principal.retry_after, detail=principal.message)  # 429 with Retry-After
        if isinstance(principal, OAuthRefused):
            raise _refuse(request, "invalid_token", principal.description)
        if principal is None:
            raise _refuse(request, "invalid_token", invalid_token_message(raw))
        return principal, principal.token

    def authenticate_header(self, request: Request) -> str:
        return bearer_challenge(
            realm="api", resource_path=API_RESOURCE_PATH, error=getattr(request, BEARER_ERROR_ATTRIBUTE, None)
        )


class ApiTokenAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the bearer token in the OpenAPI schema."""

    target_class = "accounts.authentication.ApiTokenAuthentication"
    name = "ApiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An org API token (rb_...), or an OAuth access token of a connected app (rbo_...) "
            "issued for this API's resource (<issuer>/api/v1)",
        }
