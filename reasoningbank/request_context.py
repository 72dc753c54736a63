"""Who and what the current request is, for log lines and metric labels (docs/observability.md).

One ``RequestContext`` per request, in a context variable: set by ``RequestContextMiddleware``
(Django: dashboard, REST, operator endpoints) or ``RequestContextASGI`` (the MCP app, which Django's
middleware never sees), then filled in by authentication (``request_principal_note``: the org's slug
and the token's display prefix, never the token).

It also says which client is calling, for the provenance of what the request writes
(docs/security/memory-poisoning.md#provenance): the HTTP ``User-Agent`` (kept at the start of every
request) and, on the MCP endpoint, the ``clientInfo`` the client sent (``mcp_client_info``: in the
``initialize`` request of the 2025-11-25 era, in every request's ``_meta`` envelope in the 2026-07-28
era). ``request_client`` hands both to the services, cleaned, so no transport has to pass them along.

Why a context variable holding a mutable object: the app is ASGI, so requests interleave on one
event loop and Django runs sync code on worker threads. A context variable is per request in both
worlds (asgiref and anyio copy the context into the thread that runs sync code), and because the
*object* is shared rather than re-set, the org noted by authentication deep inside a worker thread is
seen by the access log line written back on the event loop.

No Django here: uvicorn's log configuration imports the log formatter, which reads this module,
before Django is set up.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from reasoningbank.scrubbing import scrub_secrets
from reasoningbank.text_safety import text_neutralise

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

REQUEST_ID_HEADER = "X-Request-ID"
# an incoming id is kept when it is short and plain (a proxy's or a client's correlation id); anything
# else (too long, spaces, quotes, control characters: log injection) is replaced by our own
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}")
# operator probes and scrapes arrive every few seconds: their access lines are DEBUG, not INFO
PROBE_PATHS = frozenset({"/healthz", "/readyz", "/readyz/worker", "/metrics"})

access_logger = logging.getLogger("reasoningbank.access")


@dataclass
class RequestContext:
    request_id: str
    transport: str  # "rest", "mcp" or "dashboard" (every other Django page, the operator endpoints)
    org: str = ""  # the organization's slug, once authentication knows it
    token_prefix: str = ""  # the API token's display prefix (``rb_…``), never the token
    started: float = field(default_factory=time.perf_counter)
    # it wrote to the database: its later reads stay on the primary (reasoningbank/db_replica.py)
    wrote: bool = False
    # its principal was found not to have written lately: asked once per request, not per read
    no_recent_write: bool = False
    # the calling client (docs/security/memory-poisoning.md#provenance): the HTTP User-Agent as sent (cut to
    # USER_AGENT_KEPT characters; cleaned when read), and the MCP clientInfo; ``client_initialize``: it came
    # in an ``initialize`` request, which the MCP endpoint remembers for the calls after it
    user_agent: str = ""
    client_name: str = ""
    client_version: str = ""
    client_initialize: bool = False
    # the connection's client address as the ASGI guard left it (the peer, or the forwarded client behind one
    # of TRUSTED_PROXIES: reasoningbank/asgi_guards.py), for the audit log (docs/identity.md#the-audit-log)
    client_ip: str = ""


_current: ContextVar[RequestContext | None] = ContextVar("rb_request_context", default=None)


def request_context_get() -> RequestContext | None:
    return _current.get()


def request_transport() -> str:
    """The current request's transport, ``internal`` outside a request (tasks, commands, benchmarks)."""
    context = _current.get()
    return context.transport if context is not None else "internal"


def request_id_accept(incoming: str | None) -> str:
    """The incoming ``X-Request-ID`` when it is sane, else a fresh one (32 hex digits)."""
    if incoming and _SANE_REQUEST_ID.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


def request_context_start(
    *, request_id: str, transport: str, user_agent: str = "", client_ip: str = ""
) -> Token[RequestContext | None]:
    return _current.set(
        RequestContext(
            request_id=request_id,
            transport=transport,
            user_agent=user_agent[:USER_AGENT_KEPT],
            client_ip=client_ip[:CLIENT_IP_KEPT],
        )
    )


def request_context_end(token: Token[RequestContext | None]) -> None:
    _current.reset(token)


def request_principal_note(*, org: str, token_prefix: str = "") -> None:
    """Authentication knows who is calling: every later line of this request carries it."""
    context = _current.get()
    if context is not None:
        context.org = org
        context.token_prefix = token_prefix


# --- the calling client ------------------------------------------------------------------------------------

USER_AGENT_KEPT = 512  # of the header as sent; the provenance keeps less, cleaned
CLIENT_IP_KEPT = 64  # an IPv6 address with a zone is at most 45 characters: anything longer is not one
CLIENT_FIELD_MAX = 100
# where a 2026-07-28 request carries its client's identity (mcp_types.CLIENT_INFO_META_KEY)
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"


