"""Reads for consolidation: the sparse neighbour graph from the pgvector index, runs, disputes."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet

from accounts.access import Principal, access_filter, reachable_projects
from consolidation.models import ConsolidationRun, NeighbourEdge, NeighbourGraph, ProjectConsolidationSettings
from memories.models import Memory
from reasoningbank.errors import NotFound
from reasoningbank.tracing import bind

Edge = tuple[str, str, float]

# neighbours fetched per memory; a cluster of up to ~2k/threshold members stays reachable
NEIGHBOURS_PER_MEMORY = 10
# 2k candidates per probe: measured to find the same edges as 40 at half the cost
NEIGHBOUR_EF_SEARCH = 20
NEIGHBOUR_CHUNK = 2000  # ids per statement at most; fewer so that every session gets several
NEIGHBOUR_MIN_CHUNK = 250
NEIGHBOUR_PARALLELISM = 2  # k-NN probes run in this many database sessions at once
# Up to this many active memories a project's neighbours are found exactly: each probe reads the project's
# rows (by the (organization, project) index) and sorts them by distance, ~1M distances at the most. The
# HNSW index is shared by every organization, and its scan gives up after `hnsw.max_scan_tuples` (20,000)
# entries, dead ones and other projects' included: near 20,000 rows deleted or rolled back around the same
# point, a probe of a small project came back empty and its duplicates went unmerged.
EXACT_NEIGHBOURS_MAX = 1000

_NEIGHBOURS_SQL = """
SELECT a.id, n.id, 1 - n.distance
FROM memories_memory a
CROSS JOIN LATERAL (
    SELECT b.id, b.embedding <=> a.embedding AS distance
    FROM memories_memory b
    WHERE b.organization_id = %(org)s AND b.project_id = %(project)s AND b.state = 'active'
      AND b.embedding IS NOT NULL AND b.id <> a.id
    ORDER BY {order}
    LIMIT %(k)s
) n
WHERE a.organization_id = %(org)s AND a.project_id = %(project)s AND a.state = 'active'
  AND a.embedding IS NOT NULL AND a.id = ANY(%(ids)s) AND n.distance <= %(max_distance)s
"""
_ORDER_BY_INDEX = "b.embedding <=> a.embedding"
_ORDER_EXACT = "(b.embedding <=> a.embedding) + 0"  # an expression no index orders by: a sort of the rows


def neighbour_edges(
    *,
    organization_id: int,
    project_id: int,
    ids: Sequence[str],
    min_similarity: float,
    k: int = NEIGHBOURS_PER_MEMORY,
    exact: bool = False,
) -> list[Edge]:
    """Undirected edges (a < b) between active memories of a project whose cosine similarity is at
    least ``min_similarity``, from each memory's k nearest neighbours — in the HNSW index, or, ``exact``
    (a project of at most ``EXACT_NEIGHBOURS_MAX`` memories), by distance over the project's rows: a sparse
    graph, never an all-pairs matrix. Chunks run in parallel sessions unless the caller holds a
    transaction (other sessions could not see its rows)."""
    if not ids:
        return []
    sql = _NEIGHBOURS_SQL.format(order=_ORDER_EXACT if exact else _ORDER_BY_INDEX)
    params: dict[str, Any] = {
        "org": organization_id,
        "project": project_id,
        "k": k,
        "max_distance": 1.0 - min_similarity + 1e-9,
        "ef": str(max(NEIGHBOUR_EF_SEARCH, k)),
    }
    size = neighbour_chunk_size(len(ids))
    chunks = [list(ids[start : start + size]) for start in range(0, len(ids), size)]
    if connection.in_atomic_block or len(chunks) == 1:
        rows = [row for chunk in chunks for row in _neighbour_rows(sql, chunk, params)]
    else:
        with ThreadPoolExecutor(max_workers=NEIGHBOUR_PARALLELISM) as pool:
            in_thread = bind(
                lambda chunk: _neighbour_rows_in_thread(sql, chunk, params)
            )  # SQL spans in the run's trace
            rows = [row for part in pool.map(in_thread, chunks) for row in part]
    best: dict[tuple[str, str], float] = {}
    for a, b, similarity in rows:
        key = (a, b) if a < b else (b, a)
        if similarity > best.get(key, -1.0):
            best[key] = float(similarity)
    return [(a, b, s) for (a, b), s in best.items()]


def neighbour_chunk_size(count: int) -> int:
    """Ids per k-NN statement: four chunks per session at least, so sessions that finish early
    pick up the rest (5 chunks of 2,000 over 2 sessions left one idle for a fifth of the pass)."""
    return min(NEIGHBOUR_CHUNK, max(NEIGHBOUR_MIN_CHUNK, -(-count // (NEIGHBOUR_PARALLELISM * 4))))


def _neighbour_rows(sql: str, chunk: list[str], params: dict[str, Any]) -> list[tuple[str, str, float]]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('hnsw.ef_search', %s, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)",
            [params["ef"]],
        )
        cursor.execute(sql, {**params, "ids": chunk})
        return list(cursor.fetchall())


def _neighbour_rows_in_thread(sql: str, chunk: list[str], params: dict[str, Any]) -> list[tuple[str, str, float]]:
    try:
        return _neighbour_rows(sql, chunk, params)
    finally:
        connection.close()  # this worker thread's own session


@dataclass(slots=True)
class ScannedMemory:
    """What the cycle needs of an active memory, timestamps as epoch seconds: building 100K model
    instances with three timezone-aware datetimes each cost seconds, floats cost nothing."""

    id: str
    kind: str
    created: float
    updated: float
    last_used: float | None
    expires: float | None
    usage_count: int
    importance: float
    confidence: float
    tier: str
    retention: float
    embedding_model: str
    salience: float = 0.0  # set by the retention phase

    @property
    def last_access(self) -> float:
        return self.last_used if self.last_used is not None else self.created


_SCAN_SQL = """
SELECT id, kind, date_part('epoch', created_at), date_part('epoch', updated_at),
       date_part('epoch', last_used_at), date_part('epoch', expires_at),
       usage_count, importance, confidence, tier, retention, embedding_model
