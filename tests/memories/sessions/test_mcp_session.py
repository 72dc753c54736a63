"""MCP ``session_submit`` through the real SDK client in both protocol eras."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memories.models import AgentSession
from memories.sessions import services as services_sessions
from tests.factories import ProjectFactory
from tests.mcp_harness import MODES, dump, in_thread, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)


@pytest.fixture
def tokens(cast: Any, make_token: Any) -> dict[str, str]:
    return {
        "agent": make_token(cast.org_a, projects=[cast.project_a])[0],
        "reader": make_token(cast.org_a, scopes=["memories:read"], projects=[cast.project_a])[0],
        "org": make_token(cast.org_a)[0],
    }


SESSION = {
    "session_id": "claude-7",
    "outcome": "success",
    "trace": "user: fix it\nagent: export KEY=sk-ant-api03-" + "Zx9" * 20,
}


@pytest.mark.parametrize("mode", MODES)
async def test_a_session_is_queued_once_and_resubmitting_returns_its_status(app, tokens, mode):
    async with mcp_client(app, tokens["agent"], mode) as client:
        first = await client.call_tool("session_submit", SESSION)
        second = await client.call_tool("session_submit", SESSION)
    assert not first.is_error, dump(first)
    assert first.structured_content["status"] == "queued" and first.structured_content["created"] is True
    assert second.structured_content["created"] is False
    assert second.structured_content["id"] == first.structured_content["id"]
    session = await in_thread(lambda: AgentSession.objects.get())
    assert "sk-ant-api03" not in session.trace and session.redactions >= 1


async def test_without_an_llm_the_session_waits_and_says_so(app, tokens, settings):
    settings.LLM_PROVIDER = "none"
    async with mcp_client(app, tokens["agent"], "2026-07-28") as client:
        result = await client.call_tool("session_submit", SESSION)
    assert result.structured_content["status"] == "waiting_for_llm"
    assert "LLM" in result.structured_content["message"]


@pytest.mark.cross_tenant("session_submit")
async def test_bad_input_and_read_only_tokens_get_clear_errors(app, tokens, cast):
    await in_thread(lambda: ProjectFactory(organization=cast.org_a, slug="mobile"))  # the org token must choose
    async with mcp_client(app, tokens["reader"], "legacy") as client:
        denied = await client.call_tool("session_submit", SESSION)
    async with mcp_client(app, tokens["org"], "legacy") as client:
        no_project = await client.call_tool("session_submit", SESSION)
        bad_outcome = await client.call_tool("session_submit", {**SESSION, "outcome": "great"})
        foreign = await client.call_tool("session_submit", {**SESSION, "project": "billing"})
    assert denied.is_error and "memories:write" in dump(denied)
    assert no_project.is_error and "project" in dump(no_project)
    assert bad_outcome.is_error and "outcome" in dump(bad_outcome)
    assert foreign.is_error and "not found" in dump(foreign)
    assert await in_thread(lambda: AgentSession.objects.count()) == 0


@pytest.mark.parametrize("mode", MODES)
async def test_a_nul_byte_in_the_session_id_is_a_clear_error_naming_the_field(app, tokens, mode):
    async with mcp_client(app, tokens["agent"], mode) as client:
        result = await client.call_tool("session_submit", {**SESSION, "session_id": "ab\x00c"})
    assert result.is_error
    assert "session_id: must not contain NUL characters" in dump(result)
    assert await in_thread(lambda: AgentSession.objects.count()) == 0


@pytest.mark.cross_tenant("session_submit")
async def test_another_orgs_session_with_the_same_id_is_neither_returned_nor_touched(app, tokens, cast, make_token):
    other = await in_thread(lambda: make_token(cast.org_b, projects=[cast.project_b])[0])
    async with mcp_client(app, tokens["agent"], "2026-07-28") as client:
        ours = await client.call_tool("session_submit", SESSION)
    async with mcp_client(app, other, "2026-07-28") as client:
        theirs = await client.call_tool("session_submit", {**SESSION, "outcome": "failure"})
    assert not ours.is_error and not theirs.is_error, dump(theirs)
    assert theirs.structured_content["created"] is True
    assert theirs.structured_content["id"] != ours.structured_content["id"]
    assert ours.structured_content["id"] not in dump(theirs)
    acme_session = await in_thread(lambda: AgentSession.objects.get(pk=ours.structured_content["id"]))
    assert acme_session.organization_id == cast.org_a.pk and acme_session.outcome == "success"


async def distilled(session_id: str) -> None:
    """The session as a worker leaves it after its first round (the distillation itself: elsewhere)."""

    def mark() -> None:
        session = AgentSession.objects.get(pk=session_id)
        AgentSession.objects.filter(pk=session_id).update(status="done", distilled_upto=len(session.trace), rounds=1)

    await in_thread(mark)


RESUMED = {**SESSION, "trace": SESSION["trace"] + "\nuser: and the docs?\nagent: updated the install notes"}


@pytest.mark.parametrize("mode", MODES)
async def test_a_distilled_session_handed_in_again_is_continued_and_another_trace_is_refused(app, tokens, mode):
    async with mcp_client(app, tokens["agent"], mode) as client:
        first = await client.call_tool("session_submit", SESSION)
        await distilled(first.structured_content["id"])
        continued = await client.call_tool("session_submit", RESUMED)
        refused = await client.call_tool("session_submit", {**SESSION, "trace": "user: another task\nagent: done"})
    assert not continued.is_error, dump(continued)
    out = continued.structured_content
    assert out["continued"] is True and out["status"] == "queued" and out["rounds"] == 1
    assert out["distilled_upto"] < len(await in_thread(lambda: AgentSession.objects.get().trace))
    assert refused.is_error and "does not continue" in dump(refused) and "session_id of its own" in dump(refused)
    assert "another task" not in await in_thread(lambda: AgentSession.objects.get().trace)


@pytest.mark.cross_tenant("session_submit")
async def test_another_orgs_session_with_the_same_id_is_never_continued_by_it(app, tokens, cast, make_token):
    other = await in_thread(lambda: make_token(cast.org_b, projects=[cast.project_b])[0])
    async with mcp_client(app, tokens["agent"], "2026-07-28") as client:
        ours = await client.call_tool("session_submit", SESSION)
    await distilled(ours.structured_content["id"])
    async with mcp_client(app, other, "2026-07-28") as client:
        theirs = await client.call_tool("session_submit", RESUMED)
    assert not theirs.is_error and theirs.structured_content["created"] is True, dump(theirs)
    assert theirs.structured_content["continued"] is False and theirs.structured_content["rounds"] == 0
    acme = await in_thread(lambda: AgentSession.objects.get(pk=ours.structured_content["id"]))
    assert acme.status == "done" and "updated the install notes" not in acme.trace
