"""Provenance of distilled memories (docs/security/memory-poisoning.md#provenance): the session keeps who
handed it in and through which client (``submitted_provenance``, written at submission); the memories an
LLM distils from it inherit that, with the session and the distilling model, and the submitter's trust."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.access import principal_for_token
from accounts.tokens.services import token_create
from memories.models import AgentSession, Memory
from memories.sessions import services as services_sessions
from memories.sessions.services import session_process
from tests.fakes import ScriptedLLM, memory_block

TRACE = "user: the tests hang\nagent: added context.WithTimeout around the DB call; tests pass now"
ONE_MEMORY = memory_block(
    1,
    "Wrap DB calls in context.WithTimeout",
    "When Go tests hang on database calls",
    "Add context.WithTimeout(ctx, 5*time.Second) around every query and handle DeadlineExceeded.",
    "go, db",
)
HOOK = "reasoningbank-claude-code-plugin"


@pytest.fixture(autouse=True)
def queued(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An LLM configured (submissions queue), the queue itself left out: the test distils."""
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda sid, delay_seconds=0: None)


def submit(org: Any, *, created_by: Any, session_id: str = "agent-42", trace: str = TRACE) -> AgentSession:
    _, raw = token_create(organization=org, label="laptop", created_by=created_by)
    client = APIClient(HTTP_USER_AGENT=HOOK)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    response = client.post(
        "/api/v1/sessions", {"session_id": session_id, "outcome": "success", "trace": trace}, format="json"
    )
    assert response.status_code in (200, 201), response.json()  # 200: a later submission replaced the trace
    return AgentSession.objects.get(pk=response.json()["id"])


def test_a_submitted_session_keeps_who_handed_it_in_and_through_which_client(cast):
    session = submit(cast.org_a, created_by=cast.alice)

    submitted = session.submitted_provenance
    assert submitted["by"]["kind"] == "token" and submitted["by"]["token_creator_email"] == "alice@acme.test"
    assert submitted["by"]["role"] == "owner"
    assert submitted["client"] == {"transport": "rest", "user_agent": HOOK}


def test_distilled_memories_inherit_the_submitter_with_the_session_and_the_model(cast):
    session = submit(cast.org_a, created_by=cast.alice)

    session_process(session.id, llm=ScriptedLLM([ONE_MEMORY], model="claude-sonnet-4-5"))

    memory = Memory.objects.get(source_session=session)
    assert memory.provenance["how"] == "distilled"
    assert memory.provenance["by"] == session.submitted_provenance["by"]
    assert memory.provenance["client"] == {"transport": "rest", "user_agent": HOOK}
    assert memory.provenance["session"] == {"id": session.id, "key": "agent-42", "model": "claude-sonnet-4-5"}
    assert memory.trust == "trusted"
    assert memory.provenance["at"] == memory.created_at.isoformat()  # written when distilled, not when handed in


def test_a_session_handed_in_with_a_viewers_token_distils_into_memories_that_wait_for_review(cast):
    session = submit(cast.org_a, created_by=cast.bob)  # bob is a viewer

    session_process(session.id, llm=ScriptedLLM([ONE_MEMORY]))

    memory = Memory.objects.get(source_session=session)
    assert memory.provenance["by"]["role"] == "viewer" and memory.trust == "pending"


def test_a_later_submission_of_the_same_session_is_who_the_memories_are_from(cast):
    submit(cast.org_a, created_by=cast.alice)
    session = submit(cast.org_a, created_by=cast.bob, trace=TRACE + "\nagent: and the CI job too")

    session_process(session.id, llm=ScriptedLLM([ONE_MEMORY]))

    memory = Memory.objects.get(source_session=session)
    assert memory.provenance["by"]["token_creator_email"] == "bob@acme.test" and memory.trust == "pending"


def test_a_session_handed_in_before_provenance_is_described_from_its_token(cast):
    token, _ = token_create(organization=cast.org_a, label="old-hook", created_by=cast.alice)
    session = services_sessions.session_submit(
        principal=principal_for_token(token), session_id="old-1", outcome="success", trace=TRACE
    ).session
    AgentSession.objects.filter(pk=session.pk).update(submitted_provenance={})

    session_process(session.id, llm=ScriptedLLM([ONE_MEMORY]))

    memory = Memory.objects.get(source_session=session)
    assert memory.provenance["by"]["token_label"] == "old-hook" and memory.provenance["by"]["role"] == "owner"
    assert memory.provenance["client"] == {"transport": "internal"} and memory.trust == "trusted"
