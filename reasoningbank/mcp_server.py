"""The MCP endpoint (DESIGN §8): the official SDK's ``MCPServer`` behind a bearer-token middleware.

* ``build_mcp_server()`` builds the ``MCPServer`` and runs every registered tool module on it
  (``register_tool_module``): later tools such as ``session_submit`` and ``memory_consolidate``
  live in their own modules and only need ``@register_tool_module`` plus an import before
  ``build_mcp_app()`` runs.
* ``build_mcp_app()`` returns the ASGI app for ``/mcp``: Host/Origin checks (the same hosts as
  Django's ``ALLOWED_HOSTS``) → ``BearerTokenMiddleware`` (``ApiToken`` lookup, 401 otherwise) →
  the SDK's ``AuthContextMiddleware`` → the SDK's Streamable HTTP app (stateless, JSON responses,
  both protocol eras). Its lifespan runs the SDK session manager, once per instance.
* Tools are thin: typed arguments → the same services as REST. The tenant comes only from the
  verified token (``tool_principal``); anticipated failures become ``ToolError`` (an ``isError``
  result with a clear message) through ``service_errors``.
"""

# No ``from __future__ import annotations``: the SDK reads tool signatures with eval_str, and the tool
# annotations refer to names local to ``register_memory_tools`` (limits from settings).

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Any, Literal, NotRequired
from urllib.parse import urlsplit

import anyio.to_thread
from django.conf import settings
from django.db import close_old_connections
from django.http import Http404
from django.http.request import split_domain_port, validate_host
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Receive, Scope, Send
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from accounts.access import Principal, principal_for_token
from accounts.authentication import bearer_token_from_header
from accounts.models import SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE, ApiToken
from accounts.throttling import Throttled, client_address, token_authenticate_throttled
from reasoningbank.errors import ServiceError
from reasoningbank.mcp_errors import JsonRpcIdMiddleware, arguments_error_text
from reasoningbank.middleware import DATABASE_UNAVAILABLE_BODY, RETRY_AFTER_SECONDS, database_unavailable

MCP_PATH = "/mcp"
SERVER_NAME = "reasoningbank"
SERVER_INSTRUCTIONS = (
    "ReasoningBank is your team's memory of strategies that worked and pitfalls to avoid. "
    "Before a task, call memory_search; after finishing, report memory_outcome for each memory you "
    "used and memory_feedback when one was (not) helpful; record new reusable lessons with memory_record."
)

# --- tool registration ---------------------------------------------------------------------------

ToolRegistrar = Callable[[MCPServer], None]
_REGISTRARS: list[ToolRegistrar] = []


def register_tool_module(fn: ToolRegistrar) -> ToolRegistrar:
    """Register ``fn(server)``, called on every ``MCPServer`` that ``build_mcp_server`` builds.

    Usable as a decorator in another module (e.g. ``consolidation/mcp_tools.py``); that module must be
    imported before the app is built (add it to ``TOOL_MODULES`` below).
    """
    if fn not in _REGISTRARS:
        _REGISTRARS.append(fn)
    return fn


# Modules imported by ``build_mcp_server`` so that their ``@register_tool_module`` functions run.
TOOL_MODULES: tuple[str, ...] = ("memories.mcp_tools", "consolidation.mcp_tools")


class ReasoningBankMCPServer(MCPServer):
    """The SDK's server, with argument validation failures worded for agents (one sentence per
    field, reasoningbank/mcp_errors.py) instead of pydantic's dump; every tool module benefits."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            # the cause stays a ValidationError: the SDK then logs the rejected field names only
            raise ToolError(arguments_error_text(name, cause.errors(include_url=False))) from cause


def build_mcp_server() -> MCPServer:
    """A fresh ``MCPServer`` with every registered tool module's tools."""
    import importlib

    for module in TOOL_MODULES:
        importlib.import_module(module)
    server: MCPServer = ReasoningBankMCPServer(SERVER_NAME, instructions=SERVER_INSTRUCTIONS, version=_version())
    for registrar in _REGISTRARS:
        registrar(server)
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reasoningbank")
    except PackageNotFoundError:
        return "0"


# --- helpers for tools -----------------------------------------------------------------------------


