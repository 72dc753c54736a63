"""Reads for memory quality: the quality report per project
(docs/consolidation.md#the-review-queue-and-disputes).

Rows come through ``access_filter``; the project is one the principal reaches
(``accounts.access.access_project``), so another organization's project is a 404 before it gets here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Count, QuerySet
from django.db.models.functions import TruncWeek
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.models import AuditEvent, Project
from consolidation.models import ReviewItem
from memories.models import Memory, MemoryLink
from memories.writes import NEAR_COPY, REJECTED_VERB

REPORT_WEEKS = 12
UNMERGE_VERB = "memory.unmerge"  # memories.moderation.services.memory_unmerge's audit row


@dataclass(frozen=True)
class QualityWeek:
    """One week (Monday to Sunday) of a project's quality figures."""

    start: date
    merged: int  # memories archived into another (duplicate merge or synthesis)
    rejected: int  # drafts the write gate refused as junk
    near_copies: int  # records answered with an existing memory instead of a second row
    unmerged: int  # consolidations undone by a moderator
    contradictions: int  # contradiction links made (by the judge or a moderator)
    reviews: int  # pairs with conflict cues set aside for review


@dataclass(frozen=True)
class QualityReport:
    project: Project
    generated_at: datetime
    memories: int  # every memory of the project ever stored, active or archived
    active: int
    duplicates: int  # archived as a duplicate of another
    consolidated: int  # archived into a synthesised memory
    open_contradictions: int
    waiting_for_review: int
    rejected: int
    rejected_by_reason: dict[str, int]
    near_copies: int
    unmerged: int
    weeks: list[QualityWeek] = field(default_factory=list)

    @property
    def duplicate_rate(self) -> float:
        """Share of the project's memories that were merged away as duplicates or into a synthesis."""
        return round((self.duplicates + self.consolidated) / self.memories, 4) if self.memories else 0.0


def _weekly(qs: QuerySet[Any], field_name: str, first: datetime) -> dict[date, int]:
    rows = (
        qs.filter(**{f"{field_name}__gte": first})
        .annotate(week=TruncWeek(field_name))
        .values_list("week")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return {timezone.localtime(week).date(): n for week, n in rows}


def quality_report(
    principal: Principal, project: Project, *, weeks: int = REPORT_WEEKS, now: datetime | None = None
) -> QualityReport:
    """The project's quality figures now, and per week for the last ``weeks`` weeks (oldest first).
    ``project`` must be one the principal reaches (``accounts.access.access_project``)."""
    now = timezone.localtime(now or timezone.now())
    memories = access_filter(Memory, principal).filter(project=project)
    states = dict(memories.values_list("state").annotate(n=Count("id")).order_by())
    archived = dict(
        memories.filter(state=Memory.STATE_ARCHIVED).values_list("archived_reason").annotate(n=Count("id")).order_by()
    )
    contradictions = access_filter(MemoryLink, principal).filter(
        kind=MemoryLink.KIND_CONTRADICTS, source__project=project
    )
    reviews = access_filter(ReviewItem, principal).filter(project=project)
    audit = access_filter(AuditEvent, principal)
    gated = audit.filter(verb=REJECTED_VERB, data__project=project.id)
    by_reason = {reason: n for reason, n in gated.values_list("data__reason").annotate(n=Count("id")).order_by()}
    unmerges = audit.filter(verb=UNMERGE_VERB, target_type="memory", target_id__in=memories.values("id"))
    merged_away = memories.filter(
        state=Memory.STATE_ARCHIVED,
        archived_reason__in=[Memory.ARCHIVED_DUPLICATE, Memory.ARCHIVED_CONSOLIDATED],
    )

    this_monday = (now - timedelta(days=now.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    first = this_monday - timedelta(weeks=weeks - 1)
    series = {
        "merged": _weekly(merged_away, "archived_at", first),
        "rejected": _weekly(gated.exclude(data__reason=NEAR_COPY), "created_at", first),
        "near_copies": _weekly(gated.filter(data__reason=NEAR_COPY), "created_at", first),
        "unmerged": _weekly(unmerges, "created_at", first),
        "contradictions": _weekly(contradictions, "created_at", first),
        "reviews": _weekly(reviews, "created_at", first),
    }
    rows = []
    for i in range(weeks):
        monday = (first + timedelta(weeks=i)).date()
        rows.append(QualityWeek(start=monday, **{name: counts.get(monday, 0) for name, counts in series.items()}))
    return QualityReport(
        project=project,
        generated_at=now,
        memories=sum(states.values()),
        active=states.get(Memory.STATE_ACTIVE, 0),
        duplicates=archived.get(Memory.ARCHIVED_DUPLICATE, 0),
        consolidated=archived.get(Memory.ARCHIVED_CONSOLIDATED, 0),
        open_contradictions=contradictions.filter(resolved_at__isnull=True).count(),
        waiting_for_review=reviews.filter(status=ReviewItem.STATUS_PENDING).count(),
        rejected=sum(n for reason, n in by_reason.items() if reason != NEAR_COPY),
        rejected_by_reason={reason: n for reason, n in sorted(by_reason.items()) if reason != NEAR_COPY},
        near_copies=by_reason.get(NEAR_COPY, 0),
        unmerged=unmerges.count(),
        weeks=rows,
    )
