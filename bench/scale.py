"""A million memories in one organisation (bench/README.md, "scale.py"; docs/operations.md).

Loads org ``bench`` with N memories (default 1M: the 100K real-vector bench data set and derived variants,
``_scale_data.py``), the noise orgs with 5% of N each and, with ``--small-orgs``, many small organisations,
then measures what a user waits for in the default configuration (pool on, DEBUG off, the product's
embedder for queries): MCP ``memory_search`` (``search.py``'s MCP leg), ``memory_record``,
``memory_context``, an incremental consolidation of 1% new memories, the daily rollup, export, and the
large-tenant experiment (one HNSW index for a 1M org beside many 1K orgs). One line per figure:

    RB_DATA_DIR=/work/scale-data/1m nice -n 10 .venv/bin/python bench/scale.py load --size 1000000 --small-orgs 200
    RB_DATA_DIR=/work/scale-data/1m .venv/bin/python bench/scale.py search --queries 200
    RB_DATA_DIR=/work/scale-data/1m .venv/bin/python bench/scale.py tenants --queries 50
    RB_DATA_DIR=/work/scale-data/1m .venv/bin/python bench/scale.py record --count 200
    RB_DATA_DIR=/work/scale-data/1m .venv/bin/python bench/scale.py context --count 100

Each prints p50/p95/p99 and throughput and writes ``bench/results/scale-<leg>-<N>.json``. Pointed at the
100K bench data (``RB_DATA_DIR=.data/bench``) the legs measure the 100K figure beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS_DIR, configure_environment, django_setup, log, machine_info, revision, write_json


def _uptime() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def cmd_load(args: argparse.Namespace) -> dict[str, Any]:
    from _scale_data import dataset_scale

    info = dataset_scale(args.size, small_orgs=args.small_orgs, small_size=args.small_size, sigma=args.sigma, log=log)
    info.pop("orgs")
    info.pop("small")
    return info


def _bench_org() -> Any:
    from _dataset import BENCH_ORG

    from accounts.models import Organization

    return Organization.objects.get(slug=BENCH_ORG)


def _size() -> int:
    from memories.models import Memory

    return Memory.objects.filter(organization=_bench_org()).count()


def _queries(count: int, seed: int) -> list[str]:
    """Distinct queries no server process has embedded (a new seed per run and leg)."""
    from _corpus import search_queries

    return search_queries(count, seed=seed)


def _served(args: argparse.Namespace, measure: Any) -> dict[str, Any]:
    """``measure(base_url, raw_token)`` against a real uvicorn server (the default configuration: the
    environment's settings, DEBUG off, the product's embedder), with the server process's memory after."""
    from _scale_legs import TOKEN_PROJECT, rss_mib, token_for
    from common import uvicorn_server
    from django.db import connections

    raw = token_for(_bench_org(), TOKEN_PROJECT)
    connections.close_all()
    with uvicorn_server(workers=1) as (base_url, pid):
        out = measure(base_url, raw)
        out["web_process_memory_mib"] = rss_mib(pid)
    return out


def cmd_search(args: argparse.Namespace) -> dict[str, Any]:
    from _scale_legs import line, mcp_series

    queries = _queries(args.warmup + args.queries, args.seed)
    calls = [{"query": q} for q in queries]

    def measure(base_url: str, raw: str) -> dict[str, Any]:
        out = {"memory_search": mcp_series(base_url, raw, "memory_search", calls, warmup=args.warmup)}
        log(line("MCP memory_search", out["memory_search"]))
        return out

    return _served(args, measure)


def cmd_record(args: argparse.Namespace) -> dict[str, Any]:
    from _scale_legs import line, mcp_series, record_calls

    calls = record_calls(args.warmup + args.count, args.seed)

    def measure(base_url: str, raw: str) -> dict[str, Any]:
        out = {"memory_record": mcp_series(base_url, raw, "memory_record", calls, warmup=args.warmup)}
        log(line("MCP memory_record", out["memory_record"]))
        return out

    return _served(args, measure)


def cmd_context(args: argparse.Namespace) -> dict[str, Any]:
    from _scale_legs import line, mcp_series

    calls = [{"task": q} for q in _queries(args.warmup + args.count, args.seed + 1000)]

    def measure(base_url: str, raw: str) -> dict[str, Any]:
        out = {"memory_context": mcp_series(base_url, raw, "memory_context", calls, warmup=args.warmup)}
        log(line("MCP memory_context", out["memory_context"]))
        return out

    return _served(args, measure)