@contextmanager
def service_errors() -> Iterator[None]:
    """ORM work inside a tool: stale connections closed around it (Django's request signals never
    fire for the MCP app), anticipated failures turned into ``ToolError`` with their message."""
    close_old_connections()
    try:
        yield
    except ServiceError as exc:
        raise ToolError(exc.message) from exc
    except Http404:
        raise ToolError("not found") from None
    finally:
        close_old_connections()


def tool_principal(required_scope: str) -> Principal:
    """The caller, as ``BearerTokenMiddleware`` resolved it from the verified token for this request
    (token, org and restriction in one query); the tenant never comes from a tool argument. Call
    inside ``service_errors()``."""
    principal = _request_principal.get()
    if principal is None or get_access_token() is None:
        raise ToolError("not authenticated: send 'Authorization: Bearer <API token>'")
    if required_scope not in principal.scopes:
        raise ToolError(f"this token lacks the '{required_scope}' scope")
    return principal


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


# --- the memory tools (seed 000) -------------------------------------------------------------------


class SearchExplanation(TypedDict):
    similarity: float
    confidence: float
    recency_boost: float
    scope_weight: float
    consolidated_boost: float
    score: float
    matched_by: list[str]


class SearchMemory(TypedDict):
    id: str
    title: str
    description: str
    content: str
    outcome: str
    confidence: float
    usage_count: int
    relevance: float
    scope: str
    explain: NotRequired[SearchExplanation]


class SearchResponse(TypedDict):
    memories: list[SearchMemory]
    total_found: int
    tokens_used: int


class RecordResponse(TypedDict):
    id: str
    message: str
    initial_confidence: float
    duplicate_of: NotRequired[str]  # only when nothing was recorded: the identical memory already there


class FeedbackResponse(TypedDict):
    success: bool
    new_confidence: float
    message: str


class OutcomeResponse(TypedDict):
    recorded: bool
    new_confidence: float
    message: str


class MemoryDetail(TypedDict):
    id: str
    title: str
    description: str
    content: str
    outcome: str
    tags: list[str]
    kind: str
    scope: str
    project: str | None
    state: str
    archived_reason: str
    consolidated_into: str | None
    tier: str
    confidence: float
    usage_count: int
    last_used_at: str | None
    origin: str
    created_at: str


PROJECT_DESCRIPTION = (
    "Project slug. Needed only when this token reaches several projects; otherwise the one project it "
    "reaches is used (a token limited to one project, or an organization-wide token in an organization "
    "with a single project)."
)
SEARCH_PROJECT_DESCRIPTION = (
    "Project slug: search that project, its team's and the organization's memories. Left out: every "
    "project this token reaches."
)

MemoryId = Annotated[str, Field(description="ID of the memory")]


