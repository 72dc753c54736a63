"""Sessions whose worker died while distilling them (``sessions_recover_stale``): before, a killed
worker left its session "running" for good — no sweep looked at it and a retry was refused (only
failed or waiting sessions are retried). Now a stale heartbeat, or a worker process of this host
that is gone, puts it back in the queue with the attempt counted, and a session that keeps killing
its worker ends failed. Timestamps are back-dated instead of waiting."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from consolidation.tasks import work_sweep
from memories.models import AgentSession
from memories.sessions import services as services_sessions
from memories.sessions.services import MAX_ATTEMPTS, session_process, sessions_recover_stale
from reasoningbank.work_heartbeat import worker_identity
from tests.factories import AgentSessionFactory
from tests.fakes import ScriptedLLM

pytestmark = pytest.mark.django_db


@pytest.fixture
def enqueued(monkeypatch) -> list[str]:
    ids: list[str] = []
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda sid, delay_seconds=0: ids.append(sid))
    return ids


def running_session(project, *, heartbeat_seconds_ago: float, worker: str = "", attempts: int = 0) -> AgentSession:
    at = timezone.now() - timedelta(seconds=heartbeat_seconds_ago)
    return AgentSessionFactory(
        project=project, status=AgentSession.STATUS_RUNNING, started_at=at, heartbeat_at=at, worker=worker,
        attempts=attempts,
    )  # fmt: skip


def exited_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_session_whose_worker_stopped_beating_is_queued_again_with_the_attempt_counted(
    cast, settings, enqueued, django_capture_on_commit_callbacks
):
    settings.WORK_HEARTBEAT_STALE_AFTER = 45
    dead = running_session(cast.project_a, heartbeat_seconds_ago=50)
    alive = running_session(cast.project_b, heartbeat_seconds_ago=20)

    with django_capture_on_commit_callbacks(execute=True):
        assert work_sweep()["sessions"] == 1

    dead.refresh_from_db()
    alive.refresh_from_db()
    assert (dead.status, dead.attempts) == (AgentSession.STATUS_QUEUED, 1)
    assert "the worker distilling it stopped" in dead.error
    assert enqueued == [dead.id]
    assert alive.status == AgentSession.STATUS_RUNNING


def test_a_session_whose_worker_process_is_gone_is_queued_again_at_once(cast, enqueued):
    gone = running_session(cast.project_a, heartbeat_seconds_ago=1, worker=f"{socket.gethostname()}/{exited_pid()}")
    mine = running_session(cast.project_b, heartbeat_seconds_ago=1, worker=worker_identity())

    assert sessions_recover_stale() == 1

    gone.refresh_from_db()
    mine.refresh_from_db()
    assert gone.status == AgentSession.STATUS_QUEUED and mine.status == AgentSession.STATUS_RUNNING


def test_a_session_that_keeps_killing_its_worker_ends_failed_and_is_not_queued(
    cast, settings, enqueued, django_capture_on_commit_callbacks
):
    settings.WORK_HEARTBEAT_STALE_AFTER = 45
    session = running_session(cast.project_a, heartbeat_seconds_ago=60, attempts=MAX_ATTEMPTS - 1)

    with django_capture_on_commit_callbacks(execute=True):
        sessions_recover_stale()

    session.refresh_from_db()
    assert (session.status, session.attempts) == (AgentSession.STATUS_FAILED, MAX_ATTEMPTS)
    assert "its worker died 3 times" in session.error and session.finished_at is not None
    assert enqueued == []


def test_the_session_queued_again_is_distilled_by_the_next_worker(cast, settings, enqueued):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    settings.WORK_HEARTBEAT_STALE_AFTER = 45
    session = running_session(cast.project_a, heartbeat_seconds_ago=60)
    sessions_recover_stale()

    done = session_process(session.id, llm=ScriptedLLM(["NO_EXTRACTIONS"]))

    assert done is not None and done.status == AgentSession.STATUS_DONE


def test_a_claimed_session_names_its_worker_and_starts_its_heartbeat(cast, settings, enqueued):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    session = AgentSessionFactory(project=cast.project_a)
    seen: list[tuple[str, object]] = []

    def reply(system: str, prompt: str) -> str:
        row = AgentSession.objects.get(pk=session.pk)
        seen.append((row.worker, row.heartbeat_at))
        return "NO_EXTRACTIONS"

    session_process(session.id, llm=ScriptedLLM([reply]))

    ((worker, heartbeat_at),) = seen
    assert worker == worker_identity() and heartbeat_at is not None
