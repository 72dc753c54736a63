"""Bearer-token authentication for the MCP endpoint, beside the REST one (docs/tenancy.md#the-principal).

``BearerTokenMiddleware`` resolves ``Authorization: Bearer <token>`` — an org API token or an OAuth
access token issued for this endpoint (``<issuer>/mcp``, docs/oauth.md#tokens) — to its ``Principal``
(the same lookup and failure throttling as REST, ``accounts/throttling.py``) and hands it to the tools
through a context variable; ``tool_principal`` is how a tool reads it. The tenant never comes from a tool
argument.

``McpClientMemoryMiddleware`` / ``mcp_client_recall``: which MCP client a credential's calls come from, in
the 2025-11-25 era (docs/security/memory-poisoning.md#provenance).
"""

import hashlib
import json
import logging
from contextvars import ContextVar
from typing import Any

import anyio.to_thread
from django.core.cache import caches
from django.db import close_old_connections
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver.exceptions import ToolError
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Receive, Scope, Send

from accounts.access import Principal
from accounts.models import SCOPE_MEMORIES_WRITE, ApiToken
from accounts.oauth.protocol import MCP_RESOURCE_PATH, bearer_challenge, mcp_resource
from accounts.throttling import Throttled, scope_client_address
from accounts.tokens.authentication import (
    BearerRefusal,
    bearer_authenticate,
    bearer_header_refusal,
    bearer_token_from_header,
)
from accounts.write_limits.services import write_admit
from reasoningbank.http_errors import JSONRPC_INVALID_REQUEST, jsonrpc_error_body, oauth_error_body
from reasoningbank.middleware import DATABASE_UNAVAILABLE_BODY, RETRY_AFTER_SECONDS, database_unavailable
from reasoningbank.request_context import ClientFacts, request_client

logger = logging.getLogger(__name__)

# The principal of the request being served: set by BearerTokenMiddleware, copied (like the SDK's
# own auth context) into the worker thread that runs the tool.
_request_principal: ContextVar[Principal | None] = ContextVar("mcp_request_principal", default=None)


def _authenticate(raw: str, address: str) -> Any:
    """The token's principal; a ``Throttled`` answer once the address or the token prefix has failed
    too often (``accounts/throttling.py``, shared with REST); else a ``BearerRefusal`` saying why
    (unknown, revoked, expired, an OAuth token for another resource)."""
    close_old_connections()
    try:
        return bearer_authenticate(raw, address=address, resource=mcp_resource())
    finally:
        close_old_connections()


def access_token_for_principal(principal: Principal, raw: str) -> AccessToken:
    """What tools see through ``get_access_token()`` for either kind of token; never the raw value."""
    if principal.token is not None:
        return access_token_for(principal.token)
    connection = principal.oauth_connection
    return AccessToken(
        token=raw[:10],
        client_id=connection.application.client_id,
        scopes=sorted(principal.scopes),
        expires_at=None,
        subject=f"org:{principal.organization.pk}",
        resource=mcp_resource(),
        claims={
            "organization_id": principal.organization.pk,
            "organization": principal.organization.slug,
            "token_prefix": raw[:10],
            "label": connection.application.name or connection.application.client_id,
            "oauth_connection_id": connection.pk,
        },
    )


def access_token_for(token: ApiToken) -> AccessToken:
    """What tools see through ``get_access_token()``: the token's id and display prefix, never the
    raw value."""
    return AccessToken(
        token=token.prefix,
        client_id=str(token.id),
        scopes=list(token.scopes),
        expires_at=int(token.expires_at.timestamp()) if token.expires_at else None,
        subject=f"org:{token.organization_id}",
        claims={
            "organization_id": token.organization_id,
            "organization": token.organization.slug,
            "token_prefix": token.prefix,
            "label": token.label,
        },
    )