def cmd_consolidate(args: argparse.Namespace) -> dict[str, Any]:
    from _scale_legs import TOKEN_PROJECT, consolidation_runs

    from accounts.models import Project

    project = Project.objects.get(organization=_bench_org(), slug=TOKEN_PROJECT)
    return {"consolidation": consolidation_runs(project, fraction=args.fraction, sigma=0.02)}


def cmd_rollup(args: argparse.Namespace) -> dict[str, Any]:
    from _scale_legs import rollup_run

    org = _bench_org()
    return {"rollup": rollup_run(org, int(_size() * args.events_fraction))}


def cmd_export(args: argparse.Namespace) -> dict[str, Any]:
    from _dataset import BENCH_ORG
    from _scale_legs import export_run

    return {"export": export_run(BENCH_ORG, RESULTS_DIR)}


def cmd_tenants(args: argparse.Namespace) -> dict[str, Any]:
    from _scale_tenants import partial_index, tenants_experiment

    queries = _queries(args.queries, args.seed)
    if not args.partial_index_for:
        return {"tenants": tenants_experiment(queries=queries, small=args.small, log=log)}
    with partial_index(args.partial_index_for, log=log) as built:
        return {"tenants": tenants_experiment(queries=queries, small=args.small, log=log), "partial_index": built}


def _more_legs() -> dict[str, Any]:
    return {"consolidate": cmd_consolidate, "rollup": cmd_rollup, "export": cmd_export, "tenants": cmd_tenants}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="leg", required=True)
    load = sub.add_parser("load", help="derive the data set (idempotent)")
    load.add_argument("--size", type=int, default=1_000_000)
    load.add_argument("--small-orgs", type=int, default=0)
    load.add_argument("--small-size", type=int, default=1000)
    load.add_argument("--sigma", type=float, default=0.02)
    for name, count in (("search", "--queries"), ("record", "--count"), ("context", "--count")):
        leg = sub.add_parser(name, help=f"MCP memory_{name} against a real server")
        leg.add_argument(count, type=int, default=200, dest="queries" if name == "search" else "count")
        leg.add_argument("--warmup", type=int, default=20)
        leg.add_argument("--seed", type=int, default=int(os.environ.get("BENCH_SEED", "0")) or None)
    consolidate = sub.add_parser(
        "consolidate", help="a settling run, then 1%% new memories and one run (no LLM, stub LLM)"
    )
    consolidate.add_argument("--fraction", type=float, default=0.01)
    rollup = sub.add_parser("rollup", help="the daily rollup task after old usage events on 1%% of the memories")
    rollup.add_argument("--events-fraction", type=float, default=0.01)
    sub.add_parser("export", help="manage.py export_memories of the 1M org")
    tenants = sub.add_parser("tenants", help="one HNSW index for a large and many small organisations")
    tenants.add_argument("--queries", type=int, default=50)
    tenants.add_argument("--small", type=int, default=20, help="small organisations sampled")
    tenants.add_argument("--seed", type=int, default=None)
    tenants.add_argument(
        "--partial-index-for", metavar="ORG", help="measure with a partial HNSW index of this org (dropped after)"
    )
    args = parser.parse_args(argv)
    if getattr(args, "seed", 0) is None:  # queries new to every server: a fresh seed unless one is given
        import time

        args.seed = int(time.time())
    env = configure_environment()
    log(f"environment: {json.dumps(env)}; {_uptime()}")
    django_setup(migrate=True)
    result = {"leg": args.leg, "machine": machine_info(), "revision": revision(), "before": _uptime()}
    legs = {"load": cmd_load, "search": cmd_search, "record": cmd_record, "context": cmd_context}
    legs.update(_more_legs())
    if args.leg != "load":
        result["bench_memories"] = _size()
    result.update(legs[args.leg](args))
    result["after"] = _uptime()
    write_json(RESULTS_DIR / f"scale-{args.leg}-{result.get('bench_memories', args.__dict__.get('size'))}.json", result)
    log(json.dumps({k: v for k, v in result.items() if k != "machine"}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
