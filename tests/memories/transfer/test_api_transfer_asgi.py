"""The export streams under ASGI (uvicorn serves the product): chunk by chunk from an asynchronous
iterator, never read whole before the first byte (Django would do that to a synchronous one, with a
warning)."""

from __future__ import annotations

import json
import warnings
from typing import Any

import anyio
import pytest

from accounts.services import token_create
from tests.factories import MemoryFactory
from tests.mcp_harness import in_thread as _in_thread

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_the_export_streams_in_chunks_under_asgi(app: Any, cast: Any, monkeypatch: Any) -> None:
    from memories.transfer import api as api_transfer

    monkeypatch.setattr(api_transfer, "LINES_PER_CHUNK", 2)

    def setup() -> str:
        alice = cast.principal(cast.alice)
        for n in range(5):
            MemoryFactory(principal=alice, project="web-app", title=f"Streamed lesson {n}")
        _, raw = token_create(organization=cast.org_a, label="admin", scopes=["admin"])
        return raw

    raw = await _in_thread(setup)
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": "/api/v1/export", "raw_path": b"/api/v1/export", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {raw}".encode())],
        "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
    }  # fmt: skip
    sent: list[dict[str, Any]] = []
    requested = anyio.Event()
    done = anyio.Event()

    async def receive() -> dict[str, Any]:
        if not requested.is_set():
            requested.set()
            return {"type": "http.request", "body": b"", "more_body": False}
        await done.wait()  # the client stays connected until the answer is complete
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "must consume synchronous iterators" would fail here
        await app(scope, receive, send)
        done.set()

    start, *bodies = sent
    assert start["status"] == 200 and (b"Content-Type", b"application/x-ndjson") in start["headers"]
    chunks = [message["body"] for message in bodies if message.get("body")]
    lines = [json.loads(line) for line in b"".join(chunks).decode().splitlines()]
    assert len(chunks) == 4  # seven lines, two at a time
    assert [line["type"] for line in lines] == ["header", *["memory"] * 5, "end"]
    assert lines[-1]["counts"]["memory"] == 5
