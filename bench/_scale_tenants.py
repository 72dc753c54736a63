"""Large tenants (``scale.py tenants``; bench/README.md, "Large tenants"): does one HNSW index over every
organisation stay fast and complete when one organisation holds 1M memories and many hold 1K?

For each tenant (org ``bench`` through a token of its project ``web-app``; the noise org ``bench-noise-1``;
a sample of the small organisations ``bench-small-*`` through their project ``app``) and each query, the
product's search runs in this process (``memories.search.selectors.memory_search``: both legs as one
statement, captured), then its vector leg is replayed alone under several settings, in a transaction that
is rolled back:

- ``default``: as the product runs it (``hnsw.iterative_scan = relaxed_order``, ``ef_search`` 40);
- ``no_iterative``: ``hnsw.iterative_scan = off`` (pgvector before 0.8: the graph's first ``ef_search``
  rows, then the tenant filter);
- ``strict_order``: iterative scan that keeps the exact distance order;
- ``exact``: ``enable_indexscan = off``: the HNSW index cannot serve a bitmap scan, so PostgreSQL reads
  the tenant's rows through the organisation b-tree (a bitmap scan) and sorts them all: the exact
  nearest rows, the reference for recall.

Reported per tenant kind and setting: latency p50/p95/p99 (ms, the statement alone), recall@k against
``exact`` (the share of the exact k nearest rows found), rows returned, the plan's access path.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator
from typing import Any

VARIANTS = {
    "default": [],
    "no_iterative": ["SET LOCAL hnsw.iterative_scan = off"],
    "strict_order": ["SET LOCAL hnsw.iterative_scan = strict_order"],
    "exact": ["SET LOCAL enable_indexscan = off"],
}
TOKEN_LABEL = "bench-scale-tenants"


@contextlib.contextmanager
def partial_index(org_slug: str, *, log: Any = print) -> Iterator[dict[str, Any]]:
    """A partial HNSW index of one organisation's memories (the model's HNSW parameters), built
    concurrently as an operator would, dropped afterwards so the data stays what ``load`` made."""
    from django.db import connection

    from accounts.models import Organization

    org = Organization.objects.get(slug=org_slug)
    name = f"bench_hnsw_org{org.id}"
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '512MB'")
        t0 = time.perf_counter()
        cursor.execute(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memories_memory USING hnsw "
            f"(embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64) WHERE organization_id = {int(org.id)}"
        )
        seconds = time.perf_counter() - t0
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("ANALYZE memories_memory")
    log(f"  partial HNSW index {name} for {org_slug} built in {seconds:.1f} s")
    try:
        yield {"name": name, "organization": org_slug, "build_seconds": round(seconds, 1)}
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


def _principal(org: Any, project_slug: str) -> Any:
    from accounts.access import principal_for_token
    from accounts.models import ApiToken, Project
    from accounts.services import token_create

    ApiToken.objects.filter(organization=org, label=TOKEN_LABEL).delete()
    project = Project.objects.get(organization=org, slug=project_slug)
    token, _ = token_create(organization=org, label=TOKEN_LABEL, projects=[project])
    return principal_for_token(token)


def _vector_leg(principal: Any, query: str, vector: list[float]) -> tuple[str, list[str], float]:
    """(the vector leg's SQL as the product ran it, the SET statements before it, the product selector's
    milliseconds with both legs as one statement)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext, override_settings

    from memories.search import selectors
    from memories.search.contracts import SearchInput

    search = SearchInput(query=query).to_query()
    with override_settings(SEARCH_PARALLEL_LEGS=False), CaptureQueriesContext(connection) as captured:
        t0 = time.perf_counter()
        selectors.memory_search(principal, search, query_vector=vector)
        selector_ms = (time.perf_counter() - t0) * 1000
    statements = [item["sql"] for item in captured.captured_queries]
    sets = [s for s in statements if s.lstrip().startswith(("SET ", "SELECT set_config"))]
    both = next(s for s in statements if s.lstrip().lstrip("(").startswith("/* search:vector"))
    # "(<vector leg>) UNION ALL (<text leg>)" when the query has selective terms, else the vector leg alone
    # legs are joined as "(<leg>) UNION ALL (<leg>)", each in parentheses even when alone
    vector_sql = both.lstrip().removeprefix("(").split(") UNION ALL (/* search:text")[0]
    if "/* search:text" not in both:
        vector_sql = vector_sql.rstrip().removesuffix(")")
    return vector_sql, sets, selector_ms


