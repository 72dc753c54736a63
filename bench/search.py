"""memory_search latency and throughput at 10K / 100K memories (docs/search.md).

Measured as users run it: with the product's default embedder (``--embedder`` or ``EMBEDDER`` for
another, e.g. ``hashing``), and every measured query a text no process has embedded before, so the
query-embedding cache never hides the embedding's cost. Three ways, each with its own queries
(200 by default):

1. in-process: ``memories.search.contracts.SearchInput`` + ``memory_search_use`` (the service
   every transport calls), with the time split into query embedding, the selector
   (``memory_search``: HNSW + full-text candidates, ranking) and the usage-signal writes;
2. REST: ``POST /api/v1/memories/search`` against a real uvicorn server on 127.0.0.1;
3. MCP: ``memory_search`` through the official SDK client over Streamable HTTP (``/mcp``), then new
   queries each sent twice in a row: the server's cache serves the second its vector, and the paired
   difference is the query embedding's share of what a client waits.

REST and MCP are measured sequentially (one client) and with ``--concurrency`` clients. With ``--records
N``, N ``memory_record`` calls over MCP follow, timed with their CPU split like a search's (the memories
they write are deleted afterwards, so later runs search the dataset as loaded).
The data lives in a dedicated embedded PostgreSQL (``.data/bench``); see bench/README.md.

    .venv/bin/python bench/search.py --sizes 10000 100000 --queries 200 [--explain] [--reset]
    .venv/bin/python bench/search.py --sizes 100000 --embedder hashing      # another embedder, own data
    .venv/bin/python bench/search.py --sizes 100000 --records 200           # and the CPU of a record
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import search_queries
from _dataset import BENCH_ORG, NOISE_ORGS, dataset_ensure
from _search_http import bench_mcp, bench_mcp_record, bench_rest, queries_needed, recorded_remove
from common import (
    RESULTS_DIR,
    CpuMeter,
    Latency,
    configure_environment,
    django_setup,
    log,
    machine_info,
    postgres_info,
    revision,
    uvicorn_server,
    write_json,
)

TOKEN_LABEL = "bench-search"
TOKEN_PROJECT = "web-app"


# --- set-up --------------------------------------------------------------------------------------


def bench_token(orgs: dict[str, Any]) -> tuple[Any, str]:
    """A fresh API token of the bench org restricted to one project (older bench tokens removed)."""
    from accounts.models import ApiToken
    from accounts.services import token_create

    bench = orgs[BENCH_ORG]
    ApiToken.objects.filter(organization=bench.org, label=TOKEN_LABEL).delete()
    project = next(p for p in bench.projects if p.slug == TOKEN_PROJECT)
    return token_create(organization=bench.org, label=TOKEN_LABEL, projects=[project])


def bench_principal(token: Any) -> Any:
    """The token's principal as a request loads it (its single project with it, ``token_by_digest``)."""
    from accounts.access import principal_for_token
    from accounts.tokens.selectors import token_by_digest

    loaded = token_by_digest(token.digest)
    assert loaded is not None
    return principal_for_token(loaded)


def signals_clear(orgs: dict[str, Any]) -> int:
    """Usage signals left by earlier runs (every search writes some): removed so runs compare."""
    from django.db import connection

    ids = [orgs[slug].org.id for slug in (BENCH_ORG, *NOISE_ORGS)]
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM memories_memorysignal WHERE organization_id = ANY(%s)", [ids])
        return cursor.rowcount


# --- 1. in-process -------------------------------------------------------------------------------


def _sql_category(sql: str) -> str:
    if sql.startswith("/* search:") or sql.startswith("(/* search:"):
        return "sql_search"  # memory_search's leg(s) on this thread's connection
    if "memories_memorysignal s ON" in sql:
        return "sql_usage_read"  # memories_mark_used: signal counts and learned weights
    if sql.startswith(("SET ", "SELECT set_config")):
        return "sql_set"
    if sql.startswith(("INSERT", "UPDATE", "DELETE", "WITH v AS")):
        return "sql_writes"
    return "sql_other_reads"


