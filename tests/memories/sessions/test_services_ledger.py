"""The injection ledger (memories/sessions/services.py; docs/session-context.md#the-ledger): memories
handed to a session by memory_search / memory_context with its id receive the session's outcome, once,
and nothing of another organization does."""

from __future__ import annotations

import pytest

from memories.confidence.contracts import OutcomeInput, memory_outcome_run
from memories.context.contracts import ContextInput, memory_context_run
from memories.models import MemorySignal, SessionMemoryUse
from memories.search.contracts import SearchInput, memory_search_run
from memories.sessions.contracts import SessionSubmitInput, session_submit_run
from reasoningbank.db_threads import write_behind_wait
from tests.factories import memory_recorder

record = memory_recorder(description="When calling flaky third-party APIs", outcome="success")


def outcomes(memory) -> list[bool]:
    write_behind_wait()
    return list(MemorySignal.objects.filter(memory=memory, type="outcome").values_list("positive", flat=True))


@pytest.fixture
def given(agent):
    """Two memories handed to session s-1 (one by search, one by context), one never handed."""
    retry = record(agent, title="Retry with jittered backoff", content="Retry idempotent calls with backoff.")
    timeouts = record(agent, title="Set client timeouts", content="Always set connect and read timeouts.")
    unrelated = record(agent, title="Cache tax rates", content="Cache them for an hour at most.")
    memory_search_run(agent, SearchInput(query="retry backoff", session_id="s-1", limit=1, min_confidence=0))
    memory_context_run(agent, ContextInput(session_id="s-1", max=1, task="set client timeouts"))
    return {"retry": retry, "timeouts": timeouts, "unrelated": unrelated}


def test_search_and_context_note_what_they_gave_the_session_once(agent, given):
    rows = SessionMemoryUse.objects.filter(session_key="s-1")
    assert {(r.memory_id, r.via) for r in rows} == {(given["retry"].id, "search"), (given["timeouts"].id, "context")}
    memory_search_run(agent, SearchInput(query="retry backoff", session_id="s-1", limit=1, min_confidence=0))
    assert SessionMemoryUse.objects.filter(session_key="s-1", memory=given["retry"]).count() == 1
    memory_search_run(agent, SearchInput(query="retry backoff", limit=1, min_confidence=0))  # no session: no row
    assert SessionMemoryUse.objects.count() == 2


def test_an_outcome_with_the_session_id_reaches_every_memory_the_session_was_given_once(agent, given):
    out = memory_outcome_run(agent, OutcomeInput(memory_id=given["retry"].id, succeeded=False, session_id="s-1"))
    assert out.message == "Outcome recorded; also for 1 other memory given to this session"
    assert outcomes(given["retry"]) == [False]  # the named one once, not twice
    assert outcomes(given["timeouts"]) == [False]
    assert outcomes(given["unrelated"]) == []
    # a second report of the same session reaches only the named memory again
    memory_outcome_run(agent, OutcomeInput(memory_id=given["retry"].id, succeeded=True, session_id="s-1"))
    assert sorted(outcomes(given["retry"])) == [False, True]
    assert outcomes(given["timeouts"]) == [False]
    assert set(SessionMemoryUse.objects.filter(session_key="s-1").values_list("outcome", flat=True)) == {"failure"}


def test_a_submitted_session_gives_its_outcome_to_the_memories_it_was_given(agent, given):
    session_submit_run(agent, SessionSubmitInput(session_id="s-1", outcome="success", trace="agent: done, tests green"))
    assert outcomes(given["retry"]) == [True] and outcomes(given["timeouts"]) == [True]
    assert outcomes(given["unrelated"]) == []
    # resubmitting (idempotent) attributes nothing again
    session_submit_run(agent, SessionSubmitInput(session_id="s-1", outcome="success", trace="agent: done, tests green"))
    assert outcomes(given["retry"]) == [True]


@pytest.mark.cross_tenant("memory_outcome")
def test_another_orgs_session_with_the_same_id_never_reaches_this_orgs_memories(cast, agent, given, make_token):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    theirs = record(charlie, title="Retry their webhooks", content="Their own rule for webhook retries.")
    memory_search_run(charlie, SearchInput(query="retry", session_id="s-1", limit=1, min_confidence=0))
    memory_outcome_run(charlie, OutcomeInput(memory_id=theirs.id, succeeded=True, session_id="s-1"))
    assert outcomes(theirs) == [True]
    assert outcomes(given["retry"]) == [] and outcomes(given["timeouts"]) == []
    assert set(SessionMemoryUse.objects.filter(organization=cast.org_a).values_list("outcome", flat=True)) == {""}
