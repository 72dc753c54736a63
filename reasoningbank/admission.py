"""Backpressure: at most ``REQUEST_CONCURRENCY`` requests of one web process at work at once; the
others wait their turn, in arrival order, instead of failing (docs/concurrency.md).

Every request that touches the database holds one pooled connection at a time (a Django view on
its thread; an MCP call on its authentication thread, then on its tool's), and the pool has
``DB_POOL_MAX_SIZE`` of them, which also serve search's second leg and the usage writes behind
searches. Without a limit, fifty agents at once meant forty threads asking a pool of twenty for a
connection: those still waiting after ``DB_CONNECT_TIMEOUT`` failed with a 503 or a tool error.
Admitted here, a request finds a connection at once; a request waits here instead, for as long
as ``REQUEST_QUEUE_TIMEOUT``, and only then is answered 503 ``database_unavailable`` with
``Retry-After`` (the error shape under ``/api/``, ``/oauth/``, ``/.well-known/`` and ``/mcp``, in
each one's flavour; a line of text elsewhere). A database that is really gone still fails fast
inside the admitted request.

Health checks and metrics are never queued: a load balancer must see a busy service as alive.
"""

from __future__ import annotations

import json
import logging
import time

import anyio

from reasoningbank.http_errors import refusal_body
from reasoningbank.metrics import REQUEST_QUEUE_TIMEOUTS, REQUEST_QUEUE_WAIT
from reasoningbank.request_context import ASGIApp, Receive, Scope, Send

logger = logging.getLogger(__name__)

# never queued: answered from memory or a cheap probe, and needed most when the service is busy
UNQUEUED_PREFIXES = ("/healthz", "/readyz", "/metrics", "/static/")

BUSY_DETAIL = (
    "The service is busy: every database connection has been in use for {wait:g} seconds. "
    "Nothing was done; retry in {retry} seconds."
)


class RequestAdmission:
    """ASGI middleware: ``limit`` requests at work at once, the rest queued for up to ``timeout``
    seconds (FIFO), then answered 503 ``database_unavailable`` with ``Retry-After: retry_after``."""

    def __init__(self, app: ASGIApp, *, limit: int, timeout: float, retry_after: int) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.app = app
        self.limit = limit
        self.timeout = timeout
        self.retry_after = retry_after
        self._slots: anyio.Semaphore | None = None  # made on the server's event loop, at first use

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("path", "")).startswith(UNQUEUED_PREFIXES):
            await self.app(scope, receive, send)
            return
        if self._slots is None:
            self._slots = anyio.Semaphore(self.limit)
        slots = self._slots
        waited = time.perf_counter()
        with anyio.move_on_after(self.timeout) as queue:
            await slots.acquire()
        REQUEST_QUEUE_WAIT.observe(time.perf_counter() - waited)
        if queue.cancelled_caught:
            REQUEST_QUEUE_TIMEOUTS.inc()
            logger.warning(
                "busy: %s %s waited %gs for one of %d request slots; answered 503",
                scope.get("method"), scope.get("path"), self.timeout, self.limit,
            )  # fmt: skip
            await self._busy(scope, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            slots.release()

    async def _busy(self, scope: Scope, send: Send) -> None:
        """503 with ``Retry-After``: ``database_unavailable`` in the error shape for the machine paths,
        whose clients read JSON (``http_errors.refusal_body``); a line of text for a browser."""
        detail = BUSY_DETAIL.format(wait=self.timeout, retry=self.retry_after)
        path = str(scope.get("path", ""))
        shaped = refusal_body(path, detail, "database_unavailable", oauth_error="temporarily_unavailable")
        if shaped is not None:  # the machine paths: the error shape in their flavour
            body = json.dumps(shaped).encode()
            content_type = b"application/json"
        else:
            body = f"Service busy. {detail}\n".encode()
            content_type = b"text/plain; charset=utf-8"
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(self.retry_after).encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
