"""No organization holds more than its share of the worker (docs/security/worker-fairness.md).

The worker runs two kinds of slow task: a session's distillation and a consolidation run, each for one
organization, each seconds to minutes long. Without a rule, one organization that hands in a hundred
sessions fills every slot and another organization's session waits behind all of them. Each kind
registers here how to find its running and its waiting work (``slow_work_register``, at start-up: the
kernel knows no app), and its claim goes through ``slow_work_claim``:

* under the organization's lock, the share (``fair_share_policy.share_admits``, ``WORKER_ORG_CONCURRENCY``)
  decides whether the task starts; if not, the claim does nothing and the work stays queued — the
  task gives its slot back at once instead of holding it while it waits — and the deferral is written
  down as a django-q2 schedule that queues the task again in ``DEFER_SECONDS``;
* when a slow task ends it hands the slot on (``slow_work_hand_on``): the next deferred item in line,
  fairly, has its schedule taken and its task queued at once;
* a deferred item whose hand-on never came (the task that should have handed it on died) is queued by
  its own schedule: nothing deferred is lost.

Only deferred items are handed on: an item whose task is still in the queue will be reached by it, and
a second task would only find it taken. A task that started runs to its end: nothing is preempted, so
another organization's work waits at most for the first running task to end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Count
from django.utils import timezone

from reasoningbank.db_locks import lock_in_transaction
from reasoningbank.fair_share_policy import Waiting, next_in_line, share_admits

logger = logging.getLogger(__name__)

T = TypeVar("T")
DEFER_SECONDS = 60  # a deferred item's own schedule: the hand-on normally comes long before
DEFERRED_PREFIX = "deferred "  # the schedules' names: "deferred <kind> <organization id> <item id>"
DEFERRED_READ_MAX = 2000  # deferred items read per hand-on


@dataclass(frozen=True)
class SlowWork:
    """One kind of slow task: its rows running now, its rows waiting for a worker (queued and due), the
    task that works on one (its dotted path) and how to queue it now."""

    kind: str
    running: Callable[[], Any]  # () -> QuerySet with organization_id
    waiting: Callable[[datetime], Any]  # (now) -> QuerySet with organization_id
    task: str
    enqueue: Callable[[str], None]


_KINDS: dict[str, SlowWork] = {}


def slow_work_register(work: SlowWork) -> None:
    """Called from an app's ``ready()``; registering a kind again replaces it (test reloads)."""
    _KINDS[work.kind] = work


def _running_by_organization() -> dict[int, int]:
    counts: dict[int, int] = {}
    for work in _KINDS.values():
        for row in work.running().values("organization_id").annotate(n=Count("pk")).order_by():
            counts[row["organization_id"]] = counts.get(row["organization_id"], 0) + row["n"]
    return counts


def slow_work_running_organizations() -> set[int]:
    """The organizations with slow work running now: their queued work is waiting its turn, not lost."""
    return set(_running_by_organization())


def _waiting_organizations(now: datetime) -> set[int]:
    found: set[int] = set()
    for work in _KINDS.values():
        found.update(work.waiting(now).order_by().values_list("organization_id", flat=True).distinct()[:1000])
    return found


def _deferred_name(kind: str, organization_id: int, item_id: str) -> str:
    return f"{DEFERRED_PREFIX}{kind} {organization_id} {item_id}"


def slow_work_claim(kind: str, item_id: str, organization_id: int, claim: Callable[[], T | None]) -> T | None:
    """``claim()`` — the kind's own conditional update to "running" — if the organization's share lets
    a task start now; None (deferred: the work stays queued, its deferral written down) if not. Under
    the organization's lock, so that two workers cannot both start its last allowed task."""
    from django_q.models import Schedule

    name = _deferred_name(kind, organization_id, item_id)
    with transaction.atomic():
        lock_in_transaction(f"worker-share-{organization_id}")
        admitted = share_admits(
            organization_id,
            running=_running_by_organization(),
            waiting=_waiting_organizations(timezone.now()),
            cap=int(settings.WORKER_ORG_CONCURRENCY),
        )
        if admitted:
            claimed = claim()
            if claimed:
                Schedule.objects.filter(name=name).delete()  # it got its turn another way
            return claimed
        Schedule.objects.update_or_create(
            name=name,
            defaults={
                "func": _KINDS[kind].task,
                "args": repr((item_id,)),
                "schedule_type": Schedule.ONCE,
                "next_run": timezone.now() + timedelta(seconds=DEFER_SECONDS),
                "cluster": settings.Q_CLUSTER["name"],
            },
        )
    logger.info("deferred %s %s: organization %s has its share of the worker while others wait", kind, item_id,
                organization_id)  # fmt: skip
    return None


def slow_work_hand_on(*, limit: int = 1, after: int | None = None) -> int:
    """Queue the next ``limit`` deferred items in line now (one per organization, fair order: ``after``
    is the organization whose task just ended, served last among equals). Never raises: an item whose
    hand-on fails is queued by its own schedule."""
    from django_q.models import Schedule

    try:
        deferred: dict[str, int] = {}
        waiting: list[Waiting] = []
        rows = Schedule.objects.filter(name__startswith=DEFERRED_PREFIX).order_by("next_run", "id")
        for pk, name, next_run in rows.values_list("pk", "name", "next_run")[:DEFERRED_READ_MAX]:
            kind, organization_id, item_id = name.removeprefix(DEFERRED_PREFIX).split(" ")
            if kind in _KINDS:
                deferred[name] = pk
                waiting.append(Waiting(int(organization_id), next_run, kind, item_id))
        chosen = next_in_line(
            waiting,
            running=_running_by_organization(),
            cap=int(settings.WORKER_ORG_CONCURRENCY),
            limit=limit,
            just_served=after,
        )
        handed = 0
        for item in chosen:
            name = _deferred_name(item.kind, item.organization_id, item.item_id)
            if Schedule.objects.filter(pk=deferred[name]).delete()[0]:  # taken here, not by a second hand-on
                _KINDS[item.kind].enqueue(item.item_id)
                handed += 1
        return handed
    except DatabaseError as exc:
        logger.warning("the next deferred task was not handed on (its own schedule will queue it): %s", exc)
        return 0
