"""Reads of the review queue (docs/consolidation.md#the-review-queue-and-disputes): pairs consolidation
set aside, and promotion proposals.

Every function takes the acting ``Principal``; rows come through ``access_filter`` and the projects
the principal reaches, so another organization's review item is a ``NotFound`` (a 404) exactly like
a missing one.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Q, QuerySet

from accounts.access import Principal, access_filter, reachable_projects
from accounts.models import Project
from consolidation.models import ReviewItem
from consolidation.promotion.selectors import promotion_reach_q
from reasoningbank.errors import InvalidInput, NotFound

REVIEW_STATUSES = tuple(status for status, _ in ReviewItem.STATUS_CHOICES)


def review_list(
    principal: Principal,
    *,
    project: Project | None = None,
    status: str | None = ReviewItem.STATUS_PENDING,
    kinds: Sequence[str] | None = None,
) -> QuerySet[ReviewItem]:
    """Review items of the projects the principal reaches, and promotion proposals in its reach
    (``consolidation.promotion.selectors.promotion_reach_q``), newest first: pending ones by default,
    ``status=None`` for every status; ``kinds`` keeps only those kinds. A ``project`` keeps that
    project's pairs."""
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
