"""Write limits over MCP through the real SDK client (docs/security/memory-poisoning.md#write-limits): a
write tool over the limit, or called with a suspended token, is an error result saying why and when to
retry (the sentence REST's ``detail`` carries), nothing is written, and the read tools go on."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from accounts.access import principal_for_token
from accounts.models import ApiToken
from accounts.write_limits.services import flagged_write_note
from memories.models import Memory
from tests.mcp_harness import MODES, dump, in_thread, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

MEMORY = {
    "title": "Pin the base image by digest",
    "description": "Reproducible container builds",
    "content": "FROM python:3.12-slim@sha256:… keeps CI and production on the same bytes; bump it on purpose.",
    "outcome": "success",
}
WRITE_TOOLS = {
    "memory_record": MEMORY,
    "memory_feedback": {"memory_id": "mem_01jd8m4c1s7f0b2gk3y5h9t6wq", "helpful": True},
    "memory_outcome": {"memory_id": "mem_01jd8m4c1s7f0b2gk3y5h9t6wq", "succeeded": True},
    "session_submit": {"session_id": "s-1", "outcome": "success", "trace": "user: hi\nagent: hello"},
    "session_code_report": {"session_id": "s-1", "status": "reverted"},
    "code_changes_report": {
        "repository": "git@github.com:acme/api.git",
        "commit": "89e6c98d92887913cadf06b2adb97f26cde4849b",
        "committed_at": "2026-11-30T10:00:00Z",
        "files": [{"status": "deleted", "path": "app/http.py"}],
    },
}


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test


@pytest.fixture
def agent_token(cast: Any, make_token: Any) -> tuple[str, ApiToken]:
    raw, principal = make_token(cast.org_a, projects=[cast.project_a])
    return raw, principal.token


async def test_the_write_tools_tested_here_are_every_tool_that_changes_the_bank():
    from reasoningbank.mcp_server import build_mcp_server

    tools = await build_mcp_server().list_tools()
    writing = {tool.name for tool in tools if tool.annotations is not None and tool.annotations.read_only_hint is False}
    # memory_consolidate needs consolidation:run, not memories:write: a run merges what is there, and at most
    # one is queued per project at a time (docs/consolidation.md)
    assert writing - {"memory_consolidate"} == set(WRITE_TOOLS)


@pytest.mark.usefixtures("minute_room")
@pytest.mark.parametrize("mode", MODES)
async def test_a_write_tool_over_the_limit_is_an_error_naming_the_limit_and_when_to_retry(
    app, agent_token, settings, mode
):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 1
    raw, token = agent_token
    async with mcp_client(app, raw, mode) as client:
        first = await client.call_tool("memory_record", MEMORY)
        second = await client.call_tool("memory_record", {**MEMORY, "title": "Another lesson on base images"})
        search = await client.call_tool("memory_search", {"query": "base image"})
    assert not first.is_error, dump(first)
    assert second.is_error
    text = second.content[0].text
    assert f"Write limit reached: token {token.prefix}… has made 1 write this minute" in text
    assert "retry in" in text and "Nothing was written" in text
    assert not search.is_error and search.structured_content["memories"]
    assert await in_thread(lambda: Memory.objects.count()) == 1


async def test_every_write_tool_refuses_a_suspended_token_and_the_read_tools_still_answer(app, agent_token):
    raw, token = agent_token

    def suspend() -> None:
        for _ in range(3):
            flagged_write_note(principal_for_token(token))

    await in_thread(suspend)
    async with mcp_client(app, raw, "2026-07-28") as client:
        refused = {tool: await client.call_tool(tool, args) for tool, args in WRITE_TOOLS.items()}
        search = await client.call_tool("memory_search", {"query": "base image"})
        context = await client.call_tool("memory_context", {})
    for tool, result in refused.items():
        assert result.is_error, tool
        text = result.content[0].text
        assert f"This token ({token.prefix}…) may not write to 'acme'" in text, (tool, text)
        assert f"POST /api/v1/tokens/{token.pk}/unsuspend" in text
    assert not search.is_error and not context.is_error
    assert await in_thread(lambda: Memory.objects.count()) == 0
