"""Reads for institutional promotion (docs/consolidation.md#institutional-promotion): what the
per-organization pass looks at, and the promotion proposals of the review queue with their sources.

The pass reads one organization's rows only (``access_filter`` with the org): memories of another
organization never count, whatever their similarity. The queue's reads take the acting ``Principal``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from accounts.access import Principal, access_filter
from accounts.models import Organization
from consolidation.models import ReviewItem
from memories.models import Memory, MemoryLink
from memories.reads import memories_readable, reach_for

ORG_TARGET = "org"
# the proposals whose sources are spoken for at their target: waiting for a decision, or promoted
LIVE_STATUSES = (ReviewItem.STATUS_PENDING, ReviewItem.STATUS_ACCEPTED)


def team_target(team_id: int) -> str:
    return f"team:{team_id}"


@dataclass(frozen=True)
class CandidateRow:
    """An active procedural memory of a project or a team, with what the criteria need."""

    id: str
    project_id: int | None
    team_id: int | None  # the memory's own team (team scope) or its project's team
    confidence: float
    usage_count: int
    embedding: Any


def promotion_candidates(organization: Organization, *, min_confidence: float) -> list[CandidateRow]:
    """The org's active procedural memories of project or team scope that are trusted enough to count
    (``min_confidence``) and have an embedding. Org-scope memories are already institutional."""
    rows = (
        access_filter(Memory, organization)
        .filter(
            state=Memory.STATE_ACTIVE,
            kind=Memory.KIND_PROCEDURAL,
            confidence__gte=min_confidence - 1e-9,
            embedding__isnull=False,
        )
        .exclude(project__isnull=True, team__isnull=True)
        .values_list("id", "project_id", "project__team_id", "team_id", "confidence", "usage_count", "embedding")
        .order_by("id")
    )
    return [
        CandidateRow(
            id=mid,
            project_id=project_id,
            team_id=project_team_id if project_id else team_id,
            confidence=confidence,
            usage_count=usage_count,
            embedding=embedding,
        )
        for mid, project_id, project_team_id, team_id, confidence, usage_count, embedding in rows
    ]


def promotion_scope_memories(organization: Organization) -> dict[str, list[Any]]:
    """Embeddings of the active memories already at team or org scope, by target (``team:<id>`` or
    ``org``): a group one of them already says is known there and is not proposed again."""
    known: dict[str, list[Any]] = defaultdict(list)
    rows = (
        access_filter(Memory, organization)
        .filter(state=Memory.STATE_ACTIVE, project__isnull=True, embedding__isnull=False)
        .values_list("team_id", "embedding")
    )
    for team_id, embedding in rows:
        known[team_target(team_id) if team_id else ORG_TARGET].append(embedding)
    return known


def promotion_source_keys(organization: Organization) -> set[str]:
    """Every source set ever proposed (pending, promoted or rejected): each is proposed once."""
    return set(
        access_filter(ReviewItem, organization)
        .filter(kind=ReviewItem.KIND_PROMOTION)
        .values_list("source_key", flat=True)
    )


def promotion_taken_sources(organization: Organization) -> dict[str, set[str]]:
    """Source memory ids of the pending and accepted proposals, by target: a group with one of them is
    already proposed or promoted there (a new project joining it does not make it new knowledge)."""
    proposals = access_filter(ReviewItem, organization).filter(kind=ReviewItem.KIND_PROMOTION, status__in=LIVE_STATUSES)
    targets = {
        memory_id: team_target(team_id) if team_id else ORG_TARGET
        for memory_id, team_id in proposals.values_list("first_id", "first__team_id")
    }
    taken: dict[str, set[str]] = defaultdict(set)
    links = access_filter(MemoryLink, organization).filter(
        kind=MemoryLink.KIND_CONSOLIDATES, source_id__in=list(targets)
    )
    for source_id, target_id in links.values_list("source_id", "target_id"):
        taken[targets[source_id]].add(target_id)
    return taken


# --- the review queue ----------------------------------------------------------------------------------


def promotion_reach_q(principal: Principal) -> Q:
    """The promotion items in the principal's reach, as a ``Q`` on ``ReviewItem``: the proposed memory's
    team in its reach, or org scope (readable by every token of the org, like org memories)."""
    promotions = Q(kind=ReviewItem.KIND_PROMOTION)
    if not principal.is_restricted:
        return promotions
    reach = reach_for(principal)
    return promotions & (Q(first__team__isnull=True) | Q(first__team_id__in=reach.team_ids or ()))


@dataclass(frozen=True)
class PromotionSource:
    id: str
    title: str
    project: str | None  # slug
    team: str | None  # slug, for a team-scope source of an org promotion
    confidence: float
    usage_count: int
    state: str


@dataclass
class PromotionDetail:
    """What the review queue shows of a promotion besides its proposed memory (``item.first``)."""

    scope: str  # "team" or "org"
    team: str | None  # the team's slug (team scope)
    confidence: float  # the proposed memory's (the weighted confidence with the consensus bonus)
    sources: list[PromotionSource]


def promotions_attach(principal: Principal, items: Iterable[ReviewItem]) -> list[ReviewItem]:
    """Set ``item.promotion`` on every item: a ``PromotionDetail`` with the source memories the principal
    may read (by project) for a promotion, None for a pair."""
    items = list(items)
    details: dict[str, PromotionDetail] = {}
    for item in items:
        item.promotion = None  # type: ignore[attr-defined]
        if item.kind == ReviewItem.KIND_PROMOTION:
            memory = item.first
            item.promotion = details[memory.id] = PromotionDetail(  # type: ignore[attr-defined]
                scope=memory.scope,
                team=memory.team.slug if memory.team_id and memory.team else None,
                confidence=round(memory.confidence, 4),
                sources=[],
            )
    if not details:
        return items
    links = (
        access_filter(MemoryLink, principal)
        .filter(kind=MemoryLink.KIND_CONSOLIDATES, source_id__in=list(details))
        .filter(target__in=memories_readable(principal))
        .select_related("target__project", "target__team")
        .order_by("target__project__slug", "target__team__slug", "target_id")
    )
    for link in links:
        memory = link.target
        details[link.source_id].sources.append(
            PromotionSource(
                id=memory.id,
                title=memory.title,
                project=memory.project.slug if memory.project else None,
                team=memory.team.slug if memory.team else None,
                confidence=round(memory.confidence, 4),
                usage_count=memory.usage_count,
                state=memory.state,
            )
        )
    return items
