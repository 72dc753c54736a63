"""Reads for memories: who may see what (the scope cascade), listings, search and lineage."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.postgres.search import SearchQuery as PgSearchQuery
from django.contrib.postgres.search import SearchRank
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.http import Http404
from django.utils import timezone
from pgvector.django import CosineDistance

from accounts.access import Principal, access_filter, access_get, access_project, reachable_projects
from accounts.models import Project, Team
from memories.models import Memory, MemoryLink, MemorySignal
from memories.ranking import ScoreBreakdown, estimate_tokens, score_memory
from reasoningbank.errors import InvalidInput, NotFound

SEARCH_SCOPES = ("project", "team", "org", "all")
SEARCH_OUTCOMES = ("success", "failure", "all")
# candidates fetched per leg before ranking: enough headroom for the confidence/recency re-rank
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 20
# the full-text leg ranks at most this many matches, so a very common word stays cheap
TEXT_MATCH_CAP = 200


# --- who may see what ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Reach:
    """The places a principal reaches: project-level, team-level and (always) org-level memories."""

    project_ids: frozenset[int] | None  # None = every project of the org
    team_ids: frozenset[int] | None  # None = every team of the org

    def memory_q(self, scope: str = "all") -> Q:
        project_q = Q(project__isnull=False) if self.project_ids is None else Q(project_id__in=self.project_ids)
        team_q = Q(project__isnull=True, team__isnull=False)
        if self.team_ids is not None:
            team_q &= Q(team_id__in=self.team_ids)
        org_q = Q(project__isnull=True, team__isnull=True)
        return {"project": project_q, "team": team_q, "org": org_q, "all": project_q | team_q | org_q}[scope]


def reach_for(principal: Principal, *, project: Project | None = None) -> Reach:
    """The cascade project → its team → org, for one project or for everything the token reaches."""
    if project is not None:
        return Reach(frozenset({project.id}), frozenset({project.team_id}) if project.team_id else frozenset())
    if not principal.is_restricted:
        return Reach(None, None)
    projects = list(reachable_projects(principal).values_list("id", "team_id"))
    team_ids = {team_id for _, team_id in projects if team_id} | set(principal.team_ids or ())
    return Reach(frozenset(pid for pid, _ in projects), frozenset(team_ids))


def project_resolve(principal: Principal, slug: str | None) -> Project | None:
    """The project a call is about: the named one, or the token's only project, or None (all)."""
    if slug:
        if "\x00" in slug:
            raise NotFound(f"project {slug!r} not found", field="project")
        try:
            return access_project(principal, slug)
        except Http404:
            raise NotFound(f"project {slug!r} not found", field="project") from None
    if principal.project_ids is not None and len(principal.project_ids) == 1 and not principal.team_ids:
        return access_get(Project, principal, pk=next(iter(principal.project_ids)))
    return None


def memories_readable(principal: Principal) -> QuerySet[Memory]:
    return access_filter(Memory, principal).filter(reach_for(principal).memory_q())


def memory_get(principal: Principal, memory_id: str) -> Memory:
    """A memory the principal may read (any state); NotFound for missing, foreign or out-of-reach ids."""
    valid = isinstance(memory_id, str) and len(memory_id) <= 40 and "\x00" not in memory_id
    memory = (
        memories_readable(principal).select_related("project", "team", "consolidated_into").filter(pk=memory_id).first()
        if valid
        else None
    )
    if memory is None:
        raise NotFound(f"memory {memory_id!r} not found", field="memory_id")
    return memory


def memory_is_readable(principal: Principal, memory: Memory) -> bool:
    """Same org and inside the principal's reach (project → its team → org)."""
    if memory.organization_id != principal.organization.id:
        return False
    if not principal.is_restricted:
        return True
    reach = reach_for(principal)
    if memory.project_id:
        return memory.project_id in (reach.project_ids or ())
    if memory.team_id:
        return memory.team_id in (reach.team_ids or ())
    return True


