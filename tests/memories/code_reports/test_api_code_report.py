"""POST /api/v1/sessions/code-report and the MCP tool session_code_report
(docs/session-context.md#code-stability): a post-commit hook ties a commit to a session, CI later reports
it kept or reverted, and the memories the session was given learn it — over REST and MCP, within the
token's org only."""

from __future__ import annotations

import pytest

from memories.models import MemorySignal, SessionCommit
from memories.sessions.services_ledger import session_uses_record
from tests.factories import MemoryFactory
from tests.mcp_harness import dump, in_thread, mcp_client

REPORT = "/api/v1/sessions/code-report"
COMMIT = "3f786850e387550fdab836ed7e6dc881de23001b"


def stability(memory_id: str) -> list[bool]:
    return list(MemorySignal.objects.filter(memory_id=memory_id, type="stability").values_list("positive", flat=True))


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a, projects=[cast.project_a])


@pytest.fixture
def given(agent) -> list[str]:
    """Two memories given to session claude-7 (the injection ledger)."""
    ids = [
        MemoryFactory(principal=agent, title="Set HTTP client timeouts").id,
        MemoryFactory(principal=agent, title="Retry webhooks with backoff").id,
    ]
    session_uses_record(principal=agent, session_key="claude-7", memory_ids=ids, via="search")
    return ids


def test_the_hook_ties_the_commit_and_ci_reports_it_kept_to_the_sessions_memories(alice, given):
    tied = alice.post(REPORT, {"session_id": "claude-7", "commit": COMMIT, "status": "committed"}, format="json")
    assert tied.status_code == 200, tied.json()
    assert tied.json() == {
        "session_id": "claude-7",
        "commit": COMMIT,
        "status": "committed",
        "memory_ids": [],
        "signals_written": 0,
        "already_reported": False,
        "message": f"Commit {COMMIT[:12]} tied to session 'claude-7'; report it kept or reverted later",
    }

    kept = alice.post(REPORT, {"commit": COMMIT, "status": "kept"}, format="json").json()

    assert kept["session_id"] == "claude-7" and sorted(kept["memory_ids"]) == sorted(given)
    assert kept["signals_written"] == 2 and kept["already_reported"] is False
    assert all(stability(memory_id) == [True] for memory_id in given)
    again = alice.post(REPORT, {"commit": COMMIT, "status": "kept"}, format="json").json()
    assert again["already_reported"] is True and again["memory_ids"] == [] and again["signals_written"] == 0


def test_a_session_named_alone_takes_the_verdict_and_an_uppercase_sha_is_read_in_lower_case(alice, given):
    body = alice.post(REPORT, {"session_id": "claude-7", "commit": COMMIT.upper(), "status": "reverted"}, format="json")
    assert body.status_code == 200 and body.json()["commit"] == COMMIT
    assert all(stability(memory_id) == [False] for memory_id in given)


def test_the_opposite_verdict_is_a_409_that_says_the_first_one_is_final(alice, given):
    alice.post(REPORT, {"session_id": "claude-7", "commit": COMMIT, "status": "committed"}, format="json")
    alice.post(REPORT, {"session_id": "claude-7", "status": "kept"}, format="json")
    response = alice.post(REPORT, {"session_id": "claude-7", "status": "reverted"}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "conflict" and "first verdict is final" in response.json()["detail"]
    assert all(stability(memory_id) == [True] for memory_id in given)


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"commit": COMMIT, "status": "kept"}, 404, "commit"),
        ({"session_id": "nobody", "status": "kept"}, 404, "session_id"),
        ({"session_id": "claude-7", "commit": COMMIT[:7], "status": "committed"}, 400, "commit"),
        ({"session_id": "claude-7", "status": "merged"}, 400, "status"),
        ({"session_id": "claude-7"}, 400, "status"),
        ({"session_id": "claude-7", "status": "kept", "extra": 1}, 400, "extra"),
        ({"session_id": "claude-7", "status": "committed"}, 400, "commit"),
        ({"status": "kept"}, 400, "session_id"),
        # kept judges code tied to its session before: never a commit first heard of now, nor a session without one
        ({"session_id": "claude-7", "commit": COMMIT, "status": "kept"}, 409, "commit"),
        ({"session_id": "unknown-session", "commit": COMMIT, "status": "kept"}, 409, "commit"),
        ({"session_id": "claude-7", "status": "kept"}, 409, "session_id"),
    ],
)
def test_an_unknown_or_bad_input_is_a_4xx_naming_the_field(alice, given, body, status, field):
    response = alice.post(REPORT, body, format="json")
    assert response.status_code == status, response.json()
    assert list(response.json()["errors"]) == [field]
    assert not MemorySignal.objects.filter(type="stability").exists()
    assert not SessionCommit.objects.exists()


