"""Distillation throughput through the REAL queue and workers (docs/memory-model.md#sessions-and-distillation).

    .venv/bin/python bench/distill.py                      # 200 sessions, 2 workers, 1.0 s LLM
    .venv/bin/python bench/distill.py --sessions 50 --q-poll 0.1 --llm-latency 0.5

What runs:
- a stub OpenAI-compatible LLM server (``bench/_stub_llm.py``, loopback, a fixed ``--llm-latency``
  per call, replies in the extraction format with 1-3 "## Memory N" blocks and a usage object);
- the product configured with ``LLM_PROVIDER=openai LLM_BASE_URL=http://127.0.0.1:<port>/v1``,
  so every call goes through ``OpenAILLM`` → the openai SDK → HTTP;
- a private embedded PostgreSQL in ``RB_DATA_DIR=.data/bench-distill`` (git-ignored), migrated;
- one enterprise org, a project and a token; ``--warmup`` sessions in a separate project first
  (workers started, SDK clients and caches warm), then ``--sessions`` realistic traces (5-20 KB)
  submitted with ``session_submit`` while ``manage.py qcluster`` (``Q_WORKERS=--workers``) runs;
- the script polls until every measured session is done/failed (or ``--timeout``), then reads
  the timings the product recorded (AgentSession created/started/finished, LlmCall.latency_ms).

Reported: wall time (first submit → last finish), sessions/minute, memories created, failures,
per-session overhead excluding the LLM wait ((finished − started) − Σ LlmCall.latency_ms), queue
latency (created → started), worker utilisation, and any on-demand consolidation runs that the
new memories triggered (they share the queue). JSON goes to ``bench/results/<--name>.json``.

The qcluster and the stub server are always stopped (SIGTERM, then SIGKILL of their own process
groups) and the run is bounded by ``--timeout``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

RESULTS_DIR = REPO / "bench" / "results"
TARGET_PER_MINUTE = 100


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Distillation throughput through django-q2 workers")
    p.add_argument("--sessions", type=int, default=200)
    p.add_argument("--workers", type=int, default=2, help="Q_WORKERS for the qcluster")
    p.add_argument("--llm-latency", type=float, default=1.0, help="seconds the stub LLM waits per call")
    p.add_argument(
        "--q-poll", type=float, default=None, help="Q_POLL_SECONDS for the qcluster (default: the product default, 0.5)"
    )
    p.add_argument("--warmup", type=int, default=4, help="sessions processed before the measured batch")
    p.add_argument("--topics", type=int, default=60, help="distinct tasks the sessions are about")
    p.add_argument("--min-kb", type=float, default=5.0)
    p.add_argument("--max-kb", type=float, default=20.0)
    p.add_argument("--timeout", type=float, default=900.0, help="hard limit for the measured batch (seconds)")
    p.add_argument(
        "--consolidation-wait",
        type=float,
        default=180.0,
        help="after the batch, wait this long for on-demand consolidation runs it triggered (0 = no)",
    )
    p.add_argument(
        "--profile-sessions",
        type=int,
        default=30,
        help="after the queue run, distil this many more sessions in-process with an instant LLM and "
        "break their time down by query (0 = skip)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=str(REPO / ".data" / "bench-distill"))
    p.add_argument("--name", default="distill", help="results file: bench/results/<name>.json")
    p.add_argument(
        "--qcluster-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the qcluster only (repeatable), e.g. DB_POOL=0",
    )
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for this process and the qcluster (repeatable)",
    )
    return p.parse_args()


# --- subprocesses ----------------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(proc: subprocess.Popen | None, name: str, grace: float = 30.0) -> None:
    """SIGTERM the process we started, then SIGKILL its own process group if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        print(f"  {name} did not stop in {grace:.0f}s; killing its process group {proc.pid}", file=sys.stderr)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # start_new_session=True: pgid == its pid
        proc.wait(timeout=10)
    # workers/monitor of a qcluster stopped gracefully are gone; make sure nothing was orphaned
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def start_stub(port: int, latency: float, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "bench" / "_stub_llm.py"), "--port", str(port), "--latency", str(latency)],
        cwd=REPO,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"stub LLM exited with {proc.returncode}; see {log}")
        with contextlib.suppress(OSError):
            if urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).status == 200:
                return proc
        time.sleep(0.1)
    _stop(proc, "stub LLM")
    raise RuntimeError("stub LLM did not start in 30 s")