class SqlTimer:
    """``connection.execute_wrapper`` that times every statement precisely (DEBUG or not)."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, float]] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.statements.append((sql, (time.perf_counter() - t0) * 1000))


SQL_CATEGORIES = ("sql_search", "sql_usage_read", "sql_writes", "sql_other_reads", "sql_set", "sql_commit")


def bench_in_process(token: Any, queries: list[str], warmup: list[str]) -> dict[str, Any]:
    """The service call every transport makes, timed in this process, with a breakdown."""
    from django.db import connection

    from memories.search import services
    from memories.search.contracts import SearchInput

    principal = bench_principal(token)
    timings: dict[str, float] = {}
    original_search, original_mark = services.memory_search, services.memories_mark_used

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                timings[name] = (time.perf_counter() - t0) * 1000

        return wrapper

    series: dict[str, list[float]] = {
        "total": [],
        "cpu": [],
        "embedding": [],
        "without_embedding": [],
        "selector": [],
        "usage_writes": [],
        "sql_statements": [],
        **{category: [] for category in SQL_CATEGORIES},
    }
    hits: list[int] = []
    found: list[int] = []
    services.memory_search = timed("selector", original_search)  # type: ignore[assignment]
    services.memories_mark_used = timed("usage_writes", original_mark)  # type: ignore[assignment]
    commit_ms: list[float] = []
    original_commit = connection.commit

    def timed_commit() -> None:  # atomic() blocks commit through connection.commit()
        t0 = time.perf_counter()
        try:
            original_commit()
        finally:
            commit_ms.append((time.perf_counter() - t0) * 1000)

    connection.commit = timed_commit  # type: ignore[method-assign]
    try:
        for q in warmup:
            services.memory_search_use(principal=principal, search=SearchInput(query=q).to_query())
        meter = CpuMeter().start()
        started = time.perf_counter()
        for q in queries:
            timings.clear()
            commit_ms.clear()
            sql = SqlTimer()
            with connection.execute_wrapper(sql):
                t0, c0 = time.perf_counter(), time.process_time()
                search = SearchInput(query=q).to_query()
                result = services.memory_search_use(principal=principal, search=search)
                total = (time.perf_counter() - t0) * 1000
                cpu = (time.process_time() - c0) * 1000  # this process only: Python + driver, not PostgreSQL
            series["total"].append(total)
            series["cpu"].append(cpu)
            series["embedding"].append(result.embedding_ms)
            series["without_embedding"].append(total - result.embedding_ms)
            series["selector"].append(timings.get("selector", 0.0))
            series["usage_writes"].append(timings.get("usage_writes", 0.0))
            per_category: dict[str, float] = {"sql_commit": sum(commit_ms)}
            for statement, ms in sql.statements:
                category = _sql_category(statement.lstrip())
                per_category[category] = per_category.get(category, 0.0) + ms
            for category in SQL_CATEGORIES:
                series[category].append(per_category.get(category, 0.0))
            series["sql_statements"].append(len(sql.statements))
            hits.append(len(result.hits))
            found.append(result.total_found)
        wall = time.perf_counter() - started
        meter.stop()
    finally:
        services.memory_search, services.memories_mark_used = original_search, original_mark
        del connection.commit  # back to the class's method
    out: dict[str, Any] = {name: Latency.of(values).as_dict() for name, values in series.items() if values}
    out["sql_statements"] = {
        "mean": round(statistics.mean(series["sql_statements"]), 1),
        "max": max(series["sql_statements"]),
    }
    out["throughput_qps"] = round(len(queries) / wall, 1)
    out["cpu_ms_per_search"] = meter.per_op_ms(len(queries))
    out["hits_mean"] = round(statistics.mean(hits), 2)
    out["total_found_mean"] = round(statistics.mean(found), 1)
    out["queries_without_hits"] = sum(1 for h in hits if h == 0)
    return out


# --- EXPLAIN -----------------------------------------------------------------------------------------


def explain_search(token: Any, queries: list[str]) -> dict[str, Any]:
    """EXPLAIN (ANALYZE, BUFFERS) of the SQL that ``memory_search`` really runs (captured, then
    replayed with the same SET LOCALs in a transaction that is rolled back)."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext, override_settings

    from memories.search import selectors
    from memories.search.contracts import SearchInput
    from reasoningbank.ai.embedders import embedder_from_settings

    principal = bench_principal(token)
    embedder = embedder_from_settings()
    report: dict[str, Any] = {"queries": []}
    for q in queries:
        search = SearchInput(query=q).to_query()
        (vector,) = embedder.embed([q])
        # both legs as one statement on this connection, so that it is captured
        with override_settings(SEARCH_PARALLEL_LEGS=False), CaptureQueriesContext(connection) as captured:
            selectors.memory_search(principal, search, query_vector=vector)
        statements = [item["sql"] for item in captured.captured_queries]
        sets = [s for s in statements if _sql_category(s.lstrip()) == "sql_set"]
        entry: dict[str, Any] = {"query": q}
        # the legs' statement (both legs as one UNION ALL here), not the query's lexemes or term statistics
        sql = next((s for s in statements if s.lstrip().lstrip("(").startswith("/* search:vector")), None)
        if sql is not None:
            with transaction.atomic(), connection.cursor() as cursor:
                for s in sets:
                    cursor.execute(s)
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
                plan = "\n".join(row[0] for row in cursor.fetchall())
                transaction.set_rollback(True)
            entry["search"] = {
                "plan": plan,
                "uses_hnsw": "memory_embedding_hnsw" in plan,
                "seq_scan": "Seq Scan on memories_memory" in plan,
                "uses_gin": "memory_search_gin" in plan,
                "execution_ms": _execution_ms(plan),
                "planning_ms": _planning_ms(plan),
                "sql": _shorten_vectors(sql),
            }
        report["queries"].append(entry)
    entries = [e["search"] for e in report["queries"] if e.get("search")]
    report["vector_leg_uses_hnsw"] = all(e["uses_hnsw"] for e in entries) if entries else None
    report["vector_leg_seq_scan"] = any(e["seq_scan"] for e in entries)
    return report


