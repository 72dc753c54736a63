"""Who and what the current request is, for log lines and metric labels (docs/observability.md).

One ``RequestContext`` per request, in a context variable: set by ``RequestContextMiddleware``
(Django: dashboard, REST, operator endpoints) or ``RequestContextASGI`` (the MCP app, which Django's
middleware never sees), then filled in by authentication (``request_principal_note``: the org's slug
and the token's display prefix, never the token).

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


def request_context_start(*, request_id: str, transport: str) -> Token[RequestContext | None]:
    return _current.set(RequestContext(request_id=request_id, transport=transport))


def request_context_end(token: Token[RequestContext | None]) -> None:
    _current.reset(token)


def request_principal_note(*, org: str, token_prefix: str = "") -> None:
    """Authentication knows who is calling: every later line of this request carries it."""
    context = _current.get()
    if context is not None:
        context.org = org
        context.token_prefix = token_prefix


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
        incoming = next(
            (v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == b"x-request-id"), None
        )
        token = request_context_start(request_id=request_id_accept(incoming), transport=self.transport)
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