@register_tool_module
def register_memory_tools(server: MCPServer) -> None:
    """memory_search, memory_record, memory_feedback, memory_outcome (seed 000) and memory_get."""
    from memories import selectors, services

    default_limit = int(settings.SEARCH_DEFAULT_LIMIT)
    max_limit = int(settings.SEARCH_MAX_LIMIT)
    default_min_confidence = float(settings.SEARCH_MIN_CONFIDENCE)

    @server.tool(
        description="Search for relevant strategies and patterns",
        annotations=ToolAnnotations(title="Search memories", read_only_hint=True, open_world_hint=False),
    )
    def memory_search(
        query: Annotated[str, Field(description="Natural language query")],
        scope: Annotated[
            Literal["project", "team", "org", "all"], Field(description="Scope to search within")
        ] = "all",
        outcome: Annotated[Literal["success", "failure", "all"], Field(description="Filter by outcome type")] = "all",
        limit: Annotated[int, Field(description="Maximum results", ge=1, le=max_limit)] = default_limit,
        min_confidence: Annotated[
            float, Field(description="Minimum confidence threshold", ge=0.0, le=1.0)
        ] = default_min_confidence,
        project: Annotated[str, Field(description=SEARCH_PROJECT_DESCRIPTION)] = "",
        explain: Annotated[
            bool, Field(description="Include each result's score breakdown (similarity, confidence, boosts)")
        ] = False,
    ) -> SearchResponse:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_READ)
            search = services.search_query_validate(
                query=query, scope=scope, outcome=outcome, limit=limit, min_confidence=min_confidence,
                project=project or None,
            )
            result = services.memory_search_use(principal=principal, search=search)
            memories: list[SearchMemory] = []
            for hit in result.hits:
                memory = hit.memory
                item: SearchMemory = {
                    "id": memory.id,
                    "title": memory.title,
                    "description": memory.description,
                    "content": memory.content,
                    "outcome": memory.outcome,
                    "confidence": round(memory.confidence, 4),
                    "usage_count": memory.usage_count,
                    "relevance": round(hit.breakdown.score, 4),  # the ranking score (same as REST)
                    "scope": memory.scope,
                }
                if explain:
                    b = hit.breakdown
                    item["explain"] = {
                        "similarity": round(b.similarity, 4),
                        "confidence": round(b.confidence, 4),
                        "recency_boost": round(b.recency_boost, 4),
                        "scope_weight": b.scope_weight,
                        "consolidated_boost": b.consolidated_boost,
                        "score": round(b.score, 4),
                        "matched_by": list(hit.matched_by),
                    }
                memories.append(item)
            return {"memories": memories, "total_found": result.total_found, "tokens_used": result.tokens_used}

    @server.tool(
        description=(
            "Explicitly capture a strategy or pattern. Recording the same title, description and content "
            "(case and whitespace ignored) with the same outcome where an active memory already holds them "
            "records nothing: the answer carries that memory's id and duplicate_of."
        ),
        annotations=ToolAnnotations(
            title="Record a memory", read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    def memory_record(
        title: Annotated[str, Field(description="Short, descriptive title", max_length=services.TITLE_MAX)],
        description: Annotated[
            str, Field(description="When/why to apply this strategy", max_length=services.DESCRIPTION_MAX)
        ],
        content: Annotated[str, Field(description="Detailed steps or approach", max_length=services.CONTENT_MAX)],
        outcome: Annotated[
            Literal["success", "failure"], Field(description="Whether this is a pattern to follow or avoid")
        ],
        tags: Annotated[list[str], Field(description="Categorization tags", default_factory=list)],
        project: Annotated[str, Field(description=PROJECT_DESCRIPTION)] = "",
        scope: Annotated[
            Literal["project", "team", "org"],
            Field(description="Who may find it: the project, its team, or the whole organization"),
        ] = "project",
    ) -> RecordResponse:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_WRITE)
            result = services.memory_record_or_duplicate(
                principal=principal, title=title, description=description, content=content, outcome=outcome,
                tags=tags, project=project or None, scope=scope,
            )
            recorded: RecordResponse = {
                "id": result.memory.id,
                "message": result.message,
                "initial_confidence": round(result.memory.confidence, 4),
            }
            if result.duplicate:
                recorded["duplicate_of"] = result.memory.id
            return recorded

    @server.tool(
        description="Provide feedback on a retrieved memory",
        annotations=ToolAnnotations(
            title="Rate a memory", read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    def memory_feedback(
        memory_id: MemoryId,
        helpful: Annotated[bool, Field(description="Whether the memory was helpful")],
        comment: Annotated[
            str, Field(description="Optional feedback comment", max_length=services.COMMENT_MAX)
        ] = "",
    ) -> FeedbackResponse:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_WRITE)
            memory = selectors.memory_get(principal, memory_id)
            result = services.memory_feedback(principal=principal, memory=memory, helpful=helpful, comment=comment)
            return {"success": True, "new_confidence": round(result.new_confidence, 4), "message": "Feedback recorded"}

    @server.tool(
        description=(
            "Report whether a task succeeded after using a memory. Call this after completing a task that "
            "used a retrieved memory to help the system learn which memories are actually useful."
        ),
        annotations=ToolAnnotations(
            title="Report a task outcome", read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    def memory_outcome(
        memory_id: Annotated[str, Field(description="ID of the memory that was used")],
        succeeded: Annotated[bool, Field(description="Whether the task succeeded after using this memory")],
        session_id: Annotated[
            str, Field(description="Optional session ID for correlation", max_length=200)
        ] = "",
    ) -> OutcomeResponse:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_WRITE)
            memory = selectors.memory_get(principal, memory_id)
            result = services.memory_outcome(
                principal=principal, memory=memory, succeeded=succeeded, session_id=session_id
            )
            return {"recorded": True, "new_confidence": round(result.new_confidence, 4), "message": "Outcome recorded"}

    @server.tool(
        description=(
            "Fetch one memory by ID with all its fields: content, tags, kind, scope and project, lifecycle "
            "(state, archived reason, the memory it was consolidated into, tier), confidence, usage and origin. "
            "Works for archived memories too."
        ),
        annotations=ToolAnnotations(title="Get a memory", read_only_hint=True, open_world_hint=False),
    )
    def memory_get(memory_id: MemoryId) -> MemoryDetail:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_READ)
            memory = selectors.memory_get(principal, memory_id)
            return {
                "id": memory.id,
                "title": memory.title,
                "description": memory.description,
                "content": memory.content,
                "outcome": memory.outcome,
                "tags": list(memory.tags),
                "kind": memory.kind,
                "scope": memory.scope,
                "project": memory.project.slug if memory.project is not None else None,
                "state": memory.state,
                "archived_reason": memory.archived_reason,
                "consolidated_into": memory.consolidated_into_id,
                "tier": memory.tier,
                "confidence": round(memory.confidence, 4),
                "usage_count": memory.usage_count,
                "last_used_at": _iso(memory.last_used_at),
                "origin": memory.origin,
                "created_at": memory.created_at.isoformat(),
            }


# --- hosts and origins -----------------------------------------------------------------------------


def _host_is_wildcard(host: str) -> bool:
    return host == "*" or host.startswith(".")


def transport_security_settings() -> TransportSecuritySettings:
    """The SDK's DNS-rebinding protection for the hosts Django serves (``ALLOWED_HOSTS``).

    Exact hosts are allowed with and without a port; their ``http(s)://`` origins and
    ``CSRF_TRUSTED_ORIGINS`` are the allowed browser origins. The SDK matches exact values only, so
    when ``ALLOWED_HOSTS`` holds Django wildcards (``*``, ``.example.com``) or a trusted origin holds
    ``*``, the SDK's check is switched off and ``HostOriginMiddleware`` (Django's own matching,
    always in front of the SDK) is what enforces them.
    """
    hosts = [h.strip().lower() for h in settings.ALLOWED_HOSTS if h.strip()]
    trusted = [o.strip().lower().rstrip("/") for o in settings.CSRF_TRUSTED_ORIGINS if o.strip()]
    if any(_host_is_wildcard(h) for h in hosts) or any("*" in o for o in trusted):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed_hosts: list[str] = []
    allowed_origins: list[str] = []
    for host in hosts:
        allowed_hosts += [host, f"{host}:*"]
        for scheme in ("http", "https"):
            allowed_origins += [f"{scheme}://{host}", f"{scheme}://{host}:*"]
    allowed_origins += trusted
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(allowed_hosts)),
        allowed_origins=list(dict.fromkeys(allowed_origins)),
    )


