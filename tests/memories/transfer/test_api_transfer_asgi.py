"""The export streams under ASGI (uvicorn serves the product): chunk by chunk from an asynchronous
iterator, never read whole before the first byte (Django would do that to a synchronous one, with a
warning)."""

from __future__ import annotations

import json
import warnings
from typing import Any

import anyio
import pytest

from accounts.tokens.services import token_create
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


async def _asgi(app: Any, method: str, path: str, token: str, *, query: bytes = b"", body: list[bytes] | None = None,
                headers: list[tuple[bytes, bytes]] = ()) -> tuple[int, bytes]:  # fmt: skip
    """One request through the whole ASGI app (its guards included), the body in the chunks given."""
    chunks = list(body or [b""])
    length = sum(len(chunk) for chunk in chunks)
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": query, "root_path": "",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode()),
                    (b"content-length", str(length).encode()), *headers],
        "client": ("127.0.0.1", 50000), "server": ("testserver", 80),
    }  # fmt: skip
    sent: list[dict[str, Any]] = []
    done = anyio.Event()

    async def receive() -> dict[str, Any]:
        if chunks:
            chunk = chunks.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    done.set()
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


async def test_an_export_posted_as_an_ndjson_body_in_chunks_imports_under_asgi(
    app: Any, cast: Any, monkeypatch: Any
) -> None:
    from django.db import connection

    from accounts.models import Organization
    from memories.models import Memory

    # every thread closes its connection when done, so the test database can be dropped afterwards
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)

    def setup() -> tuple[str, str]:
        alice = cast.principal(cast.alice)
        for n in range(3):
            MemoryFactory(principal=alice, project="web-app", title=f"Carried lesson {n}")
        target = Organization.objects.create(slug="initech", plan="pro")
        return (
            token_create(organization=cast.org_a, label="out", scopes=["admin"])[1],
            token_create(organization=target, label="in", scopes=["admin"])[1],
        )

    exporter, importer = await _in_thread(setup)
    status, exported = await _asgi(app, "GET", "/api/v1/export", exporter)
    assert status == 200
    halves = [exported[: len(exported) // 2], exported[len(exported) // 2 :]]  # split mid-line, as a network does

    status, answer = await _asgi(
        app, "POST", "/api/v1/import", importer, body=halves, headers=[(b"content-type", b"application/x-ndjson")]
    )

    assert status == 200, answer
    assert json.loads(answer)["created"]["memory"] == 3
    titles = await _in_thread(
        lambda: sorted(Memory.objects.filter(organization__slug="initech").values_list("title", flat=True))
    )
    assert titles == [f"Carried lesson {n}" for n in range(3)]
