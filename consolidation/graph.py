"""The project's sparse k-nearest-neighbour graph from pgvector's HNSW index: probed incrementally
(new or changed memories plus a weekly slice) and stored per project (``NeighbourGraph``).
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import connection, transaction

from consolidation import graph_slices
from consolidation.models import NeighbourGraph
from consolidation.run_state import GRAPH_CLOCK_MARGIN, GRAPH_REPROBE_AFTER, RunState
from consolidation.selectors import (
    EXACT_NEIGHBOURS_MAX,
    NEIGHBOURS_PER_MEMORY,
    Edge,
    ScannedMemory,
    neighbour_edges,
    neighbour_graph_get,
    stored_edges,
)

logger = logging.getLogger("consolidation")


def neighbour_graph_build(state: RunState, memories: dict[str, ScannedMemory], floor: float) -> list[Edge]:
    """The project's neighbour graph (edges ≥ ``floor`` between active memories). The first run
    probes the HNSW index for every memory; later runs reuse the stored graph and probe only the
    memories created or changed since it was built (their edges to older memories come from their
    own probes, their stored ones may be stale) and those in slices due for another probe (their
    stored edges stay, the probe adds what the last one missed). A lower floor, a bigger k, new
    embedding models, or every slice being due, probe every memory again.
    Stored in the same run, except in a dry run."""
    k = NEIGHBOURS_PER_MEMORY
    models = sorted({m.embedding_model for m in memories.values()})
    graph = neighbour_graph_get(organization_id=state.run.organization_id, project_id=state.project.id)
    due = set(range(graph_slices.SLICES))
    probed_at: list[datetime] = []
    if graph is not None:
        stamps = graph.slices_probed_at or [graph.rebuilt_at.isoformat()] * graph_slices.SLICES  # legacy row
        probed_at = [datetime.fromisoformat(at) for at in stamps]
        due = graph_slices.slices_due(probed_at, state.now, GRAPH_REPROBE_AFTER)
    reuse = (
        graph is not None
        and graph.min_similarity <= floor + 1e-9
        and graph.neighbours >= k
        and graph.embedding_models == models
        and len(due) < graph_slices.SLICES
    )
    kept: dict[tuple[str, str], float] = {}
    gone: set[str] = set()
    if reuse:
        assert graph is not None
        cutoff = (graph.built_at - GRAPH_CLOCK_MARGIN).timestamp()
        changed = {mid for mid, m in memories.items() if m.created >= cutoff or m.updated >= cutoff}
        probe = sorted(changed | {mid for mid in memories if graph_slices.slice_of(mid) in due})
        stored = stored_edges(
            organization_id=state.run.organization_id, project_id=state.project.id, min_similarity=floor
        )
        for a, b, similarity in stored:
            if a in memories and b in memories:
                if a not in changed and b not in changed:
                    kept[(a, b)] = similarity
            else:
                gone.update(x for x in (a, b) if x not in memories)
        gone |= changed
        probed_at = [at if i not in due else state.now for i, at in enumerate(probed_at)]
    else:
        probe = list(memories)
        probed_at = graph_slices.slices_staggered(state.now, GRAPH_REPROBE_AFTER)
    fresh = (
        neighbour_edges(
            organization_id=state.run.organization_id,
            project_id=state.project.id,
            ids=probe,
            min_similarity=floor,
            k=k,
            exact=len(memories) <= EXACT_NEIGHBOURS_MAX,
        )
        if probe
        else []
    )
    state.counters["neighbour_probes"] = len(probe)
    # a re-probed memory's stored edges come back from its probe: one edge per pair (a < b both)
    merged = dict(kept)
    merged.update(((a, b), s) for a, b, s in fresh)
    edges = [(a, b, s) for (a, b), s in merged.items()]
    if not state.dry:
        neighbour_graph_store(
            state,
            fresh,
            replace_all=not reuse,
            forget=sorted(gone),
            min_similarity=floor,  # reused edges were read at this floor too
            k=k,
            models=models,
            edge_count=len(edges),
            probed_at=probed_at,
        )
    return edges


def neighbour_graph_store(
    state: RunState,
    fresh: list[Edge],
    *,
    replace_all: bool,
    forget: list[str],
    min_similarity: float,
    k: int,
    models: list[str],
    edge_count: int,
    probed_at: list[datetime],
) -> None:
    """Bring the stored graph up to date in one transaction (a crash keeps the previous graph)."""
    with transaction.atomic(), connection.cursor() as cursor:
        if replace_all:
            cursor.execute("DELETE FROM consolidation_neighbouredge WHERE project_id = %s", [state.project.id])
        elif forget:
            cursor.execute(
                "DELETE FROM consolidation_neighbouredge WHERE project_id = %s "
                "AND (source = ANY(%s) OR target = ANY(%s))",
                [state.project.id, forget, forget],
            )
        if fresh:
            sources, targets, similarities = (list(column) for column in zip(*fresh, strict=True))
            cursor.execute(
                "INSERT INTO consolidation_neighbouredge (organization_id, project_id, source, target, similarity) "
                "SELECT %s, %s, v.s, v.t, v.w FROM unnest(%s::text[], %s::text[], %s::float8[]) AS v(s, t, w) "
                # the columns of neighbouredge_pair_once, whose key includes the organization
                # (docs/operations.md#distributed-by-organization)
                "ON CONFLICT (project_id, source, target, organization_id) "
                "DO UPDATE SET similarity = EXCLUDED.similarity",
                [state.run.organization_id, state.project.id, sources, targets, similarities],
            )
        NeighbourGraph.objects.update_or_create(
            project=state.project,
            defaults={
                **({"rebuilt_at": state.now} if replace_all else {}),
                "organization_id": state.run.organization_id,
                "built_at": state.now,
                "min_similarity": min_similarity,
                "neighbours": k,
                "embedding_models": models,
                "edge_count": edge_count,
                "slices_probed_at": [at.isoformat() for at in probed_at],
            },
        )
