"""No organization holds more than its share of the worker (docs/security/worker-fairness.md).

The worker runs two kinds of slow task: a session's distillation and a consolidation run, each for one
organization, each seconds to minutes long. Without a rule, one organization that hands in a hundred
sessions fills every slot and another organization's session waits behind all of them. Each kind
registers here how to find its running and its waiting work (``slow_work_register``, at start-up: the
kernel knows no app), and its claim goes through ``slow_work_claim``:

* under the organization's lock, the share (``fair_share_policy.share_admits``, ``WORKER_ORG_CONCURRENCY``)
  decides whether the task starts; if not, the claim does nothing and the work stays queued — the
  task gives its slot back at once instead of holding it while it waits;
* when a slow task ends it hands the slot on (``slow_work_hand_on``): the next in line, fairly, is
  queued — usually another organization's, or the deferred work of the one that just finished;
* the work sweep (every minute) hands on whatever waited more than a minute, so deferred work is never
  lost even if the task that should have handed it on died.

A task that started runs to its end: nothing is preempted, so another organization's work waits at most
for the first running task to end (a distillation: seconds; a consolidation run: up to its timeout).
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
WAITING_READ_MAX = 2000  # waiting items read per hand-on: enough to find every waiting organization's oldest


@dataclass(frozen=True)
class SlowWork:
    """One kind of slow task: its rows running now, its rows waiting for a worker (queued and due, with
    the field that orders them), and how to queue a task for one of them."""

    kind: str
    running: Callable[[], Any]  # () -> QuerySet with organization_id
    waiting: Callable[[datetime], Any]  # (now) -> QuerySet with organization_id, pk and ``since``
    since: str
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


def slow_work_claim(organization_id: int, claim: Callable[[], T | None]) -> T | None:
    """``claim()`` — the kind's own conditional update to "running" — if the organization's share lets
    a task start now; None (deferred: the work stays queued) if not. Under the organization's lock, so
    that two workers cannot both start its last allowed task."""
    with transaction.atomic():
        lock_in_transaction(f"worker-share-{organization_id}")
        admitted = share_admits(
            organization_id,
            running=_running_by_organization(),
            waiting=_waiting_organizations(timezone.now()),
            cap=int(settings.WORKER_ORG_CONCURRENCY),
        )
        if not admitted:
            logger.info("deferred: organization %s has its share of the worker while others wait", organization_id)
            return None
        return claim()


def slow_work_hand_on(*, limit: int = 1, waited_at_least: float = 0, after: int | None = None) -> int:
    """Queue the next ``limit`` items in line (one per organization, fair order: ``after`` is the
    organization whose task just ended, served last among equals); only items that have waited
    ``waited_at_least`` seconds (the sweep's safety net leaves the fresh ones to their own task).
    A task for an item that already has one does nothing (claims are conditional). Never raises: a
    failed hand-on is made good by the sweep."""
    try:
        now = timezone.now()
        cutoff = now - timedelta(seconds=waited_at_least)
        waiting: list[Waiting] = []
        for work in _KINDS.values():
            rows = work.waiting(now).filter(**{f"{work.since}__lte": cutoff}).order_by(work.since)
            for pk, organization_id, since in rows.values_list("pk", "organization_id", work.since)[:WAITING_READ_MAX]:
                waiting.append(Waiting(organization_id, since, work.kind, str(pk)))
        if not waiting:
            return 0
        chosen = next_in_line(
            waiting,
            running=_running_by_organization(),
            cap=int(settings.WORKER_ORG_CONCURRENCY),
            limit=limit,
            just_served=after,
        )
        for item in chosen:
            _KINDS[item.kind].enqueue(item.item_id)
        return len(chosen)
    except DatabaseError as exc:
        logger.warning("the next slow task was not handed on (the sweep will): %s", exc)
        return 0
