"""Consolidation cost at 1K / 10K / 100K memories in ONE project (docs/consolidation.md).

    .venv/bin/python bench/consolidate.py                          # 1000 10000 100000
    .venv/bin/python bench/consolidate.py --sizes 10000 --llm-sizes 10000 --explain

Each size runs in its own child process against its own embedded PostgreSQL
(``RB_DATA_DIR=.data/bench-consolidate-<size>``, git-ignored), so one size's rows never sit in
another's HNSW index and ``ru_maxrss`` is that size's peak. In the child:

1. the data set (``bench/_consolidation_data.py``): vectors generated with numpy with controlled
   cosine structure — topic clusters (pairwise 0.82–0.92), duplicates (0.965–0.998), related pairs
   (0.72–0.79) and a majority of singletons — NOT the hashing embedder (faster; the timings only
   depend on the geometry). Loaded once with ``bulk_create`` (HNSW index dropped and rebuilt for
   large loads) and reused by later invocations: before every run the project is reset to the
   pristine state of a freshly loaded bank (archived sources re-activated, created
   memories/links/runs deleted, the stored neighbour graph dropped so the first run probes every
   memory, tier/retention back to the defaults so it re-tiers every row, VACUUM ANALYZE);
2. a no-LLM run: ``consolidation_execute(run_id, llm=NoLLM())`` — scan, duplicate merge (the
   k-NN graph), retention, clustering, judge/patterns skipped (they wait for an LLM), stale archival;
   unless ``--no-repeat``, two more no-LLM runs without a reset: the settled bank (nothing new,
   nothing to merge) and a later day with one slice of the stored neighbour graph due for
   another probe (``consolidation/graph_slices.py``);
3. a fake-LLM run (sizes in ``--llm-sizes``): ``tests.fakes.ScriptedLLM`` with an endless callable
   script answering every prompt in its expected format (``bench/_fake_replies.py``), each call
   sleeping ``--llm-sleep`` seconds (default 0.05) to mimic latency;
4. optional ``--explain``: EXPLAIN ANALYZE of the neighbour query (consolidation/selectors.py) and
   measured variants (ef_search, k, 2 parallel connections, halfvec, planner settings), with
   recall against exact numpy neighbours for a sample.

Reported per run: ``run.phase_durations``, total, counters, LLM calls, peak RSS of this process
and of the PostgreSQL server. JSON: ``bench/results/<--name>.json`` (+ one file per size).
Product settings overridden here: ``CONSOLIDATION_RUN_TIMEOUT`` (``--run-timeout``, default 60m,
so a slow 100K run is measured rather than cut off at the product's 10 min) and
``LLM_PROVIDER=none`` (the fake LLM is passed explicitly).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
RESULTS_DIR = REPO / "bench" / "results"
TARGETS_NO_LLM_SECONDS = {10_000: 5.0, 100_000: 60.0}
RUN_LABELS = ("no_llm", "no_llm_again", "no_llm_slice_due", "fake_llm")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Consolidation cost at several bank sizes")
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    p.add_argument(
        "--llm-sizes",
        type=int,
        nargs="*",
        default=None,
        help="sizes that also get the fake-LLM run (default: all of --sizes)",
    )
    p.add_argument("--llm-sleep", type=float, default=0.05, help="seconds each fake LLM call sleeps")
    p.add_argument(
        "--settle-runs",
        type=int,
        default=4,
        help="after the first fake-LLM run, at most this many more (judge cap lifted) until one makes no call",
    )
    p.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE + neighbour-query variants")
    p.add_argument(
        "--no-repeat",
        dest="repeat",
        action="store_false",
        help="skip the later no-LLM runs on the consolidated bank (steady state; a day with one graph slice due)",
    )
    p.add_argument("--explain-sample", type=int, default=2000, help="ids per variant measurement")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reload", action="store_true", help="drop and regenerate the data set")
    p.add_argument("--timeout", type=float, default=5400.0, help="hard limit per size (seconds)")
    p.add_argument("--run-timeout", default="60m", help="CONSOLIDATION_RUN_TIMEOUT for the runs")
    p.add_argument("--data-dir-prefix", default=str(REPO / ".data" / "bench-consolidate"))
    p.add_argument("--name", default="consolidate")
    p.add_argument(
        "--shared-buffers",
        default=None,
        help="set PostgreSQL shared_buffers (ALTER SYSTEM, server restarted) for these runs, e.g. 1GB; "
        "'default' resets it (the embedded server's default is 128MB)",
    )
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--configure", type=int, default=None, help=argparse.SUPPRESS)
    return p.parse_args()


# --- parent ----------------------------------------------------------------------------------------


def parent(args: argparse.Namespace) -> int:
    from _util import machine, write_json

    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    failures = 0
    for size in args.sizes:
        out = RESULTS_DIR / f"{args.name}-{size}.json"
        out.unlink(missing_ok=True)
        if args.shared_buffers:
            # its own short-lived process: the server restarts (and reads the setting) once it exits
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--configure",
                    str(size),
                    "--shared-buffers",
                    args.shared_buffers,
                    "--data-dir-prefix",
                    args.data_dir_prefix,
                ],
                cwd=REPO,
                check=True,
                timeout=300,
            )
        cmd = [sys.executable, __file__, "--child", str(size), *child_flags(args)]
        print(f"\n=== {size:,} memories ===", flush=True)
        proc = subprocess.Popen(cmd, cwd=REPO, start_new_session=True)
        try:
            code = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"  size {size} exceeded --timeout {args.timeout:.0f}s; stopping it", file=sys.stderr)
            code = None
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
        if code != 0 or not out.exists():
            failures += 1
            results[str(size)] = {"error": f"child exited with {code}"}
            continue
        results[str(size)] = json.loads(out.read_text())
    report = {
        "benchmark": "consolidate",
        "config": {k: v for k, v in vars(args).items() if k != "child"},
        "machine": machine(),
        "targets_no_llm_seconds": TARGETS_NO_LLM_SECONDS,
        "sizes": results,
    }
    path = RESULTS_DIR / f"{args.name}.json"
    write_json(path, report)
    print_table(report)
    print(f"\nJSON: {path.relative_to(REPO)}")
    return 1 if failures else 0


def child_flags(args: argparse.Namespace) -> list[str]:
    flags = [
        "--llm-sleep",
        str(args.llm_sleep),
        "--seed",
        str(args.seed),
        "--run-timeout",
        args.run_timeout,
        "--data-dir-prefix",
        args.data_dir_prefix,
        "--name",
        args.name,
        "--explain-sample",
        str(args.explain_sample),
        "--settle-runs",
        str(args.settle_runs),
    ]
    if args.llm_sizes is not None:
        flags += ["--llm-sizes", *map(str, args.llm_sizes)]
    if args.explain:
        flags.append("--explain")
    if not args.repeat:
        flags.append("--no-repeat")
    if args.reload:
        flags.append("--reload")
    return flags


def print_table(report: dict) -> None:
    # the cycle's phases in its order, as the child found them in the registry (consolidation.phases.registry)
    phases = next((r["phases"] for r in report["sizes"].values() if "phases" in r), [])
    print(f"\n{'run':<22}" + "".join(f"{p[:9]:>10}" for p in phases) + f"{'total':>10}{'rss MiB':>9}{'pg MiB':>8}")
    for size, r in report["sizes"].items():
        for label in RUN_LABELS:
            run = r.get(label)
            if not run:
                continue
            d = run["phase_durations"]
            print(
                f"{int(size):>7,} {label:<14}"
                + "".join(f"{d.get(p, 0):>10.2f}" for p in phases)
                + f"{run['total_seconds']:>10.2f}{run['peak_rss_mib']:>9.0f}{run['pg_peak_rss_mib'] or 0:>8.0f}"
            )
    print("\n(seconds; pg MiB = peak RSS of our PostgreSQL backend, shared buffers it touched included)")
    for size, r in report["sizes"].items():
        if "error" in r:
            print(f"{int(size):>7,}: {r['error']}")
            continue
        target = TARGETS_NO_LLM_SECONDS.get(int(size))
        no = r.get("no_llm", {})
        met = no.get("total_seconds", 1e9) <= (target or 0)
        verdict = "" if target is None else f" (target ≤ {target:.0f} s: {'met' if met else 'MISSED'})"
        print(f"{int(size):>7,}: structure {r['dataset']['structure']}")
        print(
            f"         load {r['dataset'].get('load_seconds')} s, reset {r.get('reset_seconds')} s; "
            f"no-LLM total {no.get('total_seconds')} s{verdict}"
        )
        for label in RUN_LABELS:
            run = r.get(label)
            if run:
                c = {k: v for k, v in run["counters"].items() if v}
                print(
                    f"         {label}: status {run['status']}, counters {c}, llm_calls {run['llm_calls']}, "
                    f"warnings {len(run['warnings'])}, errors {len(run['errors'])}"
                )
        if r.get("fake_llm"):
            print("         LLM calls and tokens (fake LLM; tokens ≈ characters / 4, system prompt included):")
            print(f"           first run:       {llm_line(r['fake_llm'], int(size))}")
            settle = r.get("fake_llm_settle") or []
            for n, run in enumerate(settle, start=1):
                print(f"           settling run {n}:  {llm_line(run, int(size))}")
            runs = [r["fake_llm"], *settle]
            total = {
                "llm_calls": sum(x["llm_calls"] for x in runs),
                "llm_input_tokens": sum(x["llm_input_tokens"] for x in runs),
                "llm_output_tokens": sum(x["llm_output_tokens"] for x in runs),
                "llm_by_purpose": {},
            }
            print(f"           to settle:       {llm_line(total, int(size))}")
            inc = r.get("fake_llm_incremental")
            if inc:
                print(
                    f"           incremental ({inc['new_memories']} new): {llm_line(inc, int(size))} "
                    f"(per 1,000 of the bank; {inc['llm_calls'] / inc['new_memories']:.2f} calls per new memory)"
                )
        if r.get("explain"):
            print("         neighbour-query variants (ms per id, recall of ≥0.7 edges vs exact):")
            for v in r["explain"]["variants"]:
                print(f"           {v['variant']:<46}{v['ms_per_id']:>8.3f} ms/id  recall {v.get('recall', '-')}")


# --- child -----------------------------------------------------------------------------------------


class _Sampler:
    """Peak RSS of a process (our PostgreSQL backend), sampled every 0.2 s."""

    def __init__(self, pid: int | None) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        try:
            proc = psutil.Process(self.pid)
        except Exception:
            return
        while not self._stop.is_set():
            with contextlib.suppress(Exception):
                self.peak = max(self.peak, proc.memory_info().rss)
            self._stop.wait(0.2)

    def __enter__(self) -> _Sampler:
        if self.pid:
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)


def child(args: argparse.Namespace) -> int:
    size = args.child
    os.environ.update(
        RB_DATA_DIR=f"{args.data_dir_prefix}-{size}",
        DEBUG="1",
        DJANGO_SETTINGS_MODULE="reasoningbank.settings",
        LOG_LEVEL="warning",
        LLM_PROVIDER="none",
        EMBEDDER="hashing",
        CONSOLIDATION_RUN_TIMEOUT=args.run_timeout,
    )
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    from _consolidation_bank import add_new_memories, ensure_dataset, reset, slice_make_due, table_info
    from _util import code_fingerprint, postgres, write_json

    from consolidation.phases.registry import phase_names

    project, dataset_info = ensure_dataset(size, args)
    result: dict[str, Any] = {
        "size": size,
        "code": code_fingerprint(REPO),
        "dataset": dataset_info,
        "postgres": postgres(),
        "table": table_info(),
        "loadavg_start": os.getloadavg(),
        "phases": list(phase_names()),
    }
    llm_sizes = args.llm_sizes if args.llm_sizes is not None else [size]

    from reasoningbank.ai.llm import NoLLM

    t = time.perf_counter()
    reset(project)
    result["reset_seconds"] = round(time.perf_counter() - t, 2)
    print(f"  no-LLM run ({size:,}) …", flush=True)
    result["no_llm"] = run_once(project, NoLLM())
    print(f"    total {result['no_llm']['total_seconds']} s  phases {result['no_llm']['phase_durations']}", flush=True)

    if args.repeat:
        # the same day, nothing left to merge: the recurring cost of a scheduled run on a settled bank
        print(f"  no-LLM run again, no reset ({size:,}) …", flush=True)
        result["no_llm_again"] = run_once(project, NoLLM())
        again = result["no_llm_again"]
        print(f"    total {again['total_seconds']} s  phases {again['phase_durations']}", flush=True)
        # a later day: one slice of the stored neighbour graph is due for another probe
        slice_make_due(project)
        print(f"  no-LLM run with one graph slice due ({size:,}) …", flush=True)
        result["no_llm_slice_due"] = due = run_once(project, NoLLM())
        print(f"    total {due['total_seconds']} s  phases {due['phase_durations']}", flush=True)

    if size in llm_sizes:
        reset(project)
        llm = fake_llm(args.llm_sleep)
        print(f"  fake-LLM run ({size:,}, {args.llm_sleep * 1000:.0f} ms per call) …", flush=True)
        result["fake_llm"] = run_once(project, llm)
        result["fake_llm"]["llm_sleep_seconds"] = args.llm_sleep
        print(
            f"    total {result['fake_llm']['total_seconds']} s  phases {result['fake_llm']['phase_durations']}",
            flush=True,
        )
        print(f"    LLM {llm_line(result['fake_llm'], size)}", flush=True)
        # the pairs the judge's per-run cap (CONSOLIDATION_MAX_JUDGED_PAIRS) left waiting, with the cap
        # lifted for these runs (bench only) so the bank settles in one or two: what consolidating the
        # whole bank costs; the last is a run with nothing new (the verdict cache at work)
        from django.conf import settings as django_settings

        cap = django_settings.CONSOLIDATION_MAX_JUDGED_PAIRS
        django_settings.CONSOLIDATION_MAX_JUDGED_PAIRS = 10**9
        result["fake_llm_settle"] = settle = []
        try:
            for _ in range(args.settle_runs):
                settle.append(run_once(project, llm))
                print(f"    settling run {len(settle)}: LLM {llm_line(settle[-1], size)}", flush=True)
                if settle[-1]["llm_calls"] == 0:
                    break
        finally:
            django_settings.CONSOLIDATION_MAX_JUDGED_PAIRS = cap
        # a day later: 1 % new memories, and one run over them (the verdicts of the earlier runs reused)
        new = add_new_memories(project, max(1, size // 100), seed=args.seed)
        result["fake_llm_incremental"] = incremental = run_once(project, llm)
        incremental["new_memories"] = new
        print(f"    incremental run ({new} new): LLM {llm_line(incremental, size)} (per 1,000 of the bank)", flush=True)

    if args.explain:
        reset(project)
        from _neighbours import experiments

        print("  neighbour-query experiments …", flush=True)
        result["explain"] = experiments(project, sample=args.explain_sample, seed=args.seed)
    result["loadavg_end"] = os.getloadavg()
    write_json(RESULTS_DIR / f"{args.name}-{size}.json", result)
    return 0


class FakeLLM:
    """Answers every prompt in its expected format (``bench/_fake_replies.py``) after ``sleep`` seconds,
    and counts tokens as a provider would bill them: system prompt + prompt in, reply out, at about 4
    characters a token (the stub server's count, ``bench/_stub_llm.py``). Thread safe (no state)."""

    provider, model = "fake", "bench-scripted"

    def __init__(self, sleep: float) -> None:
        self.sleep = sleep

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2048, temperature: float = 0.0) -> Any:
        from _fake_replies import reply_for

        from reasoningbank.ai.llm import LLMResult

        if self.sleep:
            time.sleep(self.sleep)
        text = reply_for(system, prompt)
        return LLMResult(
            text=text, provider=self.provider, model=self.model, input_tokens=(len(system) + len(prompt)) // 4,
            output_tokens=len(text) // 4, latency_ms=self.sleep * 1000, attempts=1,
        )  # fmt: skip