def memory_is_writable(principal: Principal, memory: Memory) -> bool:
    """Project memories: any reachable project; team memories: unrestricted or that team's token;
    org memories: unrestricted tokens only."""
    if memory.organization_id != principal.organization.id:
        return False
    if not principal.is_restricted:
        return True
    if memory.project_id:
        return memory.project_id in reach_for(principal).project_ids  # type: ignore[operator]
    if memory.team_id:
        return memory.team_id in (principal.team_ids or ())
    return False


# --- listing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryFilters:
    project: str | None = None
    scope: str = "all"
    state: str | None = "active"  # None = any state
    outcome: str | None = None
    kind: str | None = None
    tier: str | None = None
    tags: tuple[str, ...] = ()
    min_confidence: float | None = None
    max_confidence: float | None = None
    origin: str | None = None
    text: str | None = None
    ordering: str = "-created_at"


MEMORY_ORDERINGS = ("-created_at", "created_at", "-confidence", "confidence", "-usage_count", "-last_used_at", "title")


def memory_list(principal: Principal, filters: MemoryFilters) -> QuerySet[Memory]:
    project = project_resolve(principal, filters.project)
    if filters.scope not in SEARCH_SCOPES:
        raise InvalidInput(f"scope must be one of {', '.join(SEARCH_SCOPES)}", field="scope")
    if filters.ordering not in MEMORY_ORDERINGS:
        raise InvalidInput(f"ordering must be one of {', '.join(MEMORY_ORDERINGS)}", field="ordering")
    qs = access_filter(Memory, principal).filter(reach_for(principal, project=project).memory_q(filters.scope))
    if filters.state:
        qs = qs.filter(state=filters.state)
    for name in ("outcome", "kind", "tier", "origin"):
        value = getattr(filters, name)
        if value:
            qs = qs.filter(**{name: value})
    if filters.tags:
        qs = qs.filter(tags__contains=list(filters.tags))
    if filters.min_confidence is not None:
        qs = qs.filter(confidence__gte=filters.min_confidence)
    if filters.max_confidence is not None:
        qs = qs.filter(confidence__lte=filters.max_confidence)
    if filters.text:
        qs = qs.filter(Q(title__icontains=filters.text) | Q(description__icontains=filters.text))
    return qs.select_related("project", "team").defer("embedding", "search_vector").order_by(filters.ordering, "id")


# --- search --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchQuery:
    query: str
    scope: str = "all"
    outcome: str = "all"
    limit: int = 5
    min_confidence: float = 0.5
    project: str | None = None


@dataclass
class SearchHit:
    memory: Memory
    breakdown: ScoreBreakdown
    matched_by: tuple[str, ...]  # "vector", "text"


@dataclass
class SearchResult:
    hits: list[SearchHit]
    total_found: int
    tokens_used: int
    project: Project | None = None
    embedding_ms: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)


