"""Runs whose worker is gone: a queued run nobody picked up and a running run whose worker stopped
beating (or whose process is known dead) are failed after a bounded time, with an error that says
why, by the sweep and when a new run is requested, so they never block their project for long.
Timestamps are back-dated instead of waiting; the heartbeat itself is driven beat by beat."""

from __future__ import annotations

import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from consolidation.models import ConsolidationRun
from consolidation.runs import consolidation_request, run_options_validate, runs_recover_stale
from consolidation.tasks import consolidation_scheduler_tick, work_sweep
from reasoningbank.errors import Conflict
from reasoningbank.work_heartbeat import worker_identity
from tests.factories import ConsolidationRunFactory, ProjectFactory

RUNS = "/api/v1/consolidation/runs"


@pytest.fixture(autouse=True)
def no_queue(monkeypatch):
    """Nothing is handed to django-q: the tests play the dead worker."""
    monkeypatch.setattr("consolidation.runs.consolidation_enqueue", lambda run: None)
    monkeypatch.setattr("consolidation.contracts.consolidation_enqueue", lambda run: None)


def queued_run(project, *, minutes_ago: float) -> ConsolidationRun:
    return ConsolidationRunFactory(project=project, created_at=timezone.now() - timedelta(minutes=minutes_ago))


def running_run(project, *, heartbeat_seconds_ago: float, worker: str = "") -> ConsolidationRun:
    at = timezone.now() - timedelta(seconds=heartbeat_seconds_ago)
    return ConsolidationRunFactory(
        project=project,
        status=ConsolidationRun.STATUS_RUNNING,
        created_at=at - timedelta(minutes=1),
        started_at=at,
        heartbeat_at=at,
        phase="synthesize",
        worker=worker,
    )


