"""Each organization's share of the worker, as plain values: may an organization's slow task start now,
and whose waiting work goes next when a slot frees (docs/security/worker-fairness.md).

The rule: an organization runs at most ``cap`` slow tasks at once (a session's distillation, a
consolidation run) while another organization has slow work waiting that it may start; with nobody
else waiting, it may use every free slot — a service with one busy tenant is not slowed down for a
fairness nobody needs. A task beyond the share does not start: it is deferred (its work stays queued)
and handed on when a slot frees, so it never sits in a worker slot waiting for its own turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract


@dataclass(frozen=True)
class Waiting:
    """One waiting item of slow work: whose, since when, of which kind, which."""

    organization_id: int
    since: datetime
    kind: str
    item_id: str


def share_admits(organization_id: int, *, running: Mapping[int, int], waiting: Iterable[int], cap: int) -> bool:
    """May a slow task of ``organization_id`` start, given each organization's running count and the
    organizations with work waiting? Below its cap, yes; at or above it, only while no other
    organization that is itself below its cap waits (one that is at its cap could not use the slot)."""
    if running.get(organization_id, 0) < cap:
        return True
    return not any(other != organization_id and running.get(other, 0) < cap for other in waiting)


def next_in_line(
    waiting: Sequence[Waiting],
    *,
    running: Mapping[int, int],
    cap: int,
    limit: int,
    just_served: int | None = None,
) -> list[Waiting]:
    """Up to ``limit`` items to hand a free slot to, one per organization: each organization's oldest
    waiting item, the organizations the share admits first and among them those running the least —
    the organization ``just_served`` (whose task just ended) counting as one more, so that turns go round
    — then the longest waiting. Organizations the share holds back come after (their task is deferred
    again, at no cost, if one that is admitted takes the slot first)."""
    oldest: dict[int, Waiting] = {}
    for item in waiting:
        current = oldest.get(item.organization_id)
        if current is None or (item.since, item.item_id) < (current.since, current.item_id):
            oldest[item.organization_id] = item
    organizations = list(oldest)

    def order(item: Waiting) -> tuple[bool, int, datetime, str]:
        admitted = share_admits(item.organization_id, running=running, waiting=organizations, cap=cap)
        load = running.get(item.organization_id, 0) + (item.organization_id == just_served)
        return (not admitted, load, item.since, item.item_id)

    return sorted(oldest.values(), key=order)[: max(limit, 0)]
