"""``session_submit`` for hooks that capture a session on their own (docs/claude-code.md#capture): a
client's transcript format (``trace_format``) converted by the service, the outcome inferred when not
given, a later submission replacing the trace until distillation starts, and ``partial`` submissions
(the session goes on) distilled once the session has been idle for ``SESSION_IDLE_SECONDS``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import AgentSession
from memories.sessions import services as services_sessions
from memories.sessions.contracts import SessionSubmitInput, session_submit_run
from memories.sessions.services import session_submit, sessions_release_idle
from reasoningbank.errors import Conflict, InvalidInput, Rejected
from tests.agent_transcripts import (
    GEMINI_RECORDING,
    codex_rollout_text,
    cursor_transcript_text,
    gemini_recording_text,
    gemini_session_text,
)
from tests.claude_code_transcript import SECRET, transcript_text
from tests.hook_modules import gemini_recording_read


@pytest.fixture
def queued(settings, monkeypatch, django_capture_on_commit_callbacks):
    """What is queued for a worker once committed (the queue itself replaced by a list): every
    service call of a test commits, as a request does."""
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    enqueued: list[str] = []
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda sid, delay_seconds=0: enqueued.append(sid))

    def committing(function):
        def call(*args, **kwargs):
            with django_capture_on_commit_callbacks(execute=True):
                return function(*args, **kwargs)

        return call

    monkeypatch.setitem(globals(), "session_submit_run", committing(session_submit_run))
    monkeypatch.setitem(globals(), "sessions_release_idle", committing(sessions_release_idle))
    return enqueued


def submit(agent, *, session_id="cc-1", trace=None, **args):
    args.setdefault("trace_format", "claude-code-jsonl")
    return session_submit_run(
        agent, SessionSubmitInput(session_id=session_id, trace=trace or transcript_text(session_id=session_id), **args)
    )


def test_a_claude_code_transcript_is_stored_as_a_compact_trace_without_its_secret(agent, queued):
    out = submit(agent)
    session = AgentSession.objects.get(pk=out.id)
    assert session.trace.startswith("[user] The checkout test is flaky again")
    assert "[sidechain] [user] Which tests mutate the cart fixture?" in session.trace
    assert SECRET not in session.trace and "[REDACTED:" in session.trace
    assert '"parentUuid"' not in session.trace  # the envelopes are gone
    assert out.redactions >= 1 and out.status == "queued" and queued == [out.id]


@pytest.mark.parametrize(
    ("trace_format", "text"),
    [
        ("codex-rollout-jsonl", codex_rollout_text(session_id="x-1", marker="E2E-agent")),
        ("gemini-cli-json", gemini_session_text(session_id="x-1", marker="E2E-agent")),
        ("gemini-cli-json", gemini_recording_text(session_id="x-1", marker="E2E-agent")),
        ("cursor-jsonl", cursor_transcript_text(marker="E2E-agent")),
    ],
)
def test_the_other_agents_transcripts_are_stored_as_the_same_compact_trace_without_their_secret(
    agent, queued, trace_format, text
):
    out = submit(agent, session_id="x-1", trace=text, trace_format=trace_format)
    session = AgentSession.objects.get(pk=out.id)
    assert session.trace.startswith("[user] Fix the flaky checkout test (E2E-agent)")
    assert SECRET not in session.trace and out.redactions >= 1
    assert out.outcome == "success" and out.status == "queued"


def test_a_gemini_cli_061_session_handed_in_by_its_hook_is_stored_ready_to_distil(agent, queued, monkeypatch):
    monkeypatch.setenv("REASONINGBANK_TIMEOUT", "30")
    trace, _ = gemini_recording_read(GEMINI_RECORDING)  # what the hook sends at SessionEnd

    out = submit(agent, session_id="g-061", trace=trace, trace_format="gemini-cli-json", partial=False)

    session = AgentSession.objects.get(pk=out.id)
    assert session.trace.startswith("[user] Fix the flaky checkout test (MARKER)")
    assert session.trace.endswith("[user] Thanks, that works now.\n[assistant] Glad it works.")
    assert SECRET not in session.trace and out.redactions >= 1
    assert "reasoningbank_memories" not in session.trace  # the memories the hooks injected are not the session's
    assert (out.outcome, out.status, queued) == ("success", "queued", [out.id])


def test_without_an_outcome_the_one_the_transcript_shows_is_taken(agent, queued):
    assert submit(agent).outcome == "success"
    assert (
        submit(
            agent, session_id="cc-2", trace=transcript_text(session_id="cc-2", verdict="", final_tests_pass=False)
        ).outcome
        == "failure"
    )
    assert submit(agent, session_id="cc-3", trace="user: hi", trace_format="plain").outcome == "unknown"


def test_a_given_outcome_wins_over_the_inferred_one(agent, queued):
    assert submit(agent, outcome="failure").outcome == "failure"


def test_a_transcript_with_no_conversation_in_it_is_refused_as_a_422_naming_the_trace(agent, queued):
    with pytest.raises(Rejected) as excinfo:
        submit(agent, trace='{"type": "summary", "summary": "nothing"}\n')
    assert (excinfo.value.field, excinfo.value.status) == ("trace", 422)
    assert not AgentSession.objects.exists()


def test_a_later_submission_replaces_the_trace_until_distillation_starts(agent, queued):
    first = submit(agent, trace=transcript_text(session_id="cc-1", verdict=""), partial=True)
    second = submit(agent)

    assert second.id == first.id and not second.created and second.replaced
    session = AgentSession.objects.get(pk=first.id)
    assert "[user] Thanks, that works now." in session.trace
    assert AgentSession.objects.count() == 1

    AgentSession.objects.filter(pk=first.id).update(status="running")
    with pytest.raises(Conflict, match="does not continue"):  # a worker reads it: it may only grow at its end
        submit(agent, trace=transcript_text(session_id="cc-1", verdict="It still fails."))
    assert "It still fails" not in AgentSession.objects.get(pk=first.id).trace


def test_a_partial_submission_waits_for_the_session_to_be_idle(agent, queued, settings):
    settings.SESSION_IDLE_SECONDS = 600
    out = submit(agent, partial=True)
    session = AgentSession.objects.get(pk=out.id)
    assert session.status == "queued" and queued == []  # held, not queued for a worker yet
    assert session.next_attempt_at > timezone.now() + timedelta(seconds=590)

    assert sessions_release_idle() == 0  # not idle long enough
    AgentSession.objects.filter(pk=out.id).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    assert sessions_release_idle() == 1 and queued == [out.id]
    assert sessions_release_idle() == 0  # released once


def test_each_partial_submission_restarts_the_idle_wait_and_a_final_one_queues_it_now(agent, queued, settings):
    settings.SESSION_IDLE_SECONDS = 600
    out = submit(agent, partial=True)
    AgentSession.objects.filter(pk=out.id).update(next_attempt_at=timezone.now() + timedelta(seconds=5))
    submit(agent, partial=True)
    assert AgentSession.objects.get(pk=out.id).next_attempt_at > timezone.now() + timedelta(seconds=590)
    assert queued == []

    final = submit(agent)

    assert final.replaced and queued == [out.id]
    assert AgentSession.objects.get(pk=out.id).next_attempt_at is None


def test_a_retry_waiting_for_its_backoff_is_not_released_as_idle(agent, queued):
    out = submit(agent)
    AgentSession.objects.filter(pk=out.id).update(attempts=1, next_attempt_at=timezone.now() - timedelta(seconds=1))
    queued.clear()
    assert sessions_release_idle() == 0 and queued == []


def test_the_outcome_of_a_partial_submission_is_not_attributed_yet(agent, queued):
    from memories.models import SessionMemoryUse
    from tests.factories import MemoryFactory

    memory = MemoryFactory(principal=agent, title="Copy shared fixtures per test")
    SessionMemoryUse.objects.create(organization=agent.organization, session_key="cc-1", memory=memory, via="search")
    submit(agent, partial=True)
    assert SessionMemoryUse.objects.get().outcome == ""
    submit(agent)  # the session is over: the memories it was given learn how it went
    assert SessionMemoryUse.objects.get().outcome == "success"


def test_a_session_that_never_said_it_ended_gives_its_outcome_once_idle(agent, queued):
    from memories.models import MemorySignal, SessionMemoryUse
    from tests.factories import MemoryFactory

    memory = MemoryFactory(principal=agent, title="Copy shared fixtures per test")
    SessionMemoryUse.objects.create(organization=agent.organization, session_key="cc-1", memory=memory, via="search")
    out = submit(agent, partial=True)  # the terminal is closed after this Stop: no SessionEnd comes
    AgentSession.objects.filter(pk=out.id).update(next_attempt_at=timezone.now() - timedelta(seconds=1))

    assert sessions_release_idle() == 1

    assert SessionMemoryUse.objects.get().outcome == "success"
    assert MemorySignal.objects.filter(memory=memory, type="outcome", session_id="cc-1").count() == 1


def test_the_raw_transcript_is_what_the_size_limit_counts(agent, queued, settings):
    settings.SESSION_TRACE_MAX_BYTES = 2048
    with pytest.raises(InvalidInput, match="limit is 2,048 bytes"):
        session_submit(
            principal=agent,
            session_id="cc-1",
            outcome=None,
            trace=transcript_text(session_id="cc-1"),
            trace_format="claude-code-jsonl",
        )


def test_the_minute_work_sweep_queues_a_session_once_it_is_idle(agent, queued):
    from consolidation.tasks import work_sweep

    out = submit(agent, partial=True)
    AgentSession.objects.filter(pk=out.id).update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    assert work_sweep()["idle_sessions"] == 1
