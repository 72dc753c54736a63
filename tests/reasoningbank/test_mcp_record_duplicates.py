"""MCP memory_record with a memory that is already there
(docs/memory-model.md#how-a-memory-enters-the-bank): the existing id with duplicate_of, nothing written;
the same answer as REST."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memories.models import Memory
from tests.mcp_harness import MODES, dump, in_thread, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

RECORD = {
    "title": "Wrap Go errors with context",
    "description": "When returning errors from Go service layers",
    "content": "Always wrap errors with fmt.Errorf and %w so callers keep the cause.",
    "outcome": "success",
    "tags": ["go", "errors"],
}


@pytest.fixture(autouse=True)
def _short_lived_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


@pytest.mark.parametrize("mode", MODES)
async def test_recording_the_same_memory_twice_returns_the_first_with_duplicate_of(
    app: Any, cast: Any, make_token: Any, mode: str
) -> None:
    raw, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    async with mcp_client(app, raw, mode) as client:
        first = await client.call_tool("memory_record", RECORD)
        again = await client.call_tool("memory_record", {**RECORD, "content": RECORD["content"].upper()})
    assert not first.is_error and not again.is_error, dump(again)
    assert "duplicate_of" not in first.structured_content
    assert again.structured_content["id"] == again.structured_content["duplicate_of"] == first.structured_content["id"]
    assert "identical memory already exists" in again.structured_content["message"]
    assert await in_thread(Memory.objects.count) == 1


@pytest.mark.cross_tenant("memory_record")
async def test_another_orgs_identical_memory_is_never_returned(app: Any, cast: Any, make_token: Any) -> None:
    raw_a, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    raw_b, _ = await in_thread(lambda: make_token(cast.org_b, projects=[cast.project_b]))
    async with mcp_client(app, raw_a, "2026-07-28") as client:
        theirs = (await client.call_tool("memory_record", RECORD)).structured_content["id"]
    async with mcp_client(app, raw_b, "2026-07-28") as client:
        ours = await client.call_tool("memory_record", RECORD)
    assert not ours.is_error, dump(ours)
    assert ours.structured_content["id"] != theirs and theirs not in dump(ours)
    assert "duplicate_of" not in ours.structured_content


async def test_the_tool_description_says_what_an_identical_record_does(app: Any, cast: Any, make_token: Any) -> None:
    raw, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    async with mcp_client(app, raw, "2026-07-28") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert "duplicate_of" in (tools["memory_record"].description or "")
    assert "duplicate_of" in tools["memory_record"].output_schema["properties"]
