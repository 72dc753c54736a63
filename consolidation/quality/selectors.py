"""Reads for memory quality (issue 17 item 6): the review queue and the quality report per project.

Every function takes the acting ``Principal``; rows come through ``access_filter`` and the projects
the principal reaches, so another organization's review item or project is a ``NotFound`` (a 404)
exactly like a missing one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncWeek
from django.utils import timezone

from accounts.access import Principal, access_filter, reachable_projects
from accounts.models import AuditEvent, Project
from consolidation.models import ReviewItem
from consolidation.promotion.selectors import promotion_reach_q
from memories.gate import NEAR_COPY
from memories.models import Memory, MemoryLink
from memories.services import REJECTED_VERB
from reasoningbank.errors import InvalidInput, NotFound

REPORT_WEEKS = 12
UNMERGE_VERB = "memory.unmerge"  # memories.moderation.memory_unmerge's audit row
REVIEW_STATUSES = tuple(status for status, _ in ReviewItem.STATUS_CHOICES)


# --- the review queue ----------------------------------------------------------------------------------


def review_list(
    principal: Principal,
    *,
    project: Project | None = None,
    status: str | None = ReviewItem.STATUS_PENDING,
    kinds: Sequence[str] | None = None,
) -> QuerySet[ReviewItem]:
    """Review items of the projects the principal reaches, and promotion proposals in its reach
    (``consolidation.promotion.selectors.promotion_reach_q``), newest first: pending ones by default, ``status=None``
    for every status; ``kinds`` keeps only those kinds. A ``project`` keeps that project's pairs."""
    if status is not None and status not in REVIEW_STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(REVIEW_STATUSES)} (got {status!r})", field="status")
    qs = access_filter(ReviewItem, principal).filter(
        Q(project__in=reachable_projects(principal)) | promotion_reach_q(principal)
    )
    if project is not None:
        qs = qs.filter(project=project)
    if status is not None:
        qs = qs.filter(status=status)
    if kinds is not None:
        qs = qs.filter(kind__in=list(kinds))
    return qs.select_related("first", "first__team", "second", "project").order_by("-created_at", "-id")


def promotion_list(principal: Principal, *, status: str | None = ReviewItem.STATUS_PENDING) -> QuerySet[ReviewItem]:
    """Promotion proposals the principal may see, newest first (pending ones by default)."""
    return review_list(principal, status=status, kinds=[ReviewItem.KIND_PROMOTION])


def review_get(principal: Principal, item_id: str | int) -> ReviewItem:
    """One review item the principal may see, whatever its status; anything else is a NotFound."""
    text = str(item_id)
    if not (text.isascii() and text.isdigit() and len(text) < 19):
        raise NotFound(f"review item {text!r} not found", field="review_id")
    item = review_list(principal, status=None).filter(pk=int(text)).first()
    if item is None:
        raise NotFound(f"review item {text!r} not found", field="review_id")
    return item


# --- the quality report --------------------------------------------------------------------------------


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
