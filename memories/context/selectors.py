"""Reads behind a session's starting context (docs/session-context.md).

Consolidated summaries: the ones a principal may see, the best ones for a session's start, and the
ones a search merges in. A summary is served only while it is ``ready`` and its consolidated memory is
active (an un-merged or superseded memory takes its summary with it), and it is trusted as much as
that memory is now — its live confidence, not the value when it was written.

The memories a session starts with besides the summaries, and instead of them until a project's first
consolidation (``context_memories``): a project's highest-confidence procedural memories — active, in
the caller's reach of that project (its own, its team's, the organization's) — chosen by relevance to
the task, recency or activation.

Both are injected without the agent asking, so both keep to the organization's injection policy
(``memories/trust/selectors_injection.py``, docs/security/memory-poisoning.md#injection-policy): a
summary only when its consolidated memory passes it, a memory only when it passes it.

A stored summary that no read can render (``summary_parts_problems``: parts of the wrong shape, which
only an older import or a hand edit could store) is skipped by every read here — search, session
context, the list, the dashboard — and logged, never a server error for the whole answer
(docs/security/imports.md#reads-survive-a-bad-row); ``manage.py repair_summaries`` repairs it."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.db.models import Q, QuerySet
from django.utils import timezone
from pgvector.django import CosineDistance
from prometheus_client import Counter

from accounts.access import Principal, access_filter
from accounts.models import Project
from memories.context.summary_parts import summary_parts_problems
from memories.core.selectors import project_resolve, reach_for
from memories.models import Memory, MemorySummary
from memories.search.selectors import SearchQuery, memory_search
from memories.trust.selectors_injection import injection_policy_of, injection_q, injection_sql
from reasoningbank.errors import NotFound
from reasoningbank.metrics import PREFIX

logger = logging.getLogger(__name__)

SUMMARY_ID_MAX = 40
SUMMARIES_UNREADABLE = Counter(
    f"{PREFIX}_summaries_unreadable", "Stored summaries a read skipped: they cannot be rendered", ["read"]
)


def summary_usable(summary: MemorySummary, *, read: str) -> bool:
    """Whether every read can render ``summary``; if not, the skip is logged (with the row's problems,
    never its text) and counted under ``read`` (search, context, list, get, dashboard)."""
    problems = summary_parts_problems(summary)
    if not problems:
        return True
    SUMMARIES_UNREADABLE.labels(read=read).inc()
    logger.warning(
        "summary %s skipped: it cannot be read (%s); manage.py repair_summaries repairs it",
        summary.id,
        "; ".join(problems),
        extra={"summary_id": summary.id, "org_id": summary.organization_id, "read": read, "problems": problems},
    )
    return False


def summaries_usable(summaries: Iterable[MemorySummary], *, read: str) -> list[MemorySummary]:
    return [summary for summary in summaries if summary_usable(summary, read=read)]


def summaries_readable(principal: Principal, *, project: Project | None = None) -> QuerySet[MemorySummary]:
    """Every summary (any status) of the projects the principal reaches, or of ``project``."""
    qs = access_filter(MemorySummary, principal)
    if project is not None:
        return qs.filter(project=project)
    reach = reach_for(principal)
    return qs if reach.project_ids is None else qs.filter(project_id__in=reach.project_ids)


def summaries_served(principal: Principal, *, project: Project | None = None) -> QuerySet[MemorySummary]:
    """The summaries search and session starts may hand out."""
    return (
        summaries_readable(principal, project=project)
        .filter(status=MemorySummary.STATUS_READY, memory__state=Memory.STATE_ACTIVE)
        .select_related("memory", "project")
        # not the vectors (parsing 384 floats per row costs more than the query) nor the memory's text
        .defer("embedding", "raw_reply", "memory__embedding", "memory__content", "memory__description")
    )


def summary_get(principal: Principal, summary_id: str) -> MemorySummary:
    valid = isinstance(summary_id, str) and len(summary_id) <= SUMMARY_ID_MAX and "\x00" not in summary_id
    # a summary held by the instruction-smell detector is never returned (its admins decide it in the
    # review queue: memories.trust.selectors_quarantine)
    qs = summaries_readable(principal).exclude(status=MemorySummary.STATUS_HELD).select_related("memory", "project")
    found = qs.filter(pk=summary_id).first() if valid else None
    if found is None:
        raise NotFound(f"summary {summary_id!r} not found", field="summary_id")
    if not summary_usable(found, read="get"):
        # as a list skips it: an operator repairs it (manage.py repair_summaries), nobody can read it now
        raise NotFound(f"summary {summary_id!r} cannot be read: its stored parts are damaged", field="summary_id")
    return found


def summaries_list(
    principal: Principal, *, project: str | None = None, status: str | None = None, memory: str | None = None
) -> QuerySet[MemorySummary]:
    """Newest first, optionally of one project (by slug), one status, one consolidated memory."""
    qs = summaries_readable(principal, project=project_resolve(principal, project) if project else None)
    qs = qs.exclude(status=MemorySummary.STATUS_HELD)  # never returned: its admins decide it in the review queue
    if status:
        qs = qs.filter(status=status)
    if memory:
        qs = qs.filter(memory_id=memory)
    return qs.select_related("memory", "project").order_by("-created_at", "-pk")


def summaries_for_context(
    principal: Principal,
    project: Project,
    *,
    limit: int,
    min_confidence: float,
    prioritize: str,
    task_vector: list[float] | None = None,
) -> list[MemorySummary]:
    """At most ``limit`` of the project's summaries whose memory is at least ``min_confidence`` trusted
    and may be injected (the org's injection policy), by relevance to the task (closest first; by
    confidence without a task), recency or activation. A held summary is never served (only ``ready``
    ones are)."""
    qs = summaries_served(principal, project=project).filter(
        injection_q(principal.organization, prefix="memory__"), memory__confidence__gte=min_confidence
    )
    if prioritize == "relevance" and task_vector is not None:
        qs = qs.annotate(distance=CosineDistance("embedding", task_vector)).order_by(
            "distance", "-memory__confidence", "pk"
        )
    else:
        order = {
            "recency": ("-temporal_end", "-created_at"),
            "activation": ("-activation_count", "-memory__confidence"),
        }.get(prioritize, ("-memory__confidence", "-created_at"))
        qs = qs.order_by(*order, "pk")
    # a skipped row leaves its place to the project's procedural memories, as any place summaries leave
    return summaries_usable(qs[:limit], read="context")


@dataclass(frozen=True)
class SummaryHit:
    summary: MemorySummary
    similarity: float


def summaries_search(
    principal: Principal,
    *,
    query_vector: list[float],
    project: Project | None,
    scope: str,
    limit: int,
    min_similarity: float,
    min_confidence: float,
    injection: bool = False,
) -> list[SummaryHit]:
    """The closest served summaries to the query, at least
    ``min_similarity`` alike. Summaries belong to projects, so a team- or org-scoped search has none.
    ``injection``: only those whose memory the org's injection policy lets be injected."""
    if limit <= 0 or scope not in ("all", "project"):
        return []
    # raw SQL, as the memory search: this runs on every agent search, and building the ORM query cost
    # more than PostgreSQL's work. The HNSW index (memories migration 0013) ranks the summaries in
    # reach; their memory must be active and trusted enough.
    params: dict[str, Any]
    if project is not None:
        place, params = "s.project_id = %(project)s", {"project": project.id}
    else:
        reach = reach_for(principal)
        place = "TRUE" if reach.project_ids is None else "s.project_id = ANY(%(projects)s)"
        params = {"projects": list(reach.project_ids or ())}
    policy = injection_sql(injection_policy_of(principal.organization)) if injection else "TRUE"
    sql = f"""
        SELECT s.id, s.memory_id, s.project_id, s.source_memory_ids, s.consolidation_run_id, s.status,
               s.summary, s.key_facts, s.decisions, s.superseded_facts, s.temporal_start, s.temporal_end,
               s.created_at, s.activation_count, s.error, p.slug AS project_slug,
               m.confidence AS memory_confidence, m.title AS memory_title, ranked.distance
        FROM (
            SELECT s.id, s.embedding <=> %(vector)s::vector AS distance
            FROM memories_memorysummary s
            WHERE s.organization_id = %(org)s AND s.status = 'ready' AND {place}
            ORDER BY s.embedding <=> %(vector)s::vector
            LIMIT %(candidates)s
        ) ranked
        JOIN memories_memorysummary s ON s.id = ranked.id
        JOIN memories_memory m ON m.id = s.memory_id
        JOIN accounts_project p ON p.id = s.project_id
        WHERE m.state = 'active' AND {policy} AND m.confidence >= %(min_confidence)s
          AND ranked.distance <= %(max_distance)s
        ORDER BY ranked.distance, s.id
        LIMIT %(limit)s
    """
    params |= {
        "vector": str(list(query_vector)),
        "org": principal.organization.id,
        "candidates": limit * 4,  # a few more than asked: some memories may be archived or untrusted
        "min_confidence": min_confidence,
        "max_distance": 1.0 - min_similarity,
        "limit": limit,
    }
    rows = MemorySummary.objects.raw(sql, params)
    return [
        SummaryHit(row, round(1.0 - float(getattr(row, "distance")), 4))  # noqa: B009
        for row in rows
        if summary_usable(row, read="search")
    ]


