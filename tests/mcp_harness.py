"""Drive the composed ASGI app in-process: its lifespan, the real SDK client over HTTP, raw requests.

Shared by the MCP test modules (tools of every app).
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

BASE_URL = "http://testserver"
MCP_URL = f"{BASE_URL}/mcp"
MODES = ("legacy", "2026-07-28")  # the 2025-11-25 handshake era and the stateless 2026-07-28 era


@functools.cache
def mcp_server_shared() -> Any:
    """One MCP server for the process's tests: building the tools' schemas costs a quarter of a second,
    and a server holds no state between runs (each app built on it gets its own session manager)."""
    from reasoningbank.mcp_server import build_mcp_server

    return build_mcp_server()


@asynccontextmanager
async def running(app: Any) -> AsyncIterator[Any]:
    """Run ``app``'s ASGI lifespan (startup … shutdown) around the block, like uvicorn does."""
    to_app_send, to_app_receive = anyio.create_memory_object_stream[dict[str, Any]](10)
    from_app_send, from_app_receive = anyio.create_memory_object_stream[dict[str, Any]](10)
    scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
    async with anyio.create_task_group() as tg, to_app_send, from_app_receive:
        tg.start_soon(app, scope, to_app_receive.receive, from_app_send.send)
        await to_app_send.send({"type": "lifespan.startup"})
        message = await from_app_receive.receive()
        assert message["type"] == "lifespan.startup.complete", message
        try:
            yield app
        finally:
            await to_app_send.send({"type": "lifespan.shutdown"})
            with anyio.fail_after(10):
                message = await from_app_receive.receive()
            assert message["type"] == "lifespan.shutdown.complete", message


def http_client(app: Any, token: str | None = None, **headers: str) -> httpx2.AsyncClient:
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE_URL, headers=headers)


@asynccontextmanager
async def mcp_client(
    app: Any, token: str, mode: str, *, client_info: Implementation | None = None, **headers: str
) -> AsyncIterator[Client]:
    """The real SDK client, over Streamable HTTP, into the in-process app; ``client_info`` is the
    ``clientInfo`` it names itself with (the SDK's default otherwise), ``headers`` go on every request."""
    async with http_client(app, token, **headers) as http:
        transport = streamable_http_client(MCP_URL, http_client=http)
        async with Client(transport, mode=mode, client_info=client_info) as client:
            yield client


def initialize_body(request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        },
    }


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def dump(result: Any) -> str:
    """Everything a tool result carries, as text (to look for things it must never contain)."""
    return json.dumps(result.model_dump(mode="json", by_alias=True), default=str)


async def in_thread(fn: Any) -> Any:
    """Run ORM code from an async test on a worker thread (as the tools do), closing its connection."""

    def wrapped() -> Any:
        from django.db import close_old_connections

        try:
            return fn()
        finally:
            close_old_connections()

    return await anyio.to_thread.run_sync(wrapped)
