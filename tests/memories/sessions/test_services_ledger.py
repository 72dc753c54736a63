"""The injection ledger (memories/sessions/services.py; docs/session-context.md#the-ledger): memories
handed to a session by memory_search / memory_context with its id receive the session's outcome, once,
and nothing of another organization does."""

from __future__ import annotations

import json

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


def claude_code_transcript(*, assistant: str, user: str = "Make the upload retry when the API flakes.") -> str:
    """A Claude Code session file: the user's prompt, then the assistant's words and one tool call."""
    lines = [
        {"type": "user", "cwd": "/work/shop", "message": {"role": "user", "content": user}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": assistant}]}},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}},
            ]},
        },
    ]  # fmt: skip
    return "\n".join(json.dumps(line) for line in lines)


def uses(memory, session_key: str = "s-1") -> int:
    write_behind_wait()
    return MemorySignal.objects.filter(memory=memory, type="usage", positive=True, session_id=session_key).count()


def submit(principal, trace: str, trace_format: str = "claude-code-jsonl", session_id: str = "s-1") -> None:
    session_submit_run(principal, SessionSubmitInput(session_id=session_id, trace=trace, trace_format=trace_format))


def test_a_memory_the_session_was_given_and_the_agent_cites_by_id_is_used_once(agent, given):
    """docs/confidence.md#impressions-and-use: a result the agent cites is a use; what the user wrote, a memory
    the session was never given, or a plain trace (no telling who wrote what) is not."""
    cited = f"Following {given['timeouts'].id} I set the timeouts, as {given['unrelated'].id} said of caching."
    trace = claude_code_transcript(assistant=cited, user=f"Remember {given['retry'].id}.")
    # a tool's output naming a memory (here of a call the transcript lost: "[tool ok]") is not the agent's word
    trace += "\n" + json.dumps({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "lost", "content": f"see {given['retry'].id}"},
    ]}})  # fmt: skip

    submit(agent, trace)
    submit(agent, trace + "\n")  # the same session handed in again: not a second use

    assert uses(given["timeouts"]) == 1
    assert uses(given["retry"]) == 0  # named by the user, not the agent
    assert uses(given["unrelated"]) == 0  # cited, but never given to this session
    submit(agent, f"agent: applied {given['retry'].id}", trace_format="plain", session_id="s-2")
    assert uses(given["retry"], "s-2") == 0


@pytest.mark.cross_tenant("session_submit")
def test_another_orgs_session_citing_this_orgs_memory_uses_nothing(cast, given, make_token):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    SessionMemoryUse.objects.create(organization=cast.org_a, session_key="s-9", memory=given["timeouts"], via="search")

    submit(charlie, claude_code_transcript(assistant=f"Following {given['timeouts'].id}."), session_id="s-9")

    assert uses(given["timeouts"], "s-9") == 0
