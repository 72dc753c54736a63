"""Aggregate reads for the dashboard: the overview's counts and charts, a memory's audit trail.

Every function takes the acting ``Principal`` and reads only rows that principal may see (the same
``memories_readable`` / ``session_list`` / ``disputed_list`` paths as the pages themselves).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, F, IntegerField, Q, QuerySet
from django.db.models.functions import Cast, Floor, Least, TruncWeek
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.models import AuditEvent
from memories.core.selectors import memories_readable
from memories.models import AgentSession, Memory
from memories.moderation.selectors import disputed_list
from memories.sessions.selectors import session_list

CONFIDENCE_BUCKETS = 10
WEEKS = 12


@dataclass(frozen=True)
class Bucket:
    label: str
    count: int
    title: str = ""


def memory_counts(principal: Principal) -> dict[str, list[Bucket]]:
    """Counts of readable memories by tier, kind, outcome and state (every choice listed, zeros too).
    Promotion proposals awaiting review show in their own state bucket only: they are no memories yet."""
    readable = memories_readable(principal)
    result: dict[str, list[Bucket]] = {}
    for field_name, choices in (
        ("state", Memory.STATE_CHOICES),
        ("tier", Memory.TIER_CHOICES),
        ("kind", Memory.KIND_CHOICES),
        ("outcome", Memory.OUTCOME_CHOICES),
    ):
        counted = readable if field_name == "state" else readable.filter(state__in=Memory.SETTLED_STATES)
        rows = dict(counted.values_list(field_name).annotate(n=Count("id")).order_by())
        result[field_name] = [Bucket(label, rows.get(value, 0), value) for value, label in choices]
    return result


def memory_total(principal: Principal) -> int:
    """Readable memories, active or archived (not the promotion proposals awaiting review)."""
    return memories_readable(principal).filter(state__in=Memory.SETTLED_STATES).count()


def confidence_histogram(principal: Principal) -> list[Bucket]:
    """Active memories in 10 confidence buckets [0, .1), [.1, .2) … [.9, 1.0] (1.0 joins the last)."""
    bucket = Least(Cast(Floor(F("confidence") * CONFIDENCE_BUCKETS), IntegerField()), CONFIDENCE_BUCKETS - 1)
    rows = dict(
        memories_readable(principal)
        .filter(state=Memory.STATE_ACTIVE)
        .annotate(bucket=bucket)
        .values_list("bucket")
        .annotate(n=Count("id"))
        .order_by()
    )
    step = 1 / CONFIDENCE_BUCKETS
    return [
        Bucket(f"{i * step:.1f}", rows.get(i, 0), f"{i * step:.1f}–{(i + 1) * step:.1f}")
        for i in range(CONFIDENCE_BUCKETS)
    ]


def memories_per_week(principal: Principal, *, weeks: int = WEEKS, now: datetime | None = None) -> list[Bucket]:
    """Memories created per ISO week (Monday start) for the last ``weeks`` weeks, oldest first."""
    now = timezone.localtime(now or timezone.now())
    this_monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    first = this_monday - timedelta(weeks=weeks - 1)
    rows = (
        memories_readable(principal)
        .filter(created_at__gte=first, state__in=Memory.SETTLED_STATES)
        .annotate(week=TruncWeek("created_at"))
        .values_list("week")
        .annotate(n=Count("id"))
        .order_by()
    )
    counts = {timezone.localtime(week).date(): n for week, n in rows}
    buckets = []
    for i in range(weeks):
        monday = (first + timedelta(weeks=i)).date()
        buckets.append(Bucket(monday.strftime("%d %b"), counts.get(monday, 0), f"week of {monday.isoformat()}"))
    return buckets


def session_status_counts(principal: Principal) -> list[Bucket]:
    rows = dict(session_list(principal).values_list("status").annotate(n=Count("id")).order_by())
    return [Bucket(label, rows.get(value, 0), value) for value, label in AgentSession.STATUS_CHOICES]


def open_disputes_count(principal: Principal) -> int:
    return disputed_list(principal).count()


def recent_activity(principal: Principal, *, limit: int = 20) -> QuerySet[AuditEvent]:
    return access_filter(AuditEvent, principal).order_by("-created_at", "-id")[:limit]


def memory_audit_trail(principal: Principal, memory: Memory, *, limit: int = 100) -> list[AuditEvent]:
    """Audit events about this memory: those that target it, plus the ones that name it as the
    other side (a resolved contradiction, a decided review), as a source restored by an un-merge or
    as a source of a promotion."""
    about = Q(target_type="memory", target_id=memory.id)
    about |= Q(verb__in=("contradiction.resolve", "review.decide"), data__other=memory.id)
    about |= Q(verb="memory.unmerge", data__restored__contains=[memory.id])
    # a new memory promoted from a pattern (the promotion ladder) names the memories it was seen in
    about |= Q(verb="memory.promote", data__sources__contains=[memory.id])
    return list(access_filter(AuditEvent, principal).filter(about).order_by("-created_at", "-id")[:limit])


def overview(principal: Principal) -> dict[str, Any]:
    """Everything the overview page shows, in one call."""
    total = memory_total(principal)
    return {
        "total": total,
        "counts": memory_counts(principal) if total else {},
        "histogram": confidence_histogram(principal) if total else [],
        "weekly": memories_per_week(principal) if total else [],
        "sessions": session_status_counts(principal),
        "open_disputes": open_disputes_count(principal),
        "activity": list(recent_activity(principal)),
    }