def stub_stats(port: int) -> dict:
    import json

    with contextlib.suppress(OSError, ValueError):
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=2).read())
    return {}


def start_qcluster(log: Path, extra_env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"],
        cwd=REPO,
        env={**os.environ, **extra_env},
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


# --- the benchmark ---------------------------------------------------------------------------------


def wait_for(project, count: int, *, timeout: float, qcluster: subprocess.Popen, label: str) -> bool:
    from memories.models import AgentSession

    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if qcluster.poll() is not None:
            raise RuntimeError(f"qcluster exited with {qcluster.returncode} during {label}")
        done = AgentSession.objects.filter(
            project=project, status__in=[AgentSession.STATUS_DONE, AgentSession.STATUS_FAILED]
        ).count()
        line = f"  {label}: {done}/{count} finished"
        if line != last:
            print(line, end="\r", flush=True)
            last = line
        if done >= count:
            print()
            return True
        time.sleep(0.5)
    print()
    return False


def collect(project, t0, workers: int) -> dict:
    from _util import latency
    from django.db.models import Count, Sum

    from consolidation.models import ConsolidationRun
    from memories.models import AgentSession, Memory
    from reasoningbank.models import LlmCall

    sessions = list(
        AgentSession.objects.filter(project=project).values(
            "id", "status", "attempts", "created_at", "started_at", "finished_at"
        )
    )
    llm = {
        row["subject_id"]: row
        for row in LlmCall.objects.filter(
            subject_type=AgentSession._meta.label_lower,
            subject_id__in=[s["id"] for s in sessions],
        )
        .values("subject_id")
        .annotate(ms=Sum("latency_ms"), n=Count("id"))
    }
    finished = [s for s in sessions if s["finished_at"] is not None and s["started_at"] is not None]
    statuses: dict[str, int] = {}
    for s in sessions:
        statuses[s["status"]] = statuses.get(s["status"], 0) + 1
    overhead, service, queue, llm_ms = [], [], [], []
    for s in finished:
        busy = (s["finished_at"] - s["started_at"]).total_seconds() * 1000
        waited = llm.get(s["id"], {}).get("ms") or 0.0
        service.append(busy)
        llm_ms.append(waited)
        overhead.append(busy - waited)
        queue.append((s["started_at"] - s["created_at"]).total_seconds() * 1000)
    last = max((s["finished_at"] for s in finished), default=t0)
    first_started = min((s["started_at"] for s in finished), default=t0)
    wall = (last - t0).total_seconds()
    created = Memory.objects.filter(project=project, origin=Memory.ORIGIN_DISTILLED).count()
    reinforced = Memory.objects.filter(project=project).aggregate(u=Sum("usage_count"))["u"] or 0
    runs = list(
        ConsolidationRun.objects.filter(project=project).values(
            "id", "trigger", "status", "started_at", "finished_at", "llm_calls", "phase_durations", "counters"
        )
    )
    run_seconds = [
        (r["finished_at"] - r["started_at"]).total_seconds() for r in runs if r["finished_at"] and r["started_at"]
    ]
    busy_total = sum(service) / 1000
    return {
        "sessions": len(sessions),
        "statuses": statuses,
        "failed": statuses.get(AgentSession.STATUS_FAILED, 0),
        "wall_seconds": round(wall, 3),
        "first_start_delay_seconds": round((first_started - t0).total_seconds(), 3),
        "sessions_per_minute": round(len(finished) / wall * 60, 2) if wall > 0 else None,
        "memories_created": created,
        "memories_reinforced_usage": reinforced,
        "llm_calls": sum(v["n"] for v in llm.values()),
        "per_session_llm_ms": latency(llm_ms),
        "per_session_service_ms": latency(service),
        "per_session_overhead_ms": latency(overhead),
        "queue_latency_ms": latency(queue),
        "worker_utilisation": round(busy_total / (workers * wall), 4) if wall > 0 else None,
        "worker_gap_ms_per_session": round((workers * wall - busy_total) / max(1, len(finished)) * 1000, 1)
        if wall > 0
        else None,
        "consolidation_runs": {
            "count": len(runs),
            "seconds_total": round(sum(run_seconds), 3),
            "runs": [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in r.items()} for r in runs],
        },
    }


