"""Reads of the review queue (docs/consolidation.md#the-review-queue-and-disputes): pairs consolidation
set aside, and promotion proposals.

Every function takes the acting ``Principal``; rows come through ``access_filter`` and the projects
the principal reaches, so another organization's review item is a ``NotFound`` (a 404) exactly like
a missing one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from accounts.access import Principal, access_filter, reachable_projects
from accounts.models import Project
from consolidation.models import ConsolidationRun, ReviewItem
from consolidation.promotion.selectors import promotion_reach_q
from memories.models import Memory
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


# the pairs a run noted without a verdict because no LLM could judge them, as the judge phase notes them
# (consolidation/phases/judge.py); those with conflict cues are review items already ("needs review")
WAITING_SHOWN = 10  # pairs listed per project; the count says how many there are


@dataclass(frozen=True)
class PairsWaitingForLlm:
    """The pairs of one project its latest run could not check for contradictions: no LLM was configured."""

    run: ConsolidationRun
    count: int
    shown: list[tuple[Memory, Memory, float]]  # the first WAITING_SHOWN: older, newer, similarity


def pairs_waiting_for_llm(principal: Principal, *, project: Project | None = None) -> list[PairsWaitingForLlm]:
    """Per project in reach (or ``project``), the pairs its latest completed run left waiting for an LLM —
    what a run's warning "N pairs wait for an LLM" counts, which no person is asked to decide. A later run
    with an LLM judges them, and its own record has none waiting."""
    projects = reachable_projects(principal) if project is None else [project]
    latest = (
        access_filter(ConsolidationRun, principal)
        .filter(project__in=projects, dry_run=False, status=ConsolidationRun.STATUS_COMPLETED)
        .order_by("project_id", "-finished_at", "-pk")
        .distinct("project_id")
        .select_related("project")
        .only("id", "project", "preview", "finished_at")
    )
    waiting = [
        (run, [p for p in (run.preview or {}).get("judge_pairs", []) if "verdict" not in p and "cues" not in p])
        for run in latest
    ]
    waiting = [(run, pairs) for run, pairs in waiting if pairs]
    ids = {p[side] for _, pairs in waiting for p in pairs[:WAITING_SHOWN] for side in ("older", "newer")}
    memories = access_filter(Memory, principal).filter(state=Memory.STATE_ACTIVE).in_bulk(list(ids))
    return [
        PairsWaitingForLlm(
            run=run,
            count=len(pairs),
            shown=[
                (memories[p["older"]], memories[p["newer"]], float(p["similarity"]))
                for p in pairs[:WAITING_SHOWN]
                if p["older"] in memories and p["newer"] in memories
            ],
        )
        for run, pairs in sorted(waiting, key=lambda w: w[0].project.slug if w[0].project else "")
    ]
