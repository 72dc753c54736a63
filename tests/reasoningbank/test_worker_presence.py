"""Each worker's own heartbeat (reasoningbank/worker_presence.py): with two workers on two machines the
system page shows both, not whichever ran the minute's heartbeat task (docs/operations.md)."""

from __future__ import annotations

import inspect
import socket
import subprocess
import sys
from datetime import timedelta
from typing import Any

import django_q.cluster
import django_q.scheduler
import pytest
from django.utils import timezone
from django_q.brokers import get_broker

from reasoningbank.models import WorkerHeartbeat
from reasoningbank.processes import worker_identity
from reasoningbank.services import worker_presence_key, worker_presence_record
from reasoningbank.worker_presence import worker_presence_install


def test_django_q2_s_sentinel_still_calls_the_scheduler_by_its_module_name_every_cycle() -> None:
    """The wrapper replaces ``django_q.cluster.scheduler``: it only beats while the guard loop calls that name."""
    assert "scheduler(broker=self.broker)" in inspect.getsource(django_q.cluster.Sentinel.guard)


@pytest.mark.django_db
def test_a_worker_stamps_its_own_row_each_time_its_sentinel_runs_the_scheduler(monkeypatch: Any) -> None:
    monkeypatch.setattr(django_q.cluster, "scheduler", django_q.cluster.scheduler)  # put back afterwards
    # the scheduler closes this thread's connection first (stale ones, in a sentinel): the test's transaction
    monkeypatch.setattr(django_q.scheduler, "close_old_django_connections", lambda: None)
    worker_presence_install()
    worker_presence_install()  # once only, however often the apps load

    django_q.cluster.scheduler(broker=get_broker())

    beat = WorkerHeartbeat.objects.get(cluster=worker_presence_key(worker_identity()))
    assert beat.cluster == f"reasoningbank@{socket.gethostname()}/{beat.pid}"
    assert (timezone.now() - beat.beat_at).total_seconds() < 60


def _dead_pid() -> int:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(finished.stdout)


@pytest.mark.django_db
def test_a_gone_worker_of_this_machine_and_one_silent_for_a_day_are_forgotten_another_machine_s_kept() -> None:
    host = socket.gethostname()
    now = timezone.now()
    pid = _dead_pid()
    dead = WorkerHeartbeat.objects.create(
        cluster=worker_presence_key(f"{host}/{pid}"), beat_at=now - timedelta(minutes=5), host=host, pid=pid
    )
    elsewhere = WorkerHeartbeat.objects.create(
        cluster=worker_presence_key("machine-b/4242"), beat_at=now - timedelta(minutes=5), host="machine-b", pid=4242
    )
    silent = WorkerHeartbeat.objects.create(
        cluster=worker_presence_key("machine-c/77"), beat_at=now - timedelta(days=2), host="machine-c", pid=77
    )
    service_row = WorkerHeartbeat.objects.create(cluster="reasoningbank", beat_at=now - timedelta(days=3))

    mine = worker_presence_record(now=now)

    kept = set(WorkerHeartbeat.objects.values_list("cluster", flat=True))
    assert kept == {mine.cluster, elsewhere.cluster, service_row.cluster}
    assert dead.cluster not in kept and silent.cluster not in kept


def test_a_long_host_name_is_cut_to_the_key_s_100_characters_keeping_the_pid() -> None:
    key = worker_presence_key(f"{'h' * 300}/123456")
    assert len(key) == 100
    assert key.startswith("reasoningbank@hhh") and key.endswith("/123456")
