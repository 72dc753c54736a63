"""``manage.py setup_schedules`` on several machines starting at once against one database
(docs/operations.md#several-machines-on-one-database): each schedule exists once, so each fires once
per period."""

from __future__ import annotations

import contextlib
import io
import threading
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django_q.models import Schedule

from reasoningbank.schedules import QUEUE_PROBE_SCHEDULE, schedule_specs


def _setup_schedules(errors: list[BaseException]) -> None:
    try:
        call_command("setup_schedules", stdout=io.StringIO())
    except BaseException as exc:
        errors.append(exc)
    finally:
        connection.close()  # this thread's own connection


@pytest.mark.django_db(transaction=True)
def test_two_machines_setting_up_the_schedules_at_once_create_each_schedule_once(monkeypatch: Any) -> None:
    Schedule.objects.all().delete()
    # both wait here before their first insert: each has looked for the schedule and found none
    # (without a lock both then insert it). The wait gives up after a few seconds, when only one can come.
    barrier = threading.Barrier(2, timeout=5)
    saved = threading.local()
    original_save = Schedule.save

    def save(self: Schedule, *args: Any, **kwargs: Any) -> None:
        if not getattr(saved, "once", False):
            saved.once = True
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait()
        original_save(self, *args, **kwargs)

    monkeypatch.setattr(Schedule, "save", save)
    errors: list[BaseException] = []
    machines = [threading.Thread(target=_setup_schedules, args=(errors,)) for _ in range(2)]
    for machine in machines:
        machine.start()
    for machine in machines:
        machine.join(60)

    assert errors == []
    names = list(Schedule.objects.filter(name__startswith="rb:").values_list("name", flat=True))
    assert names.count(QUEUE_PROBE_SCHEDULE) == 1
    assert sorted(names) == sorted(spec.name for spec in schedule_specs())


@pytest.mark.django_db
def test_a_schedule_left_twice_by_an_earlier_race_is_kept_once() -> None:
    call_command("setup_schedules", stdout=io.StringIO())
    twin = Schedule.objects.get(name=QUEUE_PROBE_SCHEDULE)
    twin.pk = None
    twin.save()

    call_command("setup_schedules", stdout=io.StringIO())

    assert Schedule.objects.filter(name=QUEUE_PROBE_SCHEDULE).count() == 1