@dataclass(frozen=True)
class ClientFacts:
    """Which client is calling: the transport, the MCP ``clientInfo`` (name, version) and the User-Agent,
    each one line of safe text (control and bidi characters dropped, secrets redacted, cut short)."""

    transport: str
    name: str = ""
    version: str = ""
    user_agent: str = ""
    from_initialize: bool = False
    ip: str = ""  # the client's address as the connection gave it ("" outside a request)

    @property
    def label(self) -> str:
        """One line naming the client for the audit log: the MCP ``clientInfo`` (name and version) when it
        named itself, else the User-Agent; "" when neither was sent."""
        if self.name:
            return f"{self.name} {self.version}".strip()
        return self.user_agent


def _clean(value: str, maximum: int) -> str:
    text = " ".join(text_neutralise(value.replace("\x00", "")).split())
    return scrub_secrets(text[: maximum * 2]).text[:maximum].strip() if text else ""


def request_client() -> ClientFacts:
    """The current request's client; ``internal`` (and nothing else) outside a request."""
    context = _current.get()
    if context is None:
        return ClientFacts(transport="internal")
    return ClientFacts(
        transport=context.transport,
        name=_clean(context.client_name, CLIENT_FIELD_MAX),
        version=_clean(context.client_version, 40),
        user_agent=_clean(context.user_agent, 200),
        from_initialize=context.client_initialize,
        ip=context.client_ip,
    )


def request_client_note(name: str, version: str, *, initialize: bool = False) -> None:
    """The MCP client named itself (``clientInfo``) in this request."""
    context = _current.get()
    if context is not None:
        context.client_name = name[:CLIENT_FIELD_MAX * 2]
        context.client_version = version[:CLIENT_FIELD_MAX]
        context.client_initialize = initialize


def mcp_client_info(message: Any) -> tuple[str, str, bool] | None:
    """The ``clientInfo`` a JSON-RPC message carries — (name, version, from ``initialize``) — or None: the
    ``initialize`` request's ``params.clientInfo`` (2025-11-25), or any request's
    ``params._meta["io.modelcontextprotocol/clientInfo"]`` (2026-07-28). A value of the wrong shape is
    none at all."""
    if not isinstance(message, dict):
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    initialize = message.get("method") == "initialize"
    info = params.get("clientInfo") if initialize else None
    if info is None:
        meta = params.get("_meta")
        info = meta.get(CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("name"), str) or not info["name"].strip():
        return None
    version = info.get("version")
    return info["name"], version if isinstance(version, str) else "", initialize


def transport_for_path(path: str) -> str:
    if path.startswith("/api/"):
        return "rest"
    if path == "/mcp" or path.startswith("/mcp/"):
        return "mcp"
    return "dashboard"


def access_log(context: RequestContext, *, method: str, path: str, status: int) -> None:
    """One line per request (uvicorn's own access log is off in run.sh: it knows no request id,
    org or token). The path only, never the query string (a dashboard search holds the user's text)."""
    level = logging.DEBUG if path in PROBE_PATHS else logging.INFO
    if not access_logger.isEnabledFor(level):
        return
    duration_ms = round((time.perf_counter() - context.started) * 1000, 2)
    access_logger.log(
        level,
        "%s %s %s %.1fms",
        method,
        path,
        status,
        duration_ms,
        extra={
            "method": method,
            "path": path,
            "status": status,
            "duration_ms": duration_ms,
            "transport": context.transport,
        },
    )


# --- the MCP side (plain ASGI) --------------------------------------------------------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class RequestContextASGI:
    """What ``RequestContextMiddleware`` does for Django, for an ASGI app (the MCP endpoint): a request
    id (the incoming ``X-Request-ID`` when sane), echoed in the response header; an access line."""

    def __init__(self, app: ASGIApp, *, transport: str = "mcp") -> None:
        self.app = app
        self.transport = transport

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers", ())
        incoming = next((v.decode("latin-1") for k, v in headers if k.lower() == b"x-request-id"), None)
        user_agent = next((v.decode("latin-1") for k, v in headers if k.lower() == b"user-agent"), "")
        client = scope.get("client") or ("", 0)
        token = request_context_start(
            request_id=request_id_accept(incoming),
            transport=self.transport,
            user_agent=user_agent,
            client_ip=str(client[0] or ""),
        )
        context = _current.get()
        assert context is not None
        status = 500  # what the client sees if the app fails before it starts a response

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"x-request-id"]
                headers.append((b"x-request-id", context.request_id.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            access_log(context, method=scope.get("method", ""), path=scope.get("path", ""), status=status)
            request_context_end(token)