def fake_llm(sleep: float) -> Any:
    return FakeLLM(sleep)


def llm_line(run: dict[str, Any], per: int) -> str:
    """Calls and tokens of one run, in all and per 1,000 of ``per`` (memories, or new memories)."""
    k = 1000 / per
    purposes = ", ".join(f"{p} {v['calls']}" for p, v in sorted(run["llm_by_purpose"].items()))
    return (
        f"{run['llm_calls']} calls ({run['llm_calls'] * k:.1f} per 1,000), "
        f"{run['llm_input_tokens']:,} in + {run['llm_output_tokens']:,} out tokens "
        f"({(run['llm_input_tokens'] + run['llm_output_tokens']) * k:,.0f} per 1,000) [{purposes}]"
    )


def run_once(project: Any, llm: Any) -> dict[str, Any]:
    from _util import max_rss_mib
    from django.db import connection

    from accounts.access import system_principal
    from consolidation.run_state import RunOptions
    from consolidation.runs import consolidation_execute, consolidation_request

    principal = system_principal(project.organization)
    run = consolidation_request(principal=principal, project=project, options=RunOptions())
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    rss_before = max_rss_mib()
    t = time.perf_counter()
    with _Sampler(backend) as sampler:
        finished = consolidation_execute(run.id, llm=llm)
    total = time.perf_counter() - t
    assert finished is not None
    from django.db.models import Count, Sum

    from reasoningbank.models import LlmCall

    by_purpose = {
        row["purpose"]: {"calls": row["calls"], "input_tokens": row["i"] or 0, "output_tokens": row["o"] or 0}
        for row in LlmCall.objects.for_subject(finished)
        .values("purpose")
        .annotate(calls=Count("id"), i=Sum("input_tokens"), o=Sum("output_tokens"))
        .order_by()
    }
    return {
        "llm_input_tokens": finished.llm_input_tokens,
        "llm_output_tokens": finished.llm_output_tokens,
        "llm_by_purpose": by_purpose,
        "run_id": finished.id,
        "status": finished.status,
        "total_seconds": round(total, 3),
        "phase_durations": finished.phase_durations,
        "phase_sum_seconds": round(sum(finished.phase_durations.values()), 3),
        "counters": finished.counters,
        "llm_calls": finished.llm_calls,
        "warnings": finished.warnings[:10],
        "errors": finished.errors[:10],
        "peak_rss_mib": max_rss_mib(),
        "peak_rss_mib_before_run": rss_before,
        "pg_peak_rss_mib": round(sampler.peak / 2**20, 1) if sampler.peak else None,
    }


def configure(args: argparse.Namespace) -> int:
    os.environ.update(
        RB_DATA_DIR=f"{args.data_dir_prefix}-{args.configure}",
        DEBUG="1",
        DJANGO_SETTINGS_MODULE="reasoningbank.settings",
        LOG_LEVEL="warning",
    )
    import django

    django.setup()
    from django.db import connection

    with connection.cursor() as cursor:
        if args.shared_buffers == "default":
            cursor.execute("ALTER SYSTEM RESET shared_buffers")
        else:
            cursor.execute("ALTER SYSTEM SET shared_buffers = %s", [args.shared_buffers])
    connection.close()
    return 0


def main() -> int:
    # a SIGTERM (e.g. `timeout`) unwinds through the finally blocks that stop our subprocesses
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args = parse_args()
    if args.configure is not None:
        return configure(args)
    if args.child is not None:
        return child(args)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
