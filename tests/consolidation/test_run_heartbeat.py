"""A running consolidation run's heartbeat: stamped by a thread of the worker process while the run
executes (a phase may wait minutes on an LLM), naming the process; and a run a sweep failed while it
ran stops before its next phase instead of finishing work its project was released from."""

from __future__ import annotations

import time

import pytest

from consolidation.models import ConsolidationRun
from consolidation.runs import consolidation_execute, consolidation_request, run_options_validate
from reasoningbank.ai.llm import NoLLM
from reasoningbank.work_heartbeat import WorkHeartbeat, worker_identity
from tests.factories import ConsolidationRunFactory


def queued(principal, project) -> ConsolidationRun:
    return consolidation_request(principal=principal, project=project, options=run_options_validate())


@pytest.mark.django_db(transaction=True)  # the heartbeat thread has its own connection: it sees committed rows
def test_the_heartbeat_of_a_run_moves_while_a_phase_is_still_busy(cast, agent, settings, monkeypatch):
    settings.WORK_HEARTBEAT_INTERVAL = 0.02
    run = queued(agent, cast.project_a)
    beats = []

    def slow_scan(state):
        """A phase that only returns once the heartbeat has moved past the claim's stamp (or gives up)."""
        claimed = ConsolidationRun.objects.get(pk=state.run.pk).heartbeat_at
        for _ in range(500):
            latest = ConsolidationRun.objects.get(pk=state.run.pk).heartbeat_at
            if latest > claimed:
                beats.append((claimed, latest))
                break
            time.sleep(0.02)
        return {}

    monkeypatch.setattr("consolidation.phases.scan.memories_load", slow_scan)

    finished = consolidation_execute(run.id, llm=NoLLM())

    assert finished is not None and finished.status == ConsolidationRun.STATUS_COMPLETED, finished.errors
    assert beats, "the heartbeat never moved while the phase ran"
    assert finished.worker == worker_identity()


def test_a_run_failed_by_a_sweep_while_it_runs_stops_before_its_next_phase(cast, agent, monkeypatch):
    run = queued(agent, cast.project_a)
    reached = []

    def scan_then_swept(state):
        ConsolidationRun.objects.filter(pk=state.run.pk).update(status=ConsolidationRun.STATUS_FAILED)  # the sweep
        assert state.heartbeat.beat_once() is False  # the next beat finds the run is no longer running
        return {}

    monkeypatch.setattr("consolidation.phases.scan.memories_load", scan_then_swept)
    monkeypatch.setattr(
        "consolidation.phases.duplicates.duplicates_merge", lambda state, memories: reached.append("duplicates")
    )

    finished = consolidation_execute(run.id, llm=NoLLM())

    assert finished.status == ConsolidationRun.STATUS_FAILED and reached == []
    assert "failed while it ran" in finished.errors[0]


def test_a_beat_on_a_running_row_stamps_it_and_one_on_an_invisible_row_is_not_a_loss(cast):
    run = ConsolidationRunFactory(project=cast.project_a, status=ConsolidationRun.STATUS_RUNNING)
    heartbeat = WorkHeartbeat(ConsolidationRun, run.id, interval=10)

    assert heartbeat.beat_once() is True
    assert ConsolidationRun.objects.get(pk=run.pk).heartbeat_at is not None
    assert WorkHeartbeat(ConsolidationRun, "run_missing", interval=10).beat_once() is True
    assert not heartbeat.lost