def memory_search(
    principal: Principal, search: SearchQuery, *, query_vector: list[float], now: datetime | None = None
) -> SearchResult:
    """Hybrid search (DESIGN §7): HNSW and full-text candidates inside the caller's reach, merged and
    ranked by similarity × confidence × recency × scope weight (× 1.2 consolidated)."""
    now = now or timezone.now()
    project = project_resolve(principal, search.project)
    reach = reach_for(principal, project=project)
    base = access_filter(Memory, principal).filter(
        reach.memory_q(search.scope), state=Memory.STATE_ACTIVE, confidence__gte=search.min_confidence
    )
    if search.outcome != "all":
        base = base.filter(outcome=search.outcome)
    k = max(search.limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
    columns = (
        "id",
        "organization_id",
        "project_id",
        "team_id",
        "title",
        "description",
        "content",
        "outcome",
        "tags",
        "kind",
        "confidence",
        "usage_count",
        "last_used_at",
        "created_at",
        "origin",
        "state",
        "alpha",
        "beta",
        "prior_alpha",
        "prior_beta",
    )
    distance = CosineDistance("embedding", query_vector)
    with transaction.atomic():
        with connection.cursor() as cursor:
            # pgvector ≥ 0.8: keep scanning the HNSW graph until enough rows pass the tenant filters
            cursor.execute(
                "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                "set_config('hnsw.ef_search', %s, true)",
                [str(max(int(_setting("SEARCH_HNSW_EF_SEARCH")), k))],
            )
        vector_hits = (
            []
            if not any(query_vector)
            else list(
                base.filter(embedding__isnull=False).annotate(distance=distance).order_by("distance").only(*columns)[:k]
            )
        )
        text_hits: list[Memory] = []
        if search.query.strip():
            tsquery = PgSearchQuery(search.query, search_type="websearch", config="english")
            # no ORDER BY: the model's default ordering would sort every match before the cap applies
            text_ids = base.filter(search_vector=tsquery).order_by().values("id")[:TEXT_MATCH_CAP]
            text_hits = list(
                Memory.objects.filter(id__in=text_ids)
                .annotate(distance=distance, text_rank=SearchRank(F("search_vector"), tsquery))
                .order_by("-text_rank")
                .only(*columns)[:k]
            )
    merged: dict[str, tuple[Memory, set[str]]] = {}
    for leg, hits in (("vector", vector_hits), ("text", text_hits)):
        for memory in hits:
            merged.setdefault(memory.id, (memory, set()))[1].add(leg)
    ranked: list[SearchHit] = []
    min_similarity = _setting("SEARCH_MIN_SIMILARITY")
    for memory, legs in merged.values():
        raw_distance = memory.distance  # type: ignore[attr-defined]
        # a text without word characters embeds to a zero vector, whose cosine distance is NaN
        distance_value = 1.0 if raw_distance is None or math.isnan(raw_distance) else float(raw_distance)
        if 1.0 - float(distance_value) < min_similarity and "text" not in legs:
            continue
        reference = memory.last_used_at or memory.created_at
        breakdown = score_memory(
            similarity=1.0 - float(distance_value),
            confidence=memory.confidence,
            days_since_used=max(0.0, (now - reference).total_seconds() / 86400),
            scope=memory.scope,
            consolidated=memory.origin == Memory.ORIGIN_CONSOLIDATED,
        )
        ranked.append(SearchHit(memory, breakdown, tuple(sorted(legs))))
    ranked.sort(key=lambda hit: (-hit.breakdown.score, hit.memory.id))
    top = ranked[: search.limit]
    tokens = sum(estimate_tokens(f"{h.memory.title}\n{h.memory.description}\n{h.memory.content}") for h in top)
    return SearchResult(hits=top, total_found=len(ranked), tokens_used=tokens, project=project)


def _setting(name: str) -> Any:
    from django.conf import settings

    return getattr(settings, name)


# --- lineage and signals ---------------------------------------------------------------------------


def memory_lineage(principal: Principal, memory: Memory) -> dict[str, Any]:
    """Links both ways, including archived memories (lineage must show what was merged away)."""
    readable = memories_readable(principal)
    outgoing = (
        MemoryLink.objects.filter(organization=principal.organization, source=memory, target__in=readable)
        .select_related("target")
        .order_by("kind", "-created_at")
    )
    incoming = (
        MemoryLink.objects.filter(organization=principal.organization, target=memory, source__in=readable)
        .select_related("source")
        .order_by("kind", "-created_at")
    )
    sources = readable.filter(consolidated_into=memory).order_by("id").values_list("id", flat=True)
    return {
        "outgoing": [_link_dict(link, link.target) for link in outgoing],
        "incoming": [_link_dict(link, link.source) for link in incoming],
        "consolidated_into": memory.consolidated_into_id,
        "sources": list(sources),
    }


def _link_dict(link: MemoryLink, other: Memory) -> dict[str, Any]:
    return {
        "kind": link.kind,
        "weight": link.weight,
        "reason": link.reason,
        "run_id": link.run_id,
        "created_at": link.created_at,
        "resolved_at": link.resolved_at,
        "memory": {
            "id": other.id,
            "title": other.title,
            "state": other.state,
            "archived_reason": other.archived_reason,
            "confidence": round(other.confidence, 4),
        },
    }


def memory_signals(principal: Principal, memory: Memory, *, limit: int = 200) -> QuerySet[MemorySignal]:
    return access_filter(MemorySignal, principal).filter(memory=memory).order_by("-created_at")[:limit]


def teams_of_org(principal: Principal) -> QuerySet[Team]:
    return access_filter(Team, principal)
