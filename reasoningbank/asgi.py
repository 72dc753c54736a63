"""The ASGI application: one callable for the whole service
(docs/architecture.md#an-mcp-call-step-by-step).

* every HTTP request waits for a slot before its work (``reasoningbank.admission``: backpressure),
* ``lifespan`` → the MCP app (its lifespan runs the SDK's session manager; Django has none),
* ``/mcp`` and ``/mcp/`` → the MCP app (Host/Origin checks, bearer token, SDK Streamable HTTP),
* everything else → Django;

all of it behind ``TrustedProxyASGI`` (the client's address, from ``X-Forwarded-For`` only behind
``TRUSTED_PROXIES``) and ``BodyLimitASGI`` (413 before an over-size body is read; a chunked body
read and handed on with its length), ``reasoningbank/asgi_guards.py``; and outermost
``JsonErrorsASGI`` (every error under ``/api/``, ``/oauth/``, ``/.well-known/`` and ``/mcp`` is JSON in
the one error shape, whoever answered it), ``reasoningbank/asgi_errors.py``.

``build_application()`` returns a fresh one (a session manager runs once per instance, so tests
build one each); ``application`` is the instance uvicorn serves (``reasoningbank.asgi:application``).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

import anyio
from django.core.asgi import get_asgi_application

from reasoningbank.env import settings_load_or_exit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank.settings")
settings_load_or_exit()  # a refused setting: one line naming the valid values, not uvicorn's traceback
_django_app = get_asgi_application()  # sets Django up before the MCP server imports models

from reasoningbank.admission import RequestAdmission  # noqa: E402
from reasoningbank.asgi_errors import JsonErrorsASGI  # noqa: E402
from reasoningbank.asgi_guards import BodyLimitASGI, TrustedProxyASGI  # noqa: E402
from reasoningbank.mcp_server import MCP_PATH, build_mcp_app  # noqa: E402
from reasoningbank.middleware import RETRY_AFTER_SECONDS  # noqa: E402
from reasoningbank.tracing import asgi_wrap, flush  # noqa: E402

if TYPE_CHECKING:
    from mcp.server import MCPServer

MCP_PATHS = (MCP_PATH, MCP_PATH + "/")


class ReasoningBankASGI:
    """Routes lifespan and ``/mcp`` to the MCP app and everything else to Django."""

    def __init__(self, django_app: Any, mcp_app: Any) -> None:
        self.django_app = django_app
        self.mcp_app = mcp_app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self.mcp_app(scope, _after_start_gate(receive), _flushing_traces_at_shutdown(send))
            return
        if kind == "http":
            path = _route_path(scope)
            if path in MCP_PATHS:
                if path != MCP_PATH:  # "/mcp/" is served as "/mcp" (no redirect for a POST)
                    root = scope.get("root_path", "")
                    scope = {**scope, "path": root + MCP_PATH, "raw_path": (root + MCP_PATH).encode()}
                await self.mcp_app(scope, receive, send)
                return
            await self.django_app(scope, receive, send)
            return
        if kind == "websocket":  # nothing here speaks WebSocket; Django's handler would raise
            await send({"type": "websocket.close", "code": 1000})
            return
        raise ValueError(f"unsupported ASGI scope type {kind!r}")


# scripts/run.sh starts web while ``prepare_service`` migrates (docs/operations.md#what-happens-at-start):
# the seconds of web's imports overlap it, and the startup waits for this file before uvicorn listens
START_GATE_ENV = "RB_START_GATE"


def _after_start_gate(receive: Any) -> Any:
    """``receive``, whose lifespan startup is handed on only once the file named by ``RB_START_GATE``
    exists (when set): uvicorn opens its port after the startup, so nothing is served before the
    database is migrated."""
    gate = os.environ.get(START_GATE_ENV)
    if not gate:
        return receive

    async def receive_after_gate() -> Any:
        message = await receive()
        if message.get("type") == "lifespan.startup":
            while not os.path.exists(gate):
                await anyio.sleep(0.05)
        return message

    return receive_after_gate


def _flushing_traces_at_shutdown(send: Any) -> Any:
    """``send``, exporting the queued spans before the lifespan's shutdown completes: uvicorn then
    re-raises SIGTERM with its default action, so the SDK's exit handler would never run."""

    async def send_after_flush(message: dict[str, Any]) -> None:
        if message.get("type") == "lifespan.shutdown.complete":
            await anyio.to_thread.run_sync(flush)
        await send(message)

    return send_after_flush


def _route_path(scope: MutableMapping[str, Any]) -> str:
    path: str = scope.get("path", "")
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root):] or "/"
    return path


def build_application(mcp_server: MCPServer | None = None) -> Any:
    """A fresh composed app with its own session manager (and its own MCP server unless one is given:
    building the tools' schemas is most of the cost), behind the request queue
    (``reasoningbank.admission``: a burst of agents waits its turn instead of failing)."""
    from django.conf import settings

    # /mcp behind the ASGI instrumentation when tracing is on (Django's own requests get theirs from
    # its middleware, reasoningbank.tracing): an incoming traceparent header is continued there too;
    # an over-size body is refused before it waits for a slot
    queued = RequestAdmission(
        ReasoningBankASGI(get_asgi_application(), asgi_wrap(build_mcp_app(mcp_server))),
        limit=settings.REQUEST_CONCURRENCY,
        timeout=settings.REQUEST_QUEUE_TIMEOUT,
        retry_after=RETRY_AFTER_SECONDS,
    )
    return JsonErrorsASGI(TrustedProxyASGI(BodyLimitASGI(queued)))


application = build_application()