def _execution_ms(plan: str) -> float | None:
    match = re.search(r"Execution Time: ([\d.]+) ms", plan)
    return float(match.group(1)) if match else None


def _planning_ms(plan: str) -> float | None:
    match = re.search(r"Planning Time: ([\d.]+) ms", plan)
    return float(match.group(1)) if match else None


def _shorten_vectors(sql: str) -> str:
    return re.sub(r"'\[[-0-9.,e]{200,}\]'", "'[...384 floats...]'", sql)


# --- output ------------------------------------------------------------------------------------------


def _row(label: str, lat: dict[str, Any] | None, qps: float | None = None, conc: dict[str, Any] | None = None) -> str:
    def f(v: Any) -> str:
        return f"{v:8.2f}" if isinstance(v, int | float) else f"{'-':>8}"

    lat = lat or {}
    conc = conc or {}
    return (
        f"{label:<34}{f(lat.get('p50'))}{f(lat.get('p90'))}{f(lat.get('p99'))}{f(lat.get('mean'))}"
        f"{f(qps)}{f(conc.get('p50'))}{f(conc.get('p99'))}{f(conc.get('throughput_qps'))}"
    )


def print_table(result: dict[str, Any]) -> None:
    ds = result["dataset"]
    ip = result.get("in_process") or {}
    log("")
    log(f"== embedder {ds['embedder']}; every measured query embedded for the first time (uncached)")
    log(
        f"== N = {ds['bench_memories']:,} bench memories (+{ds['noise_memories']:,} in noise orgs; table "
        f"{ds['table_rows']:,} rows, {ds['table_size']}, HNSW {ds['hnsw_size']}); {result['queries']} queries, "
        f"token restricted to project {TOKEN_PROJECT!r}"
    )
    header = f"{'':<34}{'p50':>8}{'p90':>8}{'p99':>8}{'mean':>8}{'q/s':>8}{'x4 p50':>8}{'x4 p99':>8}{'x4 q/s':>8}"
    log(header.replace("x4", f"x{result['concurrency']}") + "   (ms, queries/s)")
    if ip:
        log(_row("in-process service (total)", ip["total"], ip["throughput_qps"]))
        log(_row("  CPU time of this process", ip["cpu"]))
        log(_row("  query embedding (uncached)", ip["embedding"]))
        log(_row("  everything but the embedding", ip["without_embedding"]))
        log(_row("  selector memory_search", ip["selector"]))
        log(_row("    SQL search (this thread's legs)", ip["sql_search"]))
        log(_row("  usage signals (read + write)", ip["usage_writes"]))
        log(_row("    SQL usage read", ip["sql_usage_read"]))
        log(_row("    SQL usage write", ip["sql_writes"]))
        log(_row("  all SQL: other reads", ip["sql_other_reads"]))
        log(_row("  all SQL: COMMIT", ip["sql_commit"]))
    rest = result.get("rest") or {}
    if rest:
        log(
            _row(
                "REST POST /api/v1/memories/search",
                rest["sequential"],
                rest["sequential"]["throughput_qps"],
                rest["concurrent"],
            )
        )
    mcp = result.get("mcp") or {}
    if mcp.get("status") == "ok":
        log(
            _row(
                "MCP memory_search (SDK client)",
                mcp["sequential"],
                mcp["sequential"]["throughput_qps"],
                mcp["concurrent"],
            )
        )
        pairs = mcp.get("pairs")
        if pairs:
            log(
                _row(
                    "  pairs: a new query (uncached)",
                    pairs["first_uncached"],
                    pairs["first_uncached"]["throughput_qps"],
                )
            )
            log(
                _row(
                    "  pairs: it again (vector cached)",
                    pairs["second_cached"],
                    pairs["second_cached"]["throughput_qps"],
                )
            )
            log(_row("  pairs: difference = embedding", pairs["difference"]))
            share = mcp["embedding_share"]
            log(
                f"  query embedding's share of MCP latency (median paired difference): {share['p50_ms']:.2f} ms "
                f"of the pairs' p50, {share['p50_fraction']:.0%}"
            )
        target = mcp["target"]
        log(
            f"MCP target p50 <= {target['p50_ms']:.0f} ms, p99 <= {target['p99_ms']:.0f} ms: "
            f"{'MET' if target['met'] else 'NOT MET'}"
        )
    elif mcp:
        log(f"MCP memory_search: unavailable ({mcp.get('reason')})")

    def cpu(d: dict[str, Any] | None) -> str:
        d = d or {}
        return "/".join(f"{d[k]:.1f}" for k in ("client", "server", "postgres", "total") if k in d)

    n = result["concurrency"]
    parts = [f"in-process {cpu(ip.get('cpu_ms_per_search'))}"] if ip else []
    for name, leg in (("REST", rest), ("MCP", mcp if mcp.get("status") == "ok" else {})):
        if leg:
            seq, conc = leg["sequential"], leg["concurrent"]
            parts.append(f"{name} {cpu(seq.get('cpu_ms_per_search'))} (x{n}: {cpu(conc.get('cpu_ms_per_search'))})")
    log("CPU ms per search (client/server/postgres/total; robust to other load): " + "; ".join(parts))
    record = result.get("mcp_record")
    if record:
        log(
            f"MCP memory_record: p50 {record['p50']:.1f} ms, p99 {record['p99']:.1f} ms, "
            f"{record['throughput_per_s']} calls/s, {record['errors']} errors; "
            f"CPU ms per record {cpu(record['cpu_ms_per_record'])}"
        )
    if ip:
        log(
            f"hits/query {ip['hits_mean']}, candidates/query {ip['total_found_mean']}, queries without hits "
            f"{ip['queries_without_hits']}, SQL statements/search {ip['sql_statements']['mean']}"
        )
    log(
        "load average (1 min) before/after each leg: "
        + ", ".join(f"{leg} {v[0]}/{v[3]}" for leg, v in result.get("loadavg", {}).items())
    )
    ex = result.get("explain")
    if ex:
        log(
            f"EXPLAIN vector leg: HNSW used in every sampled query: {ex['vector_leg_uses_hnsw']}; "
            f"seq scan: {ex['vector_leg_seq_scan']}"
        )


