"""Neighbour-query experiments for bench/consolidate.py --explain.

The consolidation graph comes from one LATERAL k-NN query per batch of ids
(consolidation/selectors.py). Here: its EXPLAIN ANALYZE (is the HNSW index used inside the
LATERAL?), and measured variants on a sample of ids — ef_search, k, iterative scan off, two
parallel connections, a halfvec expression index, a partial (active-only) index, planner
settings — each with its recall of the ≥ 0.7 edges against exact numpy neighbours.
Every index created here is dropped again.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import numpy as np

from consolidation import selectors

K = selectors.NEIGHBOURS_PER_MEMORY
MIN_SIM = 0.7  # the band floor the duplicates phase asks for (min(threshold 0.8, 0.7))


def _sql(distance: str = "b.embedding <=> a.embedding") -> str:
    by_index = selectors._NEIGHBOURS_SQL.format(order="b.embedding <=> a.embedding")
    return by_index.replace("b.embedding <=> a.embedding", distance)


HALFVEC = "b.embedding::halfvec({d}) <=> a.embedding::halfvec({d})"


def _run(cursor: Any, sql: str, params: dict[str, Any], settings: list[str]) -> tuple[float, list[tuple]]:
    cursor.execute("BEGIN")
    try:
        for s in settings:
            cursor.execute(s)
        t = time.perf_counter()
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        return time.perf_counter() - t, rows
    finally:
        cursor.execute("ROLLBACK")


def _params(project: Any, ids: list[str], k: int = K) -> dict[str, Any]:
    return {
        "org": project.organization_id,
        "project": project.id,
        "k": k,
        "ids": ids,
        "max_distance": 1.0 - MIN_SIM + 1e-9,
    }


def _base_settings(ef: int = selectors.NEIGHBOUR_EF_SEARCH, iterative: str | None = "relaxed_order") -> list[str]:
    out = [f"SET LOCAL hnsw.ef_search = {ef}"]
    if iterative:
        out.append(f"SET LOCAL hnsw.iterative_scan = {iterative}")
    return out


def _exact(project: Any, sample: list[str], k: int = K) -> dict[str, set[str]]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, embedding::text FROM memories_memory WHERE project_id = %s AND state = 'active' "
            "AND embedding IS NOT NULL",
            [project.id],
        )
        rows = cursor.fetchall()
    ids = [r[0] for r in rows]
    matrix = np.array([np.fromstring(r[1][1:-1], sep=",", dtype=np.float32) for r in rows])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    position = {mid: i for i, mid in enumerate(ids)}
    out: dict[str, set[str]] = {}
    for start in range(0, len(sample), 256):
        chunk = sample[start : start + 256]
        sims = matrix[[position[m] for m in chunk]] @ matrix.T
        for row, mid in enumerate(chunk):
            sims[row, position[mid]] = -2
            top = np.argpartition(-sims[row], k)[:k]
            out[mid] = {ids[j] for j in top if sims[row, j] >= MIN_SIM}
    return out


def _recall(rows: list[tuple], exact: dict[str, set[str]]) -> float:
    found: dict[str, set[str]] = {}
    for a, b, _ in rows:
        found.setdefault(a, set()).add(b)
    want = sum(len(v) for v in exact.values())
    hit = sum(len(v & found.get(a, set())) for a, v in exact.items())
    return round(hit / want, 4) if want else 1.0


def experiments(project: Any, *, sample: int, seed: int) -> dict[str, Any]:
    from django.conf import settings
    from django.db import connection, connections

    d = settings.EMBEDDING_DIMENSIONS
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memories_memory WHERE project_id = %s AND state = 'active' AND embedding IS NOT NULL",
            [project.id],
        )
        all_ids = [r[0] for r in cursor.fetchall()]
    rng = np.random.default_rng(seed)
    ids = sorted(rng.choice(all_ids, size=min(sample, len(all_ids)), replace=False).tolist())
    exact = _exact(project, ids)
    out: dict[str, Any] = {
        "active_memories": len(all_ids),
        "sample": len(ids),
        "k": K,
        "min_similarity": MIN_SIM,
        "variants": [],
    }

    def measure(name: str, sql: str, settings_: list[str], k: int = K) -> dict[str, Any]:
        with connection.cursor() as cursor:
            _run(cursor, sql, _params(project, ids[:50], k), settings_)  # warm caches
            seconds, rows = _run(cursor, sql, _params(project, ids, k), settings_)
        return record(name, seconds, rows)

    def record(name: str, seconds: float, rows: list[tuple]) -> dict[str, Any]:
        row = {
            "variant": name,
            "ms_per_id": round(seconds * 1000 / len(ids), 3),
            "seconds_sample": round(seconds, 3),
            "edges": len(rows),
            "recall": _recall(rows, exact),
            "projected_seconds_all_ids": round(seconds / len(ids) * len(all_ids), 1),
        }
        out["variants"].append(row)
        print(f"    {name:<46}{row['ms_per_id']:>8.3f} ms/id  recall {row['recall']}", flush=True)
        return row

    # the plan actually used inside the LATERAL
    with connection.cursor() as cursor:
        cursor.execute("BEGIN")
        for s in _base_settings():
            cursor.execute(s)
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, VERBOSE OFF) " + _sql(), _params(project, ids[:200]))
        out["explain_baseline_200_ids"] = [re.sub(r"'\{[^}]*\}'", "'{…200 ids…}'", r[0]) for r in cursor.fetchall()]
        cursor.execute("ROLLBACK")
    plan = "\n".join(out["explain_baseline_200_ids"])
    out["hnsw_used_in_lateral"] = "memory_embedding_hnsw" in plan
    print("    HNSW index used inside the LATERAL:", out["hnsw_used_in_lateral"], flush=True)

    base = _sql()
    measure("baseline (ef_search=40, k=10, relaxed_order)", base, _base_settings())
    measure("ef_search=20", base, _base_settings(ef=20))
    measure("ef_search=100", base, _base_settings(ef=100))
    measure("k=5 (ef_search=40)", base, _base_settings(), k=5)
    measure("iterative_scan=off", base, _base_settings(iterative=None))
    measure("jit=off", base, [*_base_settings(), "SET LOCAL jit = off"])
    measure(
        "enable_seqscan=off, enable_bitmapscan=off",
        base,
        [*_base_settings(), "SET LOCAL enable_seqscan = off", "SET LOCAL enable_bitmapscan = off"],
    )

    # two connections, half the ids each
    def half(part: list[str], box: list[Any]) -> None:
        conn = connections.create_connection("default")
        try:
            with conn.cursor() as cursor:
                _run(cursor, base, _params(project, part[:20]), _base_settings())
                box.append(_run(cursor, base, _params(project, part), _base_settings()))
        finally:
            conn.close()

    boxes: list[list[Any]] = [[], []]
    threads = [threading.Thread(target=half, args=(ids[i::2], boxes[i])) for i in range(2)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    rows = [r for box in boxes for r in box[0][1]] if all(boxes) else []
    record("2 parallel connections (baseline settings)", wall, rows)

    # halfvec expression index (half the bytes per vector and per distance)
    with connection.cursor() as cursor:
        t = time.perf_counter()
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(
            f"CREATE INDEX bench_memory_embedding_halfvec ON memories_memory USING hnsw "
            f"((embedding::halfvec({d})) halfvec_cosine_ops) WITH (m = 16, ef_construction = 64)"
        )
        out["halfvec_index_build_seconds"] = round(time.perf_counter() - t, 2)
        cursor.execute("ANALYZE memories_memory")
    try:
        measure("halfvec expression index", _sql(HALFVEC.format(d=d)), _base_settings())
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS bench_memory_embedding_halfvec")

    # partial index over active memories only (archived rows leave it, so archiving is cheaper)
    with connection.cursor() as cursor:
        t = time.perf_counter()
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(
            "CREATE INDEX bench_memory_embedding_active ON memories_memory USING hnsw "
            "(embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) WHERE state = 'active'"
        )
        out["partial_index_build_seconds"] = round(time.perf_counter() - t, 2)
        cursor.execute("ANALYZE memories_memory")
    try:
        measure("partial HNSW index (state = 'active')", base, _base_settings())
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX IF EXISTS bench_memory_embedding_active")
    return out
