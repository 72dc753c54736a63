"""run.sh starts web while the start-up step migrates; web's lifespan startup, after which uvicorn opens
its port, waits for the file ``RB_START_GATE`` names (reasoningbank/asgi.py,
docs/operations.md#what-happens-at-start)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest_anyio = pytest.mark.anyio


async def _lifespan_messages_seen(gate_file: Any, *, create_after_looking: bool) -> tuple[list[str], list[str]]:
    from reasoningbank.asgi import ReasoningBankASGI

    seen: list[str] = []

    async def mcp_app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((await receive())["type"])

    async def receive() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def send(message: Any) -> None:
        pass

    app = ReasoningBankASGI(django_app=None, mcp_app=mcp_app)
    before: list[str] = []
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(app, {"type": "lifespan"}, receive, send)
            for _ in range(10):  # give the lifespan every chance to run on
                await anyio.sleep(0.02)
            before = list(seen)
            if create_after_looking:
                gate_file.touch()
    return before, seen


@pytest_anyio
async def test_the_startup_waits_until_the_gate_file_exists(tmp_path, monkeypatch):
    gate = tmp_path / "run.prepared"
    monkeypatch.setenv("RB_START_GATE", str(gate))

    before, after = await _lifespan_messages_seen(gate, create_after_looking=True)

    assert before == []
    assert after == ["lifespan.startup"]


@pytest_anyio
async def test_without_a_gate_the_startup_goes_on_at_once(tmp_path, monkeypatch):
    monkeypatch.delenv("RB_START_GATE", raising=False)

    before, _ = await _lifespan_messages_seen(tmp_path / "unused", create_after_looking=False)

    assert before == ["lifespan.startup"]