class BearerTokenMiddleware:
    """Every request needs ``Authorization: Bearer <token>``: an org API token, or an OAuth access
    token bound to this endpoint's resource (``<issuer>/mcp``).

    Missing → 401 with ``WWW-Authenticate: Bearer realm="mcp", resource_metadata="<issuer>/.well-known/
    oauth-protected-resource/mcp", scope="..."`` (MCP 2026-07-28 "Authorization": where an OAuth client
    discovers the authorization server); a malformed ``Bearer`` header → the same with
    ``error="invalid_request"``; invalid, expired, revoked or minted for another resource →
    ``error="invalid_token"``; with an error, the reason as ``error_description``, and always in the
    JSON body (docs/agent-api.md#authentication-errors). A failed token once the
    client's address (or the token's prefix) has failed too often → 429 with ``Retry-After``
    (``accounts/throttling.py``, the same counters as REST); a valid token is served all the same.
    An authenticated GET (the optional standalone SSE stream) is 405: this stateless JSON server
    never pushes anything.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"), None)
        raw = bearer_token_from_header(header)
        if raw is None:
            await self._unauthorized(send, bearer_header_refusal(header))
            return
        try:
            authenticated = await anyio.to_thread.run_sync(_authenticate, raw, scope_client_address(scope))
        except Exception as exc:  # a database that cannot be reached answers 503; anything else propagates
            if not database_unavailable(exc):
                raise
            # the same fast 503 as the Django side (reasoningbank/middleware.py), not a dropped request
            await _send_json(
                send,
                503,
                DATABASE_UNAVAILABLE_BODY,
                [(b"retry-after", str(RETRY_AFTER_SECONDS).encode()), (b"cache-control", b"no-store")],
            )
            return
        if isinstance(authenticated, Throttled):
            await self._throttled(send, authenticated)
            return
        if isinstance(authenticated, BearerRefusal):
            await self._unauthorized(send, authenticated)
            return
        principal = authenticated
        if scope["method"] == "GET":
            # Stateless JSON server: nothing is ever pushed on a standalone SSE stream, and an open
            # GET would only hold a connection (and could not see other workers' events anyway).
            # The spec allows 405 here in every era; clients then just POST.
            await _send_json(
                send,
                405,
                jsonrpc_error_body(
                    JSONRPC_INVALID_REQUEST,
                    "Method Not Allowed: this server offers no SSE stream; POST",
                    "method_not_allowed",
                ),
                [(b"allow", b"POST")],
            )
            return
        access = access_token_for_principal(principal, raw)
        scope = dict(scope)
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(access.scopes)
        reset = _request_principal.set(principal)
        try:
            await self.app(scope, receive, send)
        finally:
            _request_principal.reset(reset)

    @staticmethod
    async def _throttled(send: Send, throttled: Throttled) -> None:
        await _send_json(
            send,
            429,
            oauth_error_body(
                "too_many_requests",
                f"{throttled.message} Retry after {throttled.retry_after} seconds.",
                code="throttled",
            ),
            [(b"retry-after", str(throttled.retry_after).encode()), (b"cache-control", b"no-store")],
        )

    @staticmethod
    async def _unauthorized(send: Send, refusal: BearerRefusal) -> None:
        # the reason twice: in the challenge for clients that read headers, in the body for the rest
        # (docs/agent-api.md#authentication-errors shows how an SDK user gets at it)
        challenge = bearer_challenge(
            realm="mcp", resource_path=MCP_RESOURCE_PATH, error=refusal.error, description=refusal.description
        )
        await _send_json(
            send,
            401,
            oauth_error_body(
                refusal.error or "invalid_token",
                refusal.description,
                code="authentication_failed" if refusal.error else "not_authenticated",
            ),
            [(b"www-authenticate", challenge.encode()), (b"cache-control", b"no-store")],
        )


async def _send_json(send: Send, status: int, payload: Any, headers: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def tool_principal(required_scope: str) -> Principal:
    """The caller, as ``BearerTokenMiddleware`` resolved it from the verified token for this request
    (token, org and restriction in one query); the tenant never comes from a tool argument. Call
    inside ``reasoningbank.mcp_registry.service_errors()``."""
    principal = _request_principal.get()
    if principal is None or get_access_token() is None:
        raise ToolError("not authenticated: send 'Authorization: Bearer <API token>'")
    if required_scope not in principal.scopes:
        raise ToolError(f"this token lacks the '{required_scope}' scope")
    if required_scope == SCOPE_MEMORIES_WRITE:
        # a write tool's call is charged to the write limits before it does anything (a suspended token's
        # writes end here): docs/security/memory-poisoning.md#write-limits
        write_admit(principal)
    return principal


# --- which MCP client a credential's calls come from -----------------------------------------------------
#
# A 2026-07-28 request names its client in its own ``_meta`` envelope. A 2025-11-25 client names itself once,
# in ``initialize``; this endpoint is stateless (any web worker serves any request, none keeps a session), so
# the tool calls after it arrive without a name. The name is kept in the shared cache for the credential
# (API token or OAuth connection) and the User-Agent it came with, and the calls after it are attributed to
# that client. Two clients sharing one token and one User-Agent are told apart by their last initialize only.

MCP_CLIENT_REMEMBER_SECONDS = 7 * 24 * 3600  # a long agent session initializes once


def _client_key(principal: Principal, user_agent: str) -> str | None:
    if principal.token is not None:
        credential = f"t{principal.token.pk}"
    elif principal.oauth_connection is not None:
        credential = f"o{principal.oauth_connection.pk}"
    else:
        return None
    agent = hashlib.sha256(user_agent.encode("utf-8")).hexdigest()[:16]
    return f"mcp-client:{principal.organization.pk}:{credential}:{agent}"


def _client_remember(principal: Principal, client: ClientFacts) -> None:
    key = _client_key(principal, client.user_agent)
    if key is None:
        return
    close_old_connections()
    try:
        caches["shared"].set(key, {"name": client.name, "version": client.version}, MCP_CLIENT_REMEMBER_SECONDS)
    except Exception as exc:  # the handshake is served all the same: the calls after it go unnamed
        logger.warning("the MCP client of %s could not be remembered: %s", principal.actor_label, exc)
    finally:
        close_old_connections()


def mcp_client_recall(principal: Principal, user_agent: str) -> tuple[str, str] | None:
    """The (name, version) the last ``initialize`` of this credential with this User-Agent gave, if any."""
    key = _client_key(principal, user_agent)
    remembered = caches["shared"].get(key) if key is not None else None
    if not isinstance(remembered, dict) or not remembered.get("name"):
        return None
    return str(remembered["name"]), str(remembered.get("version") or "")


class McpClientMemoryMiddleware:
    """Inside ``BearerTokenMiddleware`` and the JSON-RPC reader (which notes the ``clientInfo``): an
    ``initialize`` that named its client is remembered for the credential before it is answered, so the
    client's next call finds it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            client = request_client()
            principal = _request_principal.get()
            if client.from_initialize and client.name and principal is not None:
                await anyio.to_thread.run_sync(_client_remember, principal, client)
        await self.app(scope, receive, send)