def exited_pid() -> int:
    """The pid of a process that has come and gone (reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def reloaded(run: ConsolidationRun) -> ConsolidationRun:
    return ConsolidationRun.objects.get(pk=run.pk)


def test_the_scheduler_tick_fails_a_run_no_worker_picked_up_within_the_queue_timeout(cast, settings):
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 15 * 60
    stuck = queued_run(cast.project_a, minutes_ago=16)
    waiting = queued_run(cast.project_b, minutes_ago=5)

    consolidation_scheduler_tick()

    stuck, waiting = reloaded(stuck), reloaded(waiting)
    assert stuck.status == ConsolidationRun.STATUS_FAILED and stuck.finished_at is not None
    (error,) = stuck.errors
    assert "no worker picked this run up within 15 minutes" in error and "is the worker running?" in error
    assert waiting.status == ConsolidationRun.STATUS_QUEUED and waiting.errors == []


def test_the_queue_timeout_is_a_setting(cast, settings):
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 90
    stuck = queued_run(cast.project_a, minutes_ago=2)

    assert runs_recover_stale() == 1

    assert "within 1.5 minutes" in reloaded(stuck).errors[0]


def test_the_sweep_fails_a_running_run_whose_heartbeat_is_older_than_the_limit(cast, settings):
    settings.WORK_HEARTBEAT_STALE_AFTER = 45
    dead = running_run(cast.project_a, heartbeat_seconds_ago=50)  # beats every 10 s: five missed
    alive = running_run(cast.project_b, heartbeat_seconds_ago=20)

    work_sweep()

    dead, alive = reloaded(dead), reloaded(alive)
    assert dead.status == ConsolidationRun.STATUS_FAILED and dead.finished_at is not None
    assert "no heartbeat from its worker for 45 seconds" in dead.errors[0] and "re-run" in dead.errors[0]
    assert alive.status == ConsolidationRun.STATUS_RUNNING


def test_the_scheduler_tick_sweeps_too(cast, settings):
    settings.WORK_HEARTBEAT_STALE_AFTER = 45
    dead = running_run(cast.project_a, heartbeat_seconds_ago=120)

    consolidation_scheduler_tick()

    assert reloaded(dead).status == ConsolidationRun.STATUS_FAILED


def test_a_run_whose_worker_process_on_this_host_is_gone_is_failed_at_once(cast, settings):
    settings.WORK_HEARTBEAT_STALE_AFTER = 45
    gone = running_run(cast.project_a, heartbeat_seconds_ago=1, worker=f"{socket.gethostname()}/{exited_pid()}")
    mine = running_run(cast.project_b, heartbeat_seconds_ago=1, worker=worker_identity())
    elsewhere = ProjectFactory(organization=cast.org_a, slug="elsewhere")
    other_host = running_run(elsewhere, heartbeat_seconds_ago=1, worker=f"another-host/{exited_pid()}")

    assert runs_recover_stale() == 1

    gone = reloaded(gone)
    assert gone.status == ConsolidationRun.STATUS_FAILED and "its worker process died" in gone.errors[0]
    assert reloaded(mine).status == reloaded(other_host).status == ConsolidationRun.STATUS_RUNNING


def test_a_new_request_is_not_blocked_by_a_queued_run_already_past_the_bound(cast, agent, settings):
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 15 * 60
    stuck = queued_run(cast.project_a, minutes_ago=20)

    fresh = consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())

    assert fresh.status == ConsolidationRun.STATUS_QUEUED and fresh.pk != stuck.pk
    stuck = reloaded(stuck)
    assert stuck.status == ConsolidationRun.STATUS_FAILED and "no worker picked this run up" in stuck.errors[0]


def test_a_new_request_is_not_blocked_by_a_running_run_whose_worker_is_gone(cast, agent, settings):
    dead = running_run(cast.project_a, heartbeat_seconds_ago=30 * 60)

    fresh = consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())

    assert fresh.status == ConsolidationRun.STATUS_QUEUED
    assert reloaded(dead).status == ConsolidationRun.STATUS_FAILED


def test_a_queued_run_within_the_bound_still_blocks_and_the_conflict_says_when_it_gives_up(cast, agent, settings):
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 15 * 60
    waiting = queued_run(cast.project_a, minutes_ago=3)

    with pytest.raises(Conflict) as raised:
        consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())

    message = str(raised.value)
    assert waiting.id in message and "already queued" in message
    assert "failed if no worker picks it up within 15 minutes" in message
    assert reloaded(waiting).status == ConsolidationRun.STATUS_QUEUED


def test_a_request_only_recovers_runs_of_its_own_project(cast, agent, settings):
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 15 * 60
    foreign = queued_run(cast.project_b, minutes_ago=60)

    consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())

    assert reloaded(foreign).status == ConsolidationRun.STATUS_QUEUED, "another org's run is the tick's business"


def test_over_rest_a_stuck_run_is_failed_visibly_and_the_new_request_is_accepted(cast, token_client, settings):
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 15 * 60
    stuck = queued_run(cast.project_a, minutes_ago=20)
    client = token_client(cast.org_a)

    response = client.post(RUNS, {"project_id": "web-app"}, format="json")

    assert response.status_code == 202, response.json()
    detail = client.get(f"{RUNS}/{stuck.id}").json()
    assert detail["status"] == "failed" and "is the worker running?" in detail["errors"][0]


def test_the_dashboard_run_page_shows_why_a_stuck_run_failed(client, cast, settings):
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 15 * 60
    stuck = queued_run(cast.project_a, minutes_ago=20)
    consolidation_scheduler_tick()
    client.force_login(cast.bob)

    body = client.get(f"/consolidation/runs/{stuck.id}/").content.decode()

    assert "Failed" in body and "no worker picked this run up within 15 minutes" in body
    assert 'hx-trigger="every 2s"' not in body


def test_the_dashboard_says_how_long_a_queued_run_may_wait_for_a_worker(client, cast, settings):
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 15 * 60
    waiting = queued_run(cast.project_a, minutes_ago=2)
    client.force_login(cast.bob)

    body = client.get(f"/consolidation/runs/{waiting.id}/").content.decode()

    assert "Waiting for a worker" in body and "failed if none picks it up within 15 minutes" in body
