"""Bearer-token authentication for the REST API (the MCP endpoint reuses ``bearer_authenticate``): an
org API token (``rb_...``) or an OAuth access token of a connected app (``rbo_...``,
docs/oauth.md#tokens) resolve to the same ``Principal``. Failed tokens are throttled by client address
and token prefix (``accounts/throttling.py``), answered 429 with ``Retry-After``; a valid token is
always served."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, Throttled
from rest_framework.request import Request

from accounts.access import Principal, principal_for_token
from accounts.oauth.protocol import ACCESS_TOKEN_PREFIX, API_RESOURCE_PATH, api_resource, bearer_challenge
from accounts.throttling import Throttled as ThrottledAnswer
from accounts.throttling import bearer_failure, request_client_address
from reasoningbank.http_errors import MISSING_BEARER_TOKEN
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


# the same sentences on MCP and REST (docs/agent-api.md#authentication-errors)
MALFORMED_HEADER_MESSAGE = "Malformed Authorization header; expected 'Bearer <token>'."
UNKNOWN_TOKEN_MESSAGE = (
    "Unknown or revoked API token: check that the whole token was sent, or create a new token on the "
    "dashboard's API tokens page."
)
UNKNOWN_OAUTH_TOKEN_MESSAGE = "Invalid, expired or revoked OAuth access token: refresh it, or sign in again."


@dataclass(frozen=True)
class BearerRefusal:
    """Why a request's bearer credentials open nothing: the RFC 6750 ``error`` code (None when no
    bearer token was even attempted, which RFC 6750 section 3.1 answers without one) and the reason in words,
    for the challenge's ``error_description`` and the body's ``detail``."""

    error: str | None
    description: str


def bearer_header_refusal(header: bytes | str | None) -> BearerRefusal:
    """The refusal for an ``Authorization`` header that ``bearer_token_from_header`` found no token in."""
    if isinstance(header, bytes):
        header = header.decode("latin-1")
    parts = (header or "").split()
    if not parts:
        return BearerRefusal(None, MISSING_BEARER_TOKEN)
    if parts[0].lower() != "bearer":
        scheme = "".join(ch for ch in parts[0][:20] if ch.isascii() and (ch.isalnum() or ch in "-._~+/"))
        return BearerRefusal(
            None, f"Unsupported authorization scheme '{scheme}': send 'Authorization: Bearer <token>'."
        )
    return BearerRefusal("invalid_request", MALFORMED_HEADER_MESSAGE)


def invalid_token_message(raw: str) -> str:
    """The 401's description for a token that opens nothing: an OAuth client is told to refresh or sign
    in again (its token may simply have been revoked, or cleared after expiring), never about API
    tokens it has never seen; an expired API token says since when, since its fix (a new token,
    perhaps with a longer life) differs from a typo's. Unknown and revoked API tokens are not told
    apart: both mean the value opens nothing any more."""
    from accounts.tokens.selectors import token_by_digest
    from accounts.tokens.services import TOKEN_PREFIX, token_digest

    if raw.startswith(ACCESS_TOKEN_PREFIX):
        return UNKNOWN_OAUTH_TOKEN_MESSAGE
    token = token_by_digest(token_digest(raw)) if raw.startswith(TOKEN_PREFIX) and len(raw) <= 200 else None
    if token is not None and token.revoked_at is None and token.expires_at is not None:
        if not token.is_active():
            expired = token.expires_at.astimezone(UTC)
            return (
                f"This API token expired on {expired:%Y-%m-%d at %H:%M} UTC: create a new token on the "
                "dashboard's API tokens page."
            )
    return UNKNOWN_TOKEN_MESSAGE


def token_authenticate_throttled(raw: str, *, address: str) -> Any:
    """``token_authenticate`` behind the limits: the active ``ApiToken`` (whatever the address has
    failed before), a ``Throttled`` answer, or None (an invalid token, not yet over any limit)."""
    from accounts.tokens.services import token_authenticate

    token = token_authenticate(raw)
    if token is not None:
        return token
    return bearer_failure(address, raw)


def bearer_authenticate(raw: str, *, address: str, resource: str) -> Principal | ThrottledAnswer | BearerRefusal:
    """A bearer token → its ``Principal``, whatever other tokens from the same address did; a token
    that opens nothing → a ``Throttled`` answer once the address (or the token's prefix) has failed
    too often, else a ``BearerRefusal`` with the reason (an unknown, revoked or expired token; an
    OAuth token minted for another resource). API tokens are not bound to a resource."""
    from accounts.oauth.services import oauth_authenticate

    if raw.startswith(ACCESS_TOKEN_PREFIX):
        result = oauth_authenticate(raw, resource=resource)
        if isinstance(result, Principal):
            # the same display prefix the MCP tools see for an OAuth token (accounts/mcp_auth.py)
            request_principal_note(org=result.organization.slug, token_prefix=raw[:10])
            return result
        throttled = bearer_failure(address, raw)
        if throttled is not None:
            return throttled
        return BearerRefusal("invalid_token", result.description if result else invalid_token_message(raw))
    token = token_authenticate_throttled(raw, address=address)
    if isinstance(token, ThrottledAnswer):
        return token
    if token is None:
        return BearerRefusal("invalid_token", invalid_token_message(raw))
    principal = principal_for_token(token)
    # every later log line of this request names the org and the token's display prefix, never the token
    request_principal_note(org=principal.organization.slug, token_prefix=token.prefix)
    return principal


# what the 401's challenge says went wrong (RFC 6750 section 3.1), noted on the request by ``authenticate``
BEARER_REFUSAL_ATTRIBUTE = "rb_bearer_refusal"


def _refuse(request: Request, refusal: BearerRefusal) -> AuthenticationFailed | NotAuthenticated:
    setattr(request, BEARER_REFUSAL_ATTRIBUTE, refusal)
    if refusal.error is None:  # no bearer token was attempted: DRF's "not_authenticated", as on MCP
        return NotAuthenticated(refusal.description)
    return AuthenticationFailed(refusal.description)


class ApiTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer rb_...`` (an API token) or ``Bearer rbo_...`` (an OAuth access token
    issued for the REST API, ``<issuer>/api/v1``). Missing → DRF's 401 with ``WWW-Authenticate``.

    The challenge follows RFC 6750 section 3.1: a token that was sent but is unknown, expired, revoked or
    minted for another resource → ``error="invalid_token"`` (a client then refreshes or signs in
    again); a malformed ``Bearer`` header → ``error="invalid_request"``; no token at all, or another
    scheme → no error code. The reason is the challenge's ``error_description`` and the body's
    ``detail``, worded as on MCP (docs/agent-api.md#authentication-errors)."""

    def authenticate(self, request: Request) -> tuple[Principal, Any] | None:
        header = get_authorization_header(request)
        if not header:
            return None
        raw = bearer_token_from_header(header)
        if raw is None:
            raise _refuse(request, bearer_header_refusal(header))
        address = request_client_address(request)
        principal = bearer_authenticate(raw, address=address, resource=api_resource())
        if isinstance(principal, ThrottledAnswer):
            raise Throttled(wait=principal.retry_after, detail=principal.message)  # 429 with Retry-After
        if isinstance(principal, BearerRefusal):
            raise _refuse(request, principal)
        return principal, principal.token

    def authenticate_header(self, request: Request) -> str:
        refusal = getattr(request, BEARER_REFUSAL_ATTRIBUTE, None)
        return bearer_challenge(
            realm="api",
            resource_path=API_RESOURCE_PATH,
            error=refusal.error if refusal else None,
            description=refusal.description if refusal else "",
        )


class ApiTokenAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the bearer token in the OpenAPI schema."""

    target_class = "accounts.tokens.authentication.ApiTokenAuthentication"
    name = "ApiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An org API token (rb_...), or an OAuth access token of a connected app (rbo_...) "
            "issued for this API's resource (<issuer>/api/v1)",
        }