def _run(sql: str, sets: list[str], extra: list[str]) -> tuple[list[str], float, str]:
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        for s in [*sets, *extra]:
            cursor.execute(s)
        t0 = time.perf_counter()
        cursor.execute(sql)
        ids = [row[0] for row in cursor.fetchall()]
        ms = (time.perf_counter() - t0) * 1000
        cursor.execute("EXPLAIN " + sql)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    if "memory_embedding_hnsw" in plan:
        path = "hnsw"
    elif "Bitmap" in plan:
        path = "bitmap (org b-tree)"
    elif "Index Scan" in plan:
        path = "index scan: " + (re.findall(r"using (\w+)", plan) or ["?"])[0]
    else:
        path = "seq scan" if "Seq Scan" in plan else "other"
    return ids, ms, path


def tenants_experiment(*, queries: list[str], small: int, log: Any = print) -> dict[str, Any]:
    from _dataset import BENCH_ORG, NOISE_ORGS
    from _scale_data import SMALL_ORG_PREFIX
    from _scale_legs import stats

    from accounts.models import Organization
    from memories.models import Memory
    from reasoningbank.ai.embedders import embedder_from_settings

    vectors = embedder_from_settings().embed(queries)
    tenants: list[tuple[str, Any, str]] = [("large", Organization.objects.get(slug=BENCH_ORG), "web-app")]
    tenants.append(("noise 5%", Organization.objects.get(slug=NOISE_ORGS[0]), "web-app"))
    smalls = Organization.objects.filter(slug__startswith=SMALL_ORG_PREFIX).order_by("slug")[:small]
    tenants += [("small", org, "app") for org in smalls]
    samples: dict[str, dict[str, dict[str, list[Any]]]] = {}
    sizes: dict[str, int] = {}
    for position, (kind, org, project) in enumerate(tenants):
        sizes[kind] = Memory.objects.filter(organization=org).count()
        principal = _principal(org, project)
        # the small orgs share the queries: each answers every len(smalls)-th of them
        mine = (
            range(len(queries)) if kind != "small" else range((position - 2) % len(smalls), len(queries), len(smalls))
        )
        per = samples.setdefault(
            kind, {v: {"ms": [], "recall": [], "rows": [], "paths": []} for v in [*VARIANTS, "selector"]}
        )
        for qi in mine:
            sql, sets, selector_ms = _vector_leg(principal, queries[qi], vectors[qi])
            per["selector"]["ms"].append(selector_ms)
            results = {v: _run(sql, sets, extra) for v, extra in VARIANTS.items()}
            exact = set(results["exact"][0])
            for v, (ids, ms, path) in results.items():
                per[v]["ms"].append(ms)
                per[v]["rows"].append(len(ids))
                per[v]["paths"].append(path)
                per[v]["recall"].append(len(exact & set(ids)) / len(exact) if exact else 1.0)
        log(f"  tenants: {kind} {org.slug} ({sizes[kind]:,} memories) done")
    report: dict[str, Any] = {"sizes": sizes, "queries": len(queries), "small_orgs_sampled": len(smalls)}
    for kind, per in samples.items():
        report[kind] = {}
        for v, d in per.items():
            entry = stats(d["ms"])
            if d["recall"]:
                entry["recall_mean"] = round(sum(d["recall"]) / len(d["recall"]), 3)
                entry["recall_min"] = round(min(d["recall"]), 3)
                entry["rows_mean"] = round(sum(d["rows"]) / len(d["rows"]), 1)
                entry["paths"] = sorted(set(d["paths"]))
            report[kind][v] = entry
            log(
                f"  {kind:<9} {v:<13} p50 {entry.get('p50')} p95 {entry.get('p95')} p99 {entry.get('p99')} ms"
                f"  recall {entry.get('recall_mean', '-')} (min {entry.get('recall_min', '-')})"
                f"  rows {entry.get('rows_mean', '-')}  {', '.join(entry.get('paths', []))}"
            )
    return report
