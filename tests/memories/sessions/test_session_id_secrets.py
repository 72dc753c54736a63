"""A session id holding a secret is refused — a 400 naming ``session_id`` over REST, the same MCP
error naming the argument — on every operation that takes one, before any work and writing nothing;
an imported file with one is refused naming its line and field. Session ids are stored and shown as
they are (the session list, the ledger, an export), so one cannot be scrubbed the way a text is
(docs/security/secret-scrubbing.md). Our own token in one is revoked all the same.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from accounts.models import AuditEvent
from accounts.tokens.services import token_authenticate, token_create
from memories.models import AgentSession, MemorySignal, SessionCommit, SessionMemoryUse
from memories.sessions import services as services_sessions
from tests.factories import MemoryFactory
from tests.mcp_harness import MODES, dump, in_thread, mcp_client

GITHUB_PAT = "ghp_" + "Kq7Zr2Xw9Lm4Np8Ts1Vb6Yc3Hd5Jf0Ga2Ue7"
JWT = "eyJhbGciOiJub25lIn0" + ".eyJzdWIiOiJhZG1pbiJ9."
SECRET_IDS = [f"run-{GITHUB_PAT}", JWT, "postgres://app:$ecr3tPw9@db/app"]
COMMIT = "3f786850e387550fdab836ed7e6dc881de23001b"


def nothing_written() -> None:
    assert not AgentSession.objects.exists()
    assert not SessionMemoryUse.objects.exists()
    assert not SessionCommit.objects.exists()
    assert not MemorySignal.objects.exists()


def refused(response: Any) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert list(body["errors"]) == ["session_id"]
    assert body["errors"]["session_id"][0].startswith("session_id must not hold a secret")
    assert GITHUB_PAT not in response.content.decode()


@pytest.fixture
def agent_client(cast: Any, token_client: Any) -> Any:
    return token_client(cast.org_a, projects=[cast.project_a])


@pytest.fixture
def memory(agent: Any) -> Any:
    return MemoryFactory(principal=agent, title="Set HTTP client timeouts")


@pytest.mark.django_db
@pytest.mark.parametrize("session_id", SECRET_IDS, ids=["github token", "unsigned jwt", "url password"])
def test_every_rest_operation_that_takes_a_session_id_refuses_one_holding_a_secret(
    agent_client: Any, memory: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, session_id: str
) -> None:
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)
    calls = {
        "/api/v1/sessions": {"session_id": session_id, "outcome": "success", "trace": "agent: done"},
        "/api/v1/memories/search": {"query": "timeouts", "session_id": session_id},
        "/api/v1/memories/context": {"task": "add timeouts", "session_id": session_id},
        "/api/v1/memories/ask": {"question": "which timeouts?", "session_id": session_id},
        f"/api/v1/memories/{memory.id}/outcome": {"succeeded": True, "session_id": session_id},
        "/api/v1/sessions/code-report": {"session_id": session_id, "commit": COMMIT, "status": "committed"},
    }
    for path, body in calls.items():
        refused(agent_client.post(path, body, format="json"))
    nothing_written()
    assert memory.__class__.objects.get(pk=memory.pk).usage_count == 0  # the search did not run


@pytest.mark.django_db
def test_an_ordinary_session_id_is_still_taken(agent_client: Any, memory: Any) -> None:
    for session_id in ("claude-7", "123e4567-e89b-12d3-a456-426614174000", "ci/build 42 (retry)"):
        response = agent_client.post(
            f"/api/v1/memories/{memory.id}/outcome", {"succeeded": True, "session_id": session_id}, format="json"
        )
        assert response.status_code == 200, response.content
    assert MemorySignal.objects.count() == 3


@pytest.mark.django_db
def test_our_own_token_in_a_session_id_is_refused_and_revoked(cast: Any, agent_client: Any, memory: Any) -> None:
    _, raw = token_create(organization=cast.org_a, label="laptop")

    response = agent_client.post("/api/v1/memories/search", {"query": "timeouts", "session_id": raw}, format="json")

    refused(response)
    assert raw not in response.content.decode()
    assert token_authenticate(raw) is None
    assert AuditEvent.objects.filter(verb="token.revoke", data__seen_in="session_id").exists()


@pytest.mark.django_db
def test_an_import_with_a_session_id_holding_a_secret_is_refused_naming_the_line_and_field(
    cast: Any, token_client: Any
) -> None:
    lines = [
        {"type": "header", "format": "reasoningbank-export", "version": 1},
        {"type": "memory", "id": "m1", "project": "web-app", "title": "Timeouts", "content": "Set HTTP timeouts."},
        {"type": "signal", "memory": "m1", "signal": "outcome", "positive": True, "session_id": SECRET_IDS[0]},
        {"type": "session_use", "memory": "m1", "session_key": SECRET_IDS[1], "via": "search"},
        {"type": "end"},
    ]
    text = "\n".join(json.dumps(line) for line in lines)

    response = token_client(cast.org_a, scopes=["admin"]).post("/api/v1/import", {"text": text}, format="json")

    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert errors["line 3"] == ["field session_id: must not hold a secret (it looks like: github_token)"]
    assert errors["line 4"] == ["field session_key: must not hold a secret (it looks like: jwt)"]
    assert GITHUB_PAT not in response.content.decode()
    assert not memory_rows()


def memory_rows() -> list[Any]:
    from memories.models import Memory

    return list(Memory.objects.all())


# --- MCP ------------------------------------------------------------------------------------------------


@pytest.fixture
def mcp_setup(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", MODES)
async def test_every_mcp_tool_that_takes_a_session_id_refuses_one_holding_a_secret(
    app: Any, cast: Any, make_token: Any, agent: Any, mcp_setup: None, mode: str
) -> None:
    token = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a])[0])
    memory = await in_thread(lambda: MemoryFactory(principal=agent, title="Set HTTP client timeouts"))
    session_id = SECRET_IDS[0]
    calls = {
        "session_submit": {"session_id": session_id, "outcome": "success", "trace": "agent: done"},
        "memory_search": {"query": "timeouts", "session_id": session_id},
        "memory_context": {"task": "add timeouts", "session_id": session_id},
        "memory_ask": {"question": "which timeouts?", "session_id": session_id},
        "memory_outcome": {"memory_id": memory.id, "succeeded": True, "session_id": session_id},
        "session_code_report": {"session_id": session_id, "commit": COMMIT, "status": "committed"},
    }
    async with mcp_client(app, token, mode) as client:
        results = {name: await client.call_tool(name, arguments) for name, arguments in calls.items()}
    for name, result in results.items():
        assert result.is_error, (name, dump(result))
        assert "session_id: session_id must not hold a secret (it looks like: github_token)" in dump(result), name
        assert GITHUB_PAT not in dump(result), name
    await in_thread(nothing_written)