def wait_runs(project, timeout: float, qcluster: subprocess.Popen) -> list[dict]:
    """Consolidation runs the batch triggered (on-demand, Teams+) share the queue; let them finish."""
    from consolidation.models import ConsolidationRun

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and qcluster.poll() is None:
        if not ConsolidationRun.objects.filter(project=project, status__in=["queued", "running"]).exists():
            break
        time.sleep(0.5)
    out = []
    for r in ConsolidationRun.objects.filter(project=project).order_by("created_at"):
        out.append(
            {
                "id": r.id,
                "trigger": r.trigger,
                "status": r.status,
                "queued_seconds": round((r.started_at - r.created_at).total_seconds(), 2) if r.started_at else None,
                "seconds": round((r.finished_at - r.started_at).total_seconds(), 2)
                if r.finished_at and r.started_at
                else None,
                "llm_calls": r.llm_calls,
                "phase_durations": r.phase_durations,
                "counters": r.counters,
            }
        )
    return out


def profile_inline(principal, project, rng: random.Random, args: argparse.Namespace) -> dict:
    """Where the non-LLM time of one distillation goes: run session_process in this process with an
    instant fake LLM and group the SQL by statement shape (queue and HTTP excluded)."""
    import re
    from collections import defaultdict

    from _fake_replies import reply_for
    from _traces import make_trace
    from _util import latency
    from django.db import connection
    from django_q.models import OrmQ

    from memories.sessions.services import session_process, session_submit
    from reasoningbank.ai.llm import LLMResult

    class InstantLLM:
        provider, model = "fake", "instant"

        def complete(self, *, system: str, prompt: str, max_tokens: int = 2048, temperature: float = 0.0):
            text = reply_for(system, prompt)
            return LLMResult(text, "fake", "instant", len(prompt) // 4, len(text) // 4, 0.0, 1)

    ids = []
    for i in range(args.profile_sessions):
        size = int(rng.uniform(args.min_kb, args.max_kb) * 1024)
        trace = make_trace(rng, topic=rng.randrange(args.topics), target_bytes=size)
        ids.append(
            session_submit(
                principal=principal,
                session_id=f"profile-{time.time_ns()}-{i}",
                outcome="success",
                trace=trace,
                project=project.slug,
            ).session.id
        )
    OrmQ.objects.all().delete()  # the cluster is stopped; these are processed inline below
    shapes: dict[str, list[float]] = defaultdict(list)
    norm = re.compile(r"'[^']*'|\b\d+(\.\d+)?\b|\[[^\]]*\]")

    def wrapper(execute, sql, params, many, context):
        t = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            shapes[norm.sub("?", sql)[:110]].append((time.perf_counter() - t) * 1000)

    llm = InstantLLM()
    totals = []
    with connection.execute_wrapper(wrapper):
        for sid in ids:
            t = time.perf_counter()
            session_process(sid, llm=llm)
            totals.append((time.perf_counter() - t) * 1000)
    n = len(ids)
    rows = sorted(
        (
            {"sql": k, "calls_per_session": round(len(v) / n, 2), "ms_per_session": round(sum(v) / n, 2)}
            for k, v in shapes.items()
        ),
        key=lambda r: -r["ms_per_session"],
    )
    sql_ms = sum(r["ms_per_session"] for r in rows)
    out = {
        "sessions": n,
        "total_ms": latency(totals),
        "sql_ms_per_session": round(sql_ms, 2),
        "queries_per_session": round(sum(r["calls_per_session"] for r in rows), 1),
        "by_statement": rows[:15],
    }
    print(
        f"\nin-process profile ({n} sessions, instant LLM): {out['total_ms']['p50']:.1f} ms p50 per session, "
        f"{out['queries_per_session']} queries, {sql_ms:.1f} ms in SQL"
    )
    for r in rows[:10]:
        print(f"  {r['ms_per_session']:7.2f} ms  {r['calls_per_session']:5.2f}×  {r['sql'][:100]}")
    return out


def main() -> int:
    # a SIGTERM (e.g. `timeout`) unwinds through the finally blocks that stop our subprocesses
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    args = parse_args()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = {
        "RB_DATA_DIR": args.data_dir,
        "DEBUG": "1",
        "DJANGO_SETTINGS_MODULE": "reasoningbank.settings",
        "LOG_LEVEL": "warning",
        "LLM_PROVIDER": "openai",
        "LLM_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "LLM_API_KEY": "stub",
        "LLM_MODEL": "stub-model",
        "Q_WORKERS": str(args.workers),
        "EMBEDDER": "hashing",
    }
    if args.q_poll is not None:
        env["Q_POLL_SECONDS"] = str(args.q_poll)
    for item in args.env:
        key, _, value = item.partition("=")
        env[key] = value
    os.environ.update(env)
    for name in ("DATABASE_URL", "REDIS_URL", "Q_SYNC"):
        os.environ.pop(name, None)

    stub = qcluster = None
    stub_log = RESULTS_DIR / f"{args.name}-stub.log"
    q_log = RESULTS_DIR / f"{args.name}-qcluster.log"
    try:
        stub = start_stub(port, args.llm_latency, stub_log)
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", "--noinput", verbosity=0)
        from _traces import make_trace
        from _util import code_fingerprint, machine
        from django.conf import settings
        from django.utils import timezone
        from django_q.models import OrmQ, Schedule

        from accounts.access import principal_for_token
        from accounts.services import organization_create, project_create, token_create
        from memories.models import AgentSession
        from memories.sessions.services import session_submit

        # a dedicated database: leftovers of an aborted earlier run must not compete for the workers
        stale = OrmQ.objects.count()
        OrmQ.objects.all().delete()
        Schedule.objects.all().delete()
        AgentSession.objects.filter(status__in=["queued", "running", "waiting_for_llm"]).update(status="failed")

        stamp = timezone.now().strftime("%Y%m%d%H%M%S")
        org = organization_create(slug=f"bench-distill-{stamp}", plan="enterprise")
        warm_project = project_create(organization=org, slug="warmup", actor=None)
        project = project_create(organization=org, slug="main", actor=None)
        token, _ = token_create(organization=org, label="bench")
        principal = principal_for_token(token)

        rng = random.Random(args.seed)

        def traces(n: int, offset: int) -> list[tuple[str, str, str]]:
            out = []
            for i in range(n):
                size = int(rng.uniform(args.min_kb, args.max_kb) * 1024)
                ids = [f"mem_{rng.getrandbits(120):026x}"[:30] for _ in range(2)] if rng.random() < 0.2 else None
                trace = make_trace(rng, topic=rng.randrange(args.topics), target_bytes=size, memory_ids=ids)
                outcome = rng.choices(["success", "failure", "unknown"], [0.6, 0.3, 0.1])[0]
                out.append((f"bench-{stamp}-{offset + i}", outcome, trace))
            return out

        warm = traces(args.warmup, 0)
        measured = traces(args.sessions, 100_000)
        sizes = [len(t.encode()) for _, _, t in measured]
        print(
            f"traces: {len(measured)} of {min(sizes) / 1024:.1f}-{max(sizes) / 1024:.1f} KB "
            f"(mean {sum(sizes) / len(sizes) / 1024:.1f} KB); stub LLM on 127.0.0.1:{port} "
            f"latency {args.llm_latency}s; workers={args.workers} "
            f"poll={settings.Q_CLUSTER['poll']}s pool={'pool' in settings.DATABASES['default'].get('OPTIONS', {})}"
        )

        qcluster = start_qcluster(q_log, dict(item.partition("=")[::2] for item in args.qcluster_env))
        t_warm = time.monotonic()
        for sid, outcome, trace in warm:
            session_submit(principal=principal, session_id=sid, outcome=outcome, trace=trace, project=warm_project.slug)
        if args.warmup and not wait_for(warm_project, args.warmup, timeout=120, qcluster=qcluster, label="warm-up"):
            raise RuntimeError(f"warm-up did not finish in 120 s; see {q_log}")
        print(f"  warm-up done in {time.monotonic() - t_warm:.1f}s (includes qcluster start)")

        t0 = timezone.now()
        submit_ms = []
        for sid, outcome, trace in measured:
            s = time.perf_counter()
            session_submit(principal=principal, session_id=sid, outcome=outcome, trace=trace, project=project.slug)
            submit_ms.append((time.perf_counter() - s) * 1000)
        submitted_s = (timezone.now() - t0).total_seconds()
        ok = wait_for(project, args.sessions, timeout=args.timeout, qcluster=qcluster, label="measured")
        result = collect(project, t0, args.workers)
        result["consolidation_after_batch"] = wait_runs(project, args.consolidation_wait, qcluster)
        from _util import latency

        result.update(
            completed_in_time=ok,
            submit_ms=latency(submit_ms),
            submit_seconds_total=round(submitted_s, 3),
            stub=stub_stats(port),
            stale_queue_rows_removed=stale,
        )
        report = {
            "benchmark": "distill",
            "config": {
                **vars(args),
                "env": {k: v for k, v in env.items() if k != "LLM_API_KEY"},
                "trace_kb_mean": round(sum(sizes) / len(sizes) / 1024, 2),
            },
            "machine": machine(),
            "code": code_fingerprint(REPO),
            "effective": {
                "q_poll_seconds": settings.Q_CLUSTER["poll"],
                "bench_process_db_pool": "pool" in settings.DATABASES["default"].get("OPTIONS", {}),
                "qcluster_env": args.qcluster_env,
            },
            "target_sessions_per_minute": TARGET_PER_MINUTE,
            "result": result,
        }
    finally:
        _stop(qcluster, "qcluster")
        _stop(stub, "stub LLM", grace=5)
    if args.profile_sessions:
        report["profile"] = profile_inline(principal, project, rng, args)

    from _util import write_json

    out = RESULTS_DIR / f"{args.name}.json"
    write_json(out, report)
    print_table(report)
    print(f"\nJSON: {out.relative_to(REPO)}")
    return 0 if result["completed_in_time"] else 1


def print_table(report: dict) -> None:
    r = report["result"]
    ceiling = report["config"]["workers"] * 60 / report["config"]["llm_latency"]
    rows = [
        ("sessions (statuses)", f"{r['sessions']} {r['statuses']}"),
        ("wall time (first submit → last finish)", f"{r['wall_seconds']:.1f} s"),
        (
            "throughput",
            f"{r['sessions_per_minute']} sessions/min (target ≥ {TARGET_PER_MINUTE}, "
            f"ceiling {ceiling:.0f} with {report['config']['workers']} workers × 1 call)",
        ),
        ("memories created / usage reinforced", f"{r['memories_created']} / {r['memories_reinforced_usage']}"),
        ("failures", str(r["failed"])),
        ("LLM calls", str(r["llm_calls"])),
        ("worker utilisation", f"{r['worker_utilisation']:.1%}" if r["worker_utilisation"] is not None else "-"),
        ("idle gap per session (workers×wall − busy)/n", f"{r['worker_gap_ms_per_session']} ms"),
        (
            "consolidation runs triggered (on-demand)",
            "; ".join(
                f"{c['status']} after {c['queued_seconds']} s in queue, ran {c['seconds']} s, "
                f"{c['llm_calls']} LLM calls"
                for c in r["consolidation_after_batch"]
            )
            or "none",
        ),
        ("submit (session_submit) total", f"{r['submit_seconds_total']} s"),
    ]
    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    print(f"\n{'ms':<26}{'p50':>10}{'p90':>10}{'p99':>10}{'max':>10}")
    for label, key in (
        ("submit", "submit_ms"),
        ("queue latency", "queue_latency_ms"),
        ("service (start→finish)", "per_session_service_ms"),
        ("LLM wait", "per_session_llm_ms"),
        ("overhead excl. LLM", "per_session_overhead_ms"),
    ):
        s = r[key]
        print(f"{label:<26}{s['p50']:>10.1f}{s['p90']:>10.1f}{s['p99']:>10.1f}{s['max']:>10.1f}")


if __name__ == "__main__":
    sys.exit(main())