FROM memories_memory
WHERE organization_id = %s AND project_id = %s AND state = 'active'
"""


def memories_scan(*, organization_id: int, project_id: int) -> dict[str, ScannedMemory]:
    """Every active memory of a project (no text, no embedding), by id."""
    with connection.cursor() as cursor:
        cursor.execute(_SCAN_SQL, [organization_id, project_id])
        return {row[0]: ScannedMemory(*row) for row in cursor.fetchall()}


def neighbour_graph_get(*, organization_id: int, project_id: int) -> NeighbourGraph | None:
    """The project's stored neighbour graph's bookkeeping row, if a run has built one."""
    return NeighbourGraph.objects.filter(organization_id=organization_id, project_id=project_id).first()


def stored_edges(*, organization_id: int, project_id: int, min_similarity: float) -> list[Edge]:
    """The project's stored neighbour graph (see ``NeighbourGraph``), edges at or above the floor."""
    return list(
        NeighbourEdge.objects.filter(
            organization_id=organization_id, project_id=project_id, similarity__gte=min_similarity - 1e-9
        ).values_list("source", "target", "similarity")
    )


def run_get(principal: Principal, run_id: str) -> ConsolidationRun:
    run = (
        access_filter(ConsolidationRun, principal)
        .filter(pk=run_id)
        .filter(project__in=reachable_projects(principal))
        .select_related("project")
        .first()
        if isinstance(run_id, str)
        else None
    )
    if run is None:
        raise NotFound(f"consolidation run {run_id!r} not found", field="run_id")
    return run


def run_list(principal: Principal, *, project: Any = None) -> QuerySet[ConsolidationRun]:
    qs = access_filter(ConsolidationRun, principal).filter(project__in=reachable_projects(principal))
    if project is not None:
        qs = qs.filter(project=project)
    return qs.select_related("project").order_by("-created_at")


# --- the worker's share (reasoningbank/fair_share.py): every organization's, no principal ------------


def runs_running() -> QuerySet[ConsolidationRun]:
    return ConsolidationRun.objects.filter(status=ConsolidationRun.STATUS_RUNNING)


def runs_waiting(now: datetime) -> QuerySet[ConsolidationRun]:
    """Queued for a worker (a run waiting for the LLM budget or a batch is not queued)."""
    return ConsolidationRun.objects.filter(status=ConsolidationRun.STATUS_QUEUED)


def project_consolidation_due(*, organization_id: int, project_id: int, threshold: int) -> bool:
    """Whether on-demand consolidation should ask for a run of this project now: it is not waiting out a
    failure backoff, its last run is not queued or running, and at least ``threshold`` memories were recorded
    or distilled since that run. Every record asks, so it is one statement whose count stops at ``threshold``
    (counting a large project's memories on each record cost PostgreSQL more than the record's own insert),
    on the primary: a replica's lag would show a run requested a moment ago as not there yet."""
    runs, waits = ConsolidationRun._meta.db_table, ProjectConsolidationSettings._meta.db_table
    sql = (
        f"SELECT NOT EXISTS (SELECT 1 FROM {waits} w WHERE w.project_id = %(project)s AND w.retry_after > now()) "
        "AND coalesce(r.status NOT IN (%(queued)s, %(running)s), true) "
        f"AND (SELECT count(*) FROM (SELECT 1 FROM {Memory._meta.db_table} m WHERE m.organization_id = %(org)s "
        "AND m.project_id = %(project)s AND m.origin IN (%(recorded)s, %(distilled)s) "
        "AND (r.created_at IS NULL OR m.created_at > r.created_at) LIMIT %(threshold)s) AS new) >= %(threshold)s "
        f"FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT status, created_at FROM {runs} "
        "WHERE organization_id = %(org)s AND project_id = %(project)s AND NOT dry_run "
        "ORDER BY created_at DESC LIMIT 1) AS r ON true"
    )
    params: dict[str, Any] = {
        "org": organization_id, "project": project_id, "threshold": threshold,
        "queued": ConsolidationRun.STATUS_QUEUED, "running": ConsolidationRun.STATUS_RUNNING,
        "recorded": Memory.ORIGIN_RECORDED, "distilled": Memory.ORIGIN_DISTILLED,
    }  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        (due,) = cursor.fetchone()
    return bool(due)
