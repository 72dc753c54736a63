"""django-q2's scheduler as two workers run it at once, each from its own sentinel, on one database
(docs/operations.md#several-machines-on-one-database): a due schedule fires once, not once per worker."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any

import django_q.scheduler
import pytest
from django.db import connection
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import OrmQ, Schedule


def _waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_a_due_schedule_fires_once_when_a_second_worker_s_scheduler_runs_while_the_first_fires_it(
    monkeypatch: Any,
) -> None:
    schedule = Schedule.objects.create(
        name="rb:test-once",
        func="math.floor",
        args="1",
        schedule_type=Schedule.MINUTES,
        minutes=1,
        repeats=-1,
        next_run=timezone.now() - timedelta(seconds=1),
    )
    firing, go = threading.Event(), threading.Event()
    original = django_q.scheduler.async_task

    def async_task(*args: Any, **kwargs: Any) -> Any:
        if not firing.is_set():  # the first worker, mid-way: it holds the schedule's row lock
            firing.set()
            go.wait(30)
        return original(*args, **kwargs)

    monkeypatch.setattr(django_q.scheduler, "async_task", async_task)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            django_q.scheduler.scheduler(broker=get_broker())
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    first = threading.Thread(target=worker)
    first.start()
    assert firing.wait(30)
    second = threading.Thread(target=worker)
    second.start()
    deadline = time.monotonic() + 30
    while _waiting_on_a_lock() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    blocked = _waiting_on_a_lock()
    go.set()
    first.join(60)
    second.join(60)

    assert errors == []
    assert blocked == 1, "the second scheduler did not wait for the first one's lock"
    assert OrmQ.objects.count() == 1
    schedule.refresh_from_db()
    assert schedule.next_run > timezone.now()