def context_memories(
    principal: Principal,
    project: Project,
    *,
    limit: int,
    min_confidence: float,
    prioritize: str,
    task: str = "",
    task_vector: list[float] | None = None,
) -> list[Memory]:
    """At most ``limit`` memories the org's injection policy lets be injected, best first. ``relevance``
    ranks by the hybrid search of ``task`` (without a task: by confidence); ``recency`` by last change;
    ``activation`` by use."""
    memories = access_filter(Memory, principal).filter(
        injection_q(principal.organization),
        reach_for(principal, project=project).memory_q(),
        state=Memory.STATE_ACTIVE,
        kind=Memory.KIND_PROCEDURAL,
        confidence__gte=min_confidence,
    )
    if prioritize == "relevance" and task and task_vector is not None:
        search = SearchQuery(
            query=task,
            limit=20,
            min_confidence=min_confidence,
            project=project.slug,
            mode="deep",
            injection=injection_policy_of(principal.organization),
        )
        ranked = [hit.memory.id for hit in memory_search(principal, search, query_vector=task_vector).hits]
        found = {m.id: m for m in memories.filter(pk__in=ranked)}
        chosen = [found[pk] for pk in ranked if pk in found][:limit]
        if len(chosen) >= limit:
            return chosen
        rest = memories.exclude(pk__in=[m.id for m in chosen]).order_by("-confidence", "-updated_at")
        return chosen + list(rest[: limit - len(chosen)])
    order = {
        "recency": ("-updated_at", "-confidence"),
        "activation": ("-usage_count", "-confidence"),
    }.get(prioritize, ("-confidence", "-updated_at"))
    return _ranked_reusing(memories.order_by(*order, "id"), limit)


