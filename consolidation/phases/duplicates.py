"""Duplicates: merge near-identical memories (cosine ≥ the duplicate threshold) without an LLM, and
build the neighbour graph every later phase reads."""

from __future__ import annotations

import logging

from django.db import connection, transaction
from django.utils import timezone

from consolidation import clustering
from consolidation.graph import neighbour_graph_build
from consolidation.phases.clusters import preview_sources
from consolidation.phases.conflicts import conflicts_find, edges_without_conflicts
from consolidation.phases.registry import RunCounter, phase_register
from consolidation.run_state import (
    RunState,
    contradiction_band,
    duplicate_threshold,
    run_archive,
)
from consolidation.selectors import (
    Edge,
    ScannedMemory,
)
from memories.models import Memory, MemoryLink
from memories.writes import memories_lock_active

logger = logging.getLogger("consolidation")


# before retention: the memories merged away as duplicates need no new tier (on a freshly loaded bank
# that is ~12% fewer rows rewritten)
@phase_register(
    name="duplicates",
    order=20,
    description="merge near-identical memories without an LLM; find the close pairs that disagree",
    counters=(
        RunCounter(
            "duplicates_merged", "duplicates_merged", "Near-identical memories merged into one",
            dry_run_label="Would merge as duplicates",
        ),
        # close pairs with conflict cues: judged or waiting for review, never merged (phases.conflicts)
        RunCounter("conflicts"),
        RunCounter("neighbour_probes"),  # memories whose neighbours were looked up in the index this run
    ),
)
def duplicates_step(state: RunState) -> None:
    state.edges = duplicates_merge(state, state.memories)


def duplicates_merge(state: RunState, memories: dict[str, ScannedMemory]) -> list[Edge]:
    """Groups at least ``CONSOLIDATION_DUPLICATE_THRESHOLD`` alike merge without an LLM — the strongest
    stays, the rest are archived as duplicates with a ``duplicates`` link. Returns the neighbour graph
    for the later phases."""
    edges = neighbour_graph_build(state, memories, min(state.options.similarity_threshold, contradiction_band()[0]))
    # memories that disagree are never duplicates, however close: complete linkage over the
    # graph without their edges keeps every such pair out of one group
    conflicts_find(state, memories, edges)
    groups = clustering.duplicate_groups(list(memories), edges_without_conflicts(state, edges), duplicate_threshold())
    plan: list[tuple[ScannedMemory, list[ScannedMemory], float]] = []
    for group in groups:
        members = [memories[mid] for mid in group.member_ids]
        keep = max(members, key=lambda m: (m.confidence, m.usage_count, -m.created))
        plan.append((keep, [m for m in members if m.id != keep.id], group.min_similarity))
    if state.dry:
        described = preview_sources(state, [m.id for keep, others, _ in plan for m in (keep, *others)])
        for keep, others, similarity in plan:
            state.note(
                "duplicates",
                {
                    "keep": keep.id,
                    "archive": [m.id for m in others],
                    "similarity": round(similarity, 4),
                    "sources": [described[m.id] for m in (keep, *others)],
                },
            )
    elif plan:
        # no LLM involved: every group is merged in one transaction with set-based statements
        with transaction.atomic():
            live = set(memories_lock_active([m.id for keep, others, _ in plan for m in (keep, *others)]))
            plan = [item for item in plan if item[0].id in live and all(m.id in live for m in item[1])]
            run_archive(state, [m.id for _, others, _ in plan for m in others], Memory.ARCHIVED_DUPLICATE, into=None)
            links = [(keep.id, other.id, round(similarity, 4)) for keep, others, similarity in plan for other in others]
            # one statement for thousands of links (bulk_create would bind 8 parameters per row)
            with connection.cursor() as cursor:
                if links:  # empty when another run took every group's members meanwhile
                    cursor.execute(
                        "INSERT INTO memories_memorylink "
                        "(organization_id, source_id, target_id, kind, weight, reason, run_id, created_at) "
                        "SELECT %s, v.s, v.t, %s, v.w, %s, %s, %s FROM unnest(%s::text[], %s::text[], %s::float8[]) "
                        "AS v(s, t, w) ON CONFLICT DO NOTHING",
                        [
                            state.run.organization_id,
                            MemoryLink.KIND_DUPLICATES,
                            f"near-identical (similarity ≥ {duplicate_threshold()})",
                            state.run.id,
                            timezone.now(),
                            *map(list, zip(*links, strict=True)),
                        ],
                    )
    for _, others, _ in plan:
        for other in others:
            memories.pop(other.id, None)
            state.archived.append(other.id)
        state.counters["duplicates_merged"] += len(others)
        state.counters["archived"] += len(others)
    if plan:  # a key decision, so INFO (docs/observability.md#logs), one line a run; each group at DEBUG
        merged = sum(len(others) for _, others, _ in plan)
        logger.info(
            "%s %d near-identical memories into %d kept ones",
            "Would merge" if state.dry else "Merged", merged, len(plan),
            extra={"run": state.run.id, "dry_run": state.dry, "merged": merged, "kept": len(plan)},
        )
        for keep, others, similarity in plan:
            logger.debug(
                "Duplicates merged into %s", keep.id,
                extra={"run": state.run.id, "keep": keep.id, "merged_ids": [o.id for o in others],
                       "similarity": round(similarity, 4)},
            )
    return edges