def _origin_trusted(origin: str, trusted: list[str]) -> bool:
    """Django's CSRF_TRUSTED_ORIGINS matching, including ``https://*.example.com``."""
    parts = urlsplit(origin)
    for entry in trusted:
        entry_parts = urlsplit(entry)
        if entry_parts.scheme != parts.scheme:
            continue
        if entry == origin:
            return True
        if entry_parts.netloc.startswith("*"):
            suffix = entry_parts.netloc[1:]
            if parts.netloc.endswith(suffix):
                return True
    return False


async def _send_plain(send: Send, status: int, text: str) -> None:
    await send(
        {"type": "http.response.start", "status": status,
         "headers": [(b"content-type", b"text/plain; charset=utf-8")]}
    )
    await send({"type": "http.response.body", "body": text.encode()})


class HostOriginMiddleware:
    """Rejects a Host outside ``ALLOWED_HOSTS`` (421) or a browser Origin that is neither one of those
    hosts nor in ``CSRF_TRUSTED_ORIGINS`` (403), before any token lookup. Same codes as the SDK."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.allowed_hosts = [h.strip().lower() for h in settings.ALLOWED_HOSTS if h.strip()]
        self.trusted = [o.strip().lower().rstrip("/") for o in settings.CSRF_TRUSTED_ORIGINS if o.strip()]

    def _host_ok(self, host: str) -> bool:
        domain, _port = split_domain_port(host.lower())
        return bool(domain) and validate_host(domain, self.allowed_hosts)

    def _origin_ok(self, origin: str) -> bool:
        origin = origin.lower()
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return self._host_ok(parts.netloc) or _origin_trusted(origin, self.trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", ())}
        host = headers.get(b"host", b"").decode("latin-1")
        if not self._host_ok(host):
            await _send_plain(send, 421, "Invalid Host header")
            return
        origin = headers.get(b"origin", b"").decode("latin-1")
        if origin and not self._origin_ok(origin):
            await _send_plain(send, 403, "Invalid Origin header")
            return
        await self.app(scope, receive, send)


# --- bearer-token authentication -------------------------------------------------------------------


# The principal of the request being served: set by BearerTokenMiddleware, copied (like the SDK's
# own auth context) into the worker thread that runs the tool.
_request_principal: ContextVar[Principal | None] = ContextVar("mcp_request_principal", default=None)


def _authenticate(raw: str, address: str) -> tuple[ApiToken, Principal] | Throttled | None:
    """The token and its principal; a ``Throttled`` answer once the address or the token prefix has
    failed too often (``accounts/throttling.py``, shared with REST); None for an invalid token."""
    close_old_connections()
    try:
        token = token_authenticate_throttled(raw, address=address)
        return token if token is None or isinstance(token, Throttled) else (token, principal_for_token(token))
    finally:
        close_old_connections()


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
    """Every request needs ``Authorization: Bearer <API token>`` (checked against ``ApiToken``).

    Missing or invalid → 401 ``WWW-Authenticate: Bearer realm="mcp", error="invalid_token"`` with a
    JSON body; too many failures from the client's address (or with one token prefix) → 429 with
    ``Retry-After`` (``accounts/throttling.py``, the same counters as REST). No OAuth metadata is
    advertised: these are static org API keys. An authenticated GET (the optional standalone SSE
    stream) is 405: this stateless JSON server never pushes anything.
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
            await self._unauthorized(send, "Missing bearer token: send 'Authorization: Bearer <API token>'.")
            return
        client = scope.get("client") or (None, None)
        try:
            authenticated = await anyio.to_thread.run_sync(_authenticate, raw, client_address(client[0]))
        except Exception as exc:  # a database that cannot be reached answers 503; anything else propagates
            if not database_unavailable(exc):
                raise
            # the same fast 503 as the Django side (reasoningbank/middleware.py), not a dropped request
            await _send_json(
                send, 503, DATABASE_UNAVAILABLE_BODY,
                [(b"retry-after", str(RETRY_AFTER_SECONDS).encode()), (b"cache-control", b"no-store")],
            )
            return
        if isinstance(authenticated, Throttled):
            await self._throttled(send, authenticated)
            return
        if authenticated is None:
            await self._unauthorized(send, "Invalid, expired or revoked API token.")
            return
        token, principal = authenticated
        if scope["method"] == "GET":
            # Stateless JSON server: nothing is ever pushed on a standalone SSE stream, and an open
            # GET would only hold a connection (and could not see other workers' events anyway).
            # The spec allows 405 here in every era; clients then just POST.
            await _send_json(
                send, 405,
                {"jsonrpc": "2.0", "id": None,
                 "error": {"code": -32600, "message": "Method Not Allowed: this server offers no SSE stream; POST"}},
                [(b"allow", b"POST")],
            )
            return
        access = access_token_for(token)
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
            send, 429,
            {"error": "too_many_requests",
             "error_description": f"{throttled.message} Retry after {throttled.retry_after} seconds."},
            [(b"retry-after", str(throttled.retry_after).encode()), (b"cache-control", b"no-store")],
        )

    @staticmethod
    async def _unauthorized(send: Send, description: str) -> None:
        await _send_json(
            send, 401, {"error": "invalid_token", "error_description": description},
            [(b"www-authenticate", b'Bearer realm="mcp", error="invalid_token"'), (b"cache-control", b"no-store")],
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


# --- the app ---------------------------------------------------------------------------------------


def build_mcp_app(server: MCPServer | None = None) -> ASGIApp:
    """The ASGI app serving ``/mcp``, with its lifespan (the SDK session manager, runs once).

    Build a fresh one per ASGI application instance (and per test).
    """
    server = server or build_mcp_server()
    starlette_app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        transport_security=transport_security_settings(),
    )
    # JsonRpcIdMiddleware after authentication: an anonymous body is never parsed
    return HostOriginMiddleware(BearerTokenMiddleware(AuthContextMiddleware(JsonRpcIdMiddleware(starlette_app))))