def print_explain(report: dict[str, Any]) -> None:
    first = report["queries"][0]
    if first.get("search"):
        log(f"\n-- EXPLAIN (ANALYZE, BUFFERS) of the search statement, query {first['query']!r}")
        log(first["search"]["sql"])
        log(first["search"]["plan"])
    for entry in report["queries"]:
        e = entry.get("search") or {}
        log(
            f"  {entry['query'][:60]!r:<64} {e.get('execution_ms')} ms (+{e.get('planning_ms')} ms planning)"
            f" hnsw={e.get('uses_hnsw')} gin={e.get('uses_gin')}"
        )


# --- main --------------------------------------------------------------------------------------------


def run_size(n: int, args: argparse.Namespace, *, reset: bool, machine: dict[str, Any]) -> dict[str, Any]:
    log(f"\n### N = {n:,}: preparing the dataset")
    dataset = dataset_ensure(n, reset=reset, log=log)
    orgs = dataset.pop("orgs")
    log(
        f"  dataset ready: {dataset['table_rows']:,} rows ({dataset['table_size']}), "
        f"loaded {dataset['loaded']:,} in {dataset['total_seconds']}s"
    )
    token, raw = bench_token(orgs)
    cleared = signals_clear(orgs)
    # every leg its own texts: a text the server (or this process) embedded once is served from the cache
    per_leg = queries_needed(args.queries, args.warmup, args.concurrency)
    pool = iter(search_queries(args.warmup + args.queries + 2 * per_leg))
    ip_warmup = [next(pool) for _ in range(args.warmup)]
    ip_queries = [next(pool) for _ in range(args.queries)]
    rest_queries = [next(pool) for _ in range(per_leg)]
    mcp_queries = [next(pool) for _ in range(per_leg)]
    queries = ip_queries
    warmup = args.warmup
    result: dict[str, Any] = {
        "benchmark": "memory_search",
        "queries": len(queries),
        "uncached": True,
        "warmup": warmup,
        "concurrency": args.concurrency,
        "machine": machine,
        "postgres": postgres_info(),
        "dataset": dataset,
        "environment": configure_environment(),
        "signals_cleared": cleared,
        "revision": revision(),
    }
    load: dict[str, list[float]] = {}
    if not args.mcp_only:
        log("  in-process service ...")
        load["in_process"] = list(os.getloadavg())
        result["in_process"] = bench_in_process(token, ip_queries, ip_warmup)
        load["in_process"] += list(os.getloadavg())
        # a few measured queries, two with rare keywords, and broad one-word queries (many text matches)
        sample = [queries[i] for i in (0, 1, 2, 5, 8)]
        sample += [q for q in queries if q.startswith(("fix ", "SIGSEGV"))][:2]
        sample += ["retry", "tests"]
        report = explain_search(token, sample)
        result["explain"] = report
        if args.explain:
            print_explain(report)
    if not args.no_http:
        from django.db import connections

        connections.close_all()
        with contextlib.ExitStack() as stack:
            if args.tracing:  # the server (not this process) traces, exporting to a sink that discards
                from _otlp_sink import otlp_sink

                endpoint, sink = stack.enter_context(otlp_sink())
                os.environ.update(OTEL_TRACES_EXPORTER="otlp", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint)
                result["tracing"] = {"exporter": "otlp (http/protobuf) to a local discarding sink", "sink": sink.stats}
            base_url, server_pid = stack.enter_context(uvicorn_server(workers=args.workers))
            log(f"  server up at {base_url} ({args.workers} worker)")
            if not args.mcp_only:
                log("  REST ...")
                load["rest"] = list(os.getloadavg())
                result["rest"] = asyncio.run(
                    bench_rest(base_url, raw, rest_queries, args.queries, warmup, args.concurrency, server_pid)
                )
                load["rest"] += list(os.getloadavg())
            log("  MCP ...")
            load["mcp"] = list(os.getloadavg())
            result["mcp"] = asyncio.run(
                bench_mcp(base_url, raw, mcp_queries, args.queries, warmup, args.concurrency, server_pid)
            )
            load["mcp"] += list(os.getloadavg())
            if args.records:
                log("  MCP memory_record ...")
                load["record"] = list(os.getloadavg())
                seed = int(time.time())  # this run's texts: none a copy of an earlier run's, removed by it after
                try:
                    result["mcp_record"] = asyncio.run(
                        bench_mcp_record(base_url, raw, args.records, 10, server_pid, seed)
                    )
                finally:
                    connections.close_all()
                    log(f"  removed the {recorded_remove(seed)} memories the record leg wrote")
                load["record"] += list(os.getloadavg())
    # 1/5/15-minute load averages before and after each leg: other work on the machine skews figures
    result["loadavg"] = {leg: [round(x, 2) for x in values] for leg, values in load.items()}
    result["finished_at"] = machine_info()["date"]
    path = RESULTS_DIR / f"search-{n}{'-tracing' if args.tracing else ''}.json"
    write_json(path, result)
    print_table(result)
    log(f"results: {path}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="bench memories (N)")
    parser.add_argument(
        "--embedder",
        help="EMBEDDER for this run (e.g. hashing); default: the product's default (or EMBEDDER if set). "
        "Data another embedder made is loaded again.",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=4, help="concurrent REST/MCP clients")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument("--reset", action="store_true", help="drop the benchmark data and load it again")
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE of the search SQL")
    parser.add_argument("--no-http", action="store_true", help="in-process only (no uvicorn, REST or MCP)")
    parser.add_argument("--mcp-only", action="store_true", help="MCP only (no in-process, EXPLAIN or REST)")
    parser.add_argument("--load-only", action="store_true", help="prepare the dataset(s) and stop")
    parser.add_argument(
        "--records", type=int, default=0, help="after MCP search, this many MCP memory_record calls (removed after)"
    )
    parser.add_argument(
        "--tracing", action="store_true", help="the server traces (OTLP/HTTP to a local sink that discards)"
    )
    args = parser.parse_args(argv)

    if args.embedder:
        os.environ["EMBEDDER"] = args.embedder
    env = configure_environment()
    log(f"environment: {json.dumps(env)}")
    django_setup(migrate=True)
    machine = machine_info()
    log(f"machine: {machine}")
    for k, n in enumerate(args.sizes):
        if args.load_only:
            info = dataset_ensure(n, reset=args.reset and k == 0, log=log)
            info.pop("orgs")
            log(json.dumps(info))
            continue
        run_size(n, args, reset=args.reset and k == 0, machine=machine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
