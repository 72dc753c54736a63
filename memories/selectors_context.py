"""The memories a session starts with (seed 002 "SessionStart Summary Injection", issue 14) besides
the consolidated summaries (``selectors_summaries``), and instead of them until a project's first
consolidation: a project's highest-confidence procedural memories — active, in the
caller's reach of that project (its own, its team's, the organization's) — chosen by relevance to
the task, recency or activation."""

from __future__ import annotations

from accounts.access import Principal, access_filter
from accounts.models import Project
from memories.models import Memory
from memories.selectors import reach_for
from memories.selectors_search import SearchQuery, memory_search


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
    """At most ``limit`` memories, best first. ``relevance`` ranks by the hybrid search of ``task``
    (without a task: by confidence); ``recency`` by last change; ``activation`` by use."""
    memories = access_filter(Memory, principal).filter(
        reach_for(principal, project=project).memory_q(),
        state=Memory.STATE_ACTIVE,
        kind=Memory.KIND_PROCEDURAL,
        confidence__gte=min_confidence,
    )
    if prioritize == "relevance" and task and task_vector is not None:
        search = SearchQuery(query=task, limit=20, min_confidence=min_confidence, project=project.slug, mode="deep")
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
    return list(memories.order_by(*order, "id")[:limit])