# A kept ranking holds this many times the places asked for: some of its memories may have left since.
RANKING_DEPTH = 4
# created_at is stamped when a memory is built, before its transaction commits: a memory created up to this
# long before a ranking was taken may have been invisible to it (a record's transaction lasts far less)
RANKING_WRITE_MARGIN = timedelta(seconds=60)


def _ranked_reusing(ranked: QuerySet[Memory], limit: int) -> list[Memory]:
    """The first ``limit`` rows of ``ranked``. Ordering a project's memories reads every one of them (the
    lifecycle columns are not indexed, so that usage updates stay HOT: memories/models.py), 80–90 ms at
    100K: the order is kept ``CONTEXT_RANKING_REUSE_SECONDS`` per process (docs/session-context.md#reuse).
    Within that time only the kept ranking's rows and those created since are read, through the same
    filter (state, trust, injection policy, confidence floor: a memory that left since is left out at
    once) and sorted by their values now; when too few of them remain, the whole ranking is taken again."""
    reuse = float(settings.CONTEXT_RANKING_REUSE_SECONDS)
    if reuse <= 0:
        return list(ranked[:limit])
    kept_rankings = caches["local"]
    key = "context:ranking:" + hashlib.sha256(f"{ranked.query}|{limit}".encode()).hexdigest()
    kept = kept_rankings.get(key)
    if kept is not None:
        taken_at, ids = kept
        rows = list(ranked.filter(Q(pk__in=ids) | Q(created_at__gte=taken_at - RANKING_WRITE_MARGIN))[:limit])
        if len(rows) == limit or len(ids) < limit * RANKING_DEPTH:  # enough, or all there was then
            return rows
    taken_at = timezone.now()
    rows = list(ranked[: limit * RANKING_DEPTH])
    kept_rankings.set(key, (taken_at, [row.pk for row in rows]), timeout=reuse)
    return rows[:limit]