def test_a_read_only_token_is_a_403_and_a_get_is_a_405(cast, token_client, given):
    reader = token_client(cast.org_a, scopes=["memories:read"])
    assert reader.post(REPORT, {"session_id": "claude-7", "status": "kept"}, format="json").status_code == 403
    assert reader.get(REPORT).status_code == 405


@pytest.mark.cross_tenant("api-session-code-report")
def test_another_orgs_token_never_reaches_this_orgs_session_or_commit(cast, alice, given, token_client):
    alice.post(REPORT, {"session_id": "claude-7", "commit": COMMIT, "status": "committed"}, format="json")
    charlie = token_client(cast.org_b)
    assert charlie.post(REPORT, {"commit": COMMIT, "status": "reverted"}, format="json").status_code == 404
    assert charlie.post(REPORT, {"session_id": "claude-7", "status": "reverted"}, format="json").status_code == 404
    # charlie may tie the same sha in his own org: it stays his
    mine = charlie.post(REPORT, {"session_id": "claude-7", "commit": COMMIT, "status": "committed"}, format="json")
    assert mine.status_code == 200 and mine.json()["already_reported"] is False
    assert charlie.post(REPORT, {"commit": COMMIT, "status": "reverted"}, format="json").json()["memory_ids"] == []
    assert all(stability(memory_id) == [] for memory_id in given)
    assert SessionCommit.objects.get(organization=cast.org_a).status == "committed"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.cross_tenant("session_code_report")
async def test_the_mcp_tool_reports_the_same_way_and_keeps_to_its_tokens_org(app, cast, make_token, monkeypatch):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    raw_a, agent = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    raw_b, _ = await in_thread(lambda: make_token(cast.org_b, projects=[cast.project_b]))
    raw_reader, _ = await in_thread(lambda: make_token(cast.org_a, scopes=["memories:read"]))

    def give() -> str:
        memory = MemoryFactory(principal=agent, title="Pin Node 20 in CI")
        session_uses_record(principal=agent, session_key="claude-7", memory_ids=[memory.id], via="context")
        return memory.id

    memory_id = await in_thread(give)
    async with mcp_client(app, raw_a, "2026-07-28") as client:
        tied = await client.call_tool(
            "session_code_report", {"session_id": "claude-7", "commit": COMMIT, "status": "committed"}
        )
    async with mcp_client(app, raw_b, "2026-07-28") as client:
        foreign = await client.call_tool("session_code_report", {"commit": COMMIT, "status": "reverted"})
    async with mcp_client(app, raw_reader, "legacy") as client:
        denied = await client.call_tool("session_code_report", {"commit": COMMIT, "status": "reverted"})
    async with mcp_client(app, raw_a, "legacy") as client:
        kept = await client.call_tool("session_code_report", {"commit": COMMIT, "status": "kept"})
        bad = await client.call_tool("session_code_report", {"commit": "xyz", "status": "kept"})

    assert not tied.is_error, dump(tied)
    assert foreign.is_error and f"commit {COMMIT} not found" in dump(foreign)
    assert denied.is_error and "memories:write" in dump(denied)
    assert not kept.is_error, dump(kept)
    assert kept.structured_content["memory_ids"] == [memory_id] and kept.structured_content["signals_written"] == 1
    assert bad.is_error and "commit" in dump(bad)
    assert await in_thread(lambda: stability(memory_id)) == [True]


def test_a_session_whose_client_id_is_code_report_stays_reachable_by_its_service_id(alice, agent, settings):
    from memories.sessions.services import session_submit

    settings.LLM_PROVIDER = "none"
    session = session_submit(principal=agent, session_id="code-report", outcome="success", trace="agent: done").session
    assert alice.get(f"/api/v1/sessions/{session.id}").json()["session_id"] == "code-report"
