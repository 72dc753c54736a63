"""Bearer-token authentication for the REST API (the MCP endpoint reuses
``token_authenticate_throttled``): failed tokens are throttled by client address and token prefix
(``accounts/throttling.py``), answered 429 with ``Retry-After``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.request import Request

from accounts.access import Principal, principal_for_token
from accounts.throttling import Throttled as ThrottledAnswer
from accounts.throttling import client_address, token_authenticate_throttled


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


class ApiTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer rb_...``. Missing → DRF's 401 with ``WWW-Authenticate: Bearer``."""

    def authenticate(self, request: Request) -> tuple[Principal, Any] | None:
        header = get_authorization_header(request)
        if not header:
            return None
        raw = bearer_token_from_header(header)
        if raw is None:
            raise AuthenticationFailed("Malformed Authorization header; expected 'Bearer <token>'.")
        token = token_authenticate_throttled(raw, address=client_address(request.META.get("REMOTE_ADDR")))
        if isinstance(token, ThrottledAnswer):
            raise Throttled(wait=token.retry_after, detail=token.message)  # 429 with Retry-After
        if token is None:
            raise AuthenticationFailed("Invalid, expired or revoked API token.")
        return principal_for_token(token), token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class ApiTokenAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the bearer token in the OpenAPI schema."""

    target_class = "accounts.authentication.ApiTokenAuthentication"
    name = "ApiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An org API token: rb_..."}
