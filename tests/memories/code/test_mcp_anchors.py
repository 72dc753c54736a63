"""Anchors over MCP with the official SDK client (docs/code-memory.md#anchors): memory_record takes them,
its answer and memory_get return them, memory_search's hits carry them; a bad anchor or an unknown key in
one is an error result that records nothing; another organization's anchored memory is never returned."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memories.models import Memory, MemoryAnchor
from tests.mcp_harness import MODES, dump, in_thread, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

RECORD = {
    "title": "Close the pool in the test teardown",
    "description": "When a test leaks database connections",
    "content": "Close the pool in teardown, or the next test waits for a free connection.",
    "outcome": "success",
}
ANCHORS = [
    {"repository": "https://github.com/acme/web.git", "path": "app/db.py", "symbol": "Pool.connect", "line_start": 3},
    {"error": "E   TimeoutError: pool exhausted after 30 s"},
]


@pytest.fixture(autouse=True)
def _short_lived_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


@pytest.mark.parametrize("mode", MODES)
async def test_anchors_go_in_with_memory_record_and_come_back_everywhere(
    app: Any, cast: Any, make_token: Any, mode: str
) -> None:
    raw, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    async with mcp_client(app, raw, mode) as client:
        recorded = await client.call_tool("memory_record", {**RECORD, "anchors": ANCHORS})
        assert not recorded.is_error, dump(recorded)
        memory_id = recorded.structured_content["id"]
        got = await client.call_tool("memory_get", {"memory_id": memory_id})
        found = await client.call_tool("memory_search", {"query": "pool teardown", "min_confidence": 0})
    anchors = recorded.structured_content["memory"]["anchors"]
    assert [(a["repository"], a["path"], a["symbol"], a["line_start"]) for a in anchors] == [
        ("", "", "", None), ("github.com/acme/web", "app/db.py", "Pool.connect", 3)
    ]  # fmt: skip
    assert anchors[0]["error_text"] == "TimeoutError: pool exhausted after <n> s"
    assert got.structured_content["anchors"] == anchors
    (hit,) = found.structured_content["memories"]
    assert hit["anchors"] == anchors


@pytest.mark.parametrize(
    ("anchor", "said"),
    [({"path": "a.py", "lines": 3}, "lines"), ({"path": "C:/work/a.py"}, "relative"), ({"error": "oops"}, "error")],
)
async def test_a_bad_anchor_is_an_error_result_and_records_nothing(
    app: Any, cast: Any, make_token: Any, anchor: Any, said: str
) -> None:
    raw, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    async with mcp_client(app, raw, "2026-07-28") as client:
        result = await client.call_tool("memory_record", {**RECORD, "anchors": [anchor]})
    assert result.is_error
    text = result.content[0].text
    assert text.splitlines()[1].startswith("- anchors") and said in text, text
    assert await in_thread(Memory.objects.count) == 0
    assert await in_thread(MemoryAnchor.objects.count) == 0


async def test_the_tool_schema_describes_an_anchors_keys(app: Any, cast: Any, make_token: Any) -> None:
    raw, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    async with mcp_client(app, raw, "2026-07-28") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    schema = tools["memory_record"].input_schema
    anchor = schema["$defs"]["AnchorIn"]
    assert set(anchor["properties"]) == {"repository", "path", "symbol", "line_start", "line_end", "commit", "error"}
    assert anchor["additionalProperties"] is False
    assert schema["properties"]["anchors"]["maxItems"] == 20


@pytest.mark.cross_tenant("memory_get", "memory_search")
async def test_another_orgs_anchored_memory_is_never_returned(app: Any, cast: Any, make_token: Any) -> None:
    raw_a, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    raw_b, _ = await in_thread(lambda: make_token(cast.org_b, projects=[cast.project_b]))
    async with mcp_client(app, raw_b, "2026-07-28") as client:
        theirs = (await client.call_tool("memory_record", {**RECORD, "anchors": ANCHORS})).structured_content["id"]
    async with mcp_client(app, raw_a, "2026-07-28") as client:
        got = await client.call_tool("memory_get", {"memory_id": theirs})
        found = await client.call_tool("memory_search", {"query": "pool teardown", "min_confidence": 0})
    assert got.is_error and "app/db.py" not in dump(got)
    assert found.structured_content["memories"] == []
