"""Many MCP agents at once on a Teams-plan project with automatic consolidation (docs/concurrency.md):
latency (p50/p90/p99 per tool and overall), throughput, and the counts the e2e load test asserts
(failed calls, failed consolidation runs, dropped usage signals).

    .venv/bin/python bench/load.py                         # 50 agents for 60 s (the e2e test's load)
    .venv/bin/python bench/load.py --agents 20 --seconds 30
    .venv/bin/python bench/load.py --env REQUEST_CONCURRENCY=40   # a setting changed for the service

The service is ``scripts/run.sh`` exactly as a user starts it, in the default configuration, on a
fresh data directory (a temporary one, removed afterwards), with a loopback OpenAI-compatible LLM
stub so the worker really distils and consolidates (``tests/e2e/harness.py``). An org on the
Teams plan, one project, one token (``manage.py create_org/create_project/create_token``); then
the agents of ``tests/e2e/agent_load.py``: each an official MCP SDK client in its own session
(the two protocol eras alternately), one ``memory_record`` for every three ``memory_search`` calls,
back to back, for the given time. Every 20 new memories the project's on-demand consolidation
queues a run, so the worker consolidates underneath the whole time.

Latencies are client-observed milliseconds of successful calls; throughput is calls per second of
the load's wall time. The 1/5/15-minute load averages before and after are recorded: on this shared
2-core machine the figures move with other load, so run it alone. Output: a table on stdout and
``bench/results/load-<agents>x<seconds>s-<date>.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import anyio  # noqa: E402
import httpx2  # noqa: E402
from common import RESULTS_DIR, Latency, machine_info, revision  # noqa: E402
from hooks_code import process_cpu_seconds  # noqa: E402

from tests.e2e.agent_load import agents_run, metric_value  # noqa: E402
from tests.e2e.harness import Service, completed_text, token_from, unique  # noqa: E402
from tests.e2e.llm_stub import LLMStub  # noqa: E402

SETTLE_WITHIN = 300  # seconds for the runs the load queued to finish


class DefaultService(Service):
    """run.sh in the default configuration: none of the e2e suite's overrides (a smaller PostgreSQL
    cache, the auth throttle out of reach), only the LLM stub and what ``--env`` sets (``extra_env``) —
    but the write limits stay off, as in the e2e suite: fifty agents share one token here, where a team
    gives each agent its own, and one token's limit would measure the limit rather than the service."""

    def env(self) -> dict[str, str]:
        env = super().env()
        for name in ("RB_PG_SHARED_BUFFERS", "AUTH_THROTTLE_FAILURES", "AUTH_THROTTLE_PREFIX_FAILURES"):
            if name not in self.extra_env:
                env.pop(name, None)
        return env


def commit() -> str | None:
    """The checked-out commit (``common.revision`` reads ``.git``, which a git worktree has as a file)."""
    found = revision()
    if found is None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            found = subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
            ).stdout.strip()
    return found


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the service (repeatable)")
    return parser.parse_args()


def manage(service: Service, *args: str) -> str:
    result = service.manage(*args)
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{completed_text(result)}")
    return result.stdout


def counts(service: Service, org: str) -> dict[str, Any]:
    metrics = httpx2.get(f"{service.url}/metrics", timeout=30).text
    runs = service.sql(
        "SELECT r.status, count(*) FROM consolidation_consolidationrun r "
        "JOIN accounts_organization o ON o.id = r.organization_id WHERE o.slug = %s GROUP BY r.status",
        (org,),
    )
    return {
        "runs": dict(runs),
        "usage_signals_written": metric_value(metrics, "reasoningbank_usage_signals_total", outcome="written"),
        "usage_signals_dropped": metric_value(metrics, "reasoningbank_usage_signals_total", outcome="dropped"),
        "usage_write_retries": metric_value(metrics, "reasoningbank_usage_write_retries_total"),
        "queue_timeouts": metric_value(metrics, "reasoningbank_request_queue_timeouts_total"),
        "queue_wait_seconds_sum": metric_value(metrics, "reasoningbank_request_queue_wait_seconds_sum"),
        "queue_wait_count": metric_value(metrics, "reasoningbank_request_queue_wait_seconds_count"),
        "stored_usage_signals": int(
            service.sql("SELECT count(*) FROM memories_memorysignal WHERE type = 'usage'")[0][0]
        ),
        "memories": int(
            service.sql(
                "SELECT count(*) FROM memories_memory m JOIN accounts_organization o ON o.id = m.organization_id "
                "WHERE o.slug = %s",
                (org,),
            )[0][0]
        ),
    }


WARM_UP = 10.0  # seconds

# where the machine's CPU went during the load, by process (the command line's first match)
ROLES = (("web", "uvicorn"), ("worker", "qcluster"), ("PostgreSQL", "postgres"))


def cpu_by_role() -> dict[str, float]:
    """CPU seconds used so far by every live process, by role: this process (the 50 agents' clients and the LLM
    stub), web, the workers, PostgreSQL, and the rest of the machine (other users' work counts there)."""
    spent = dict.fromkeys(["agents (this process)", *(role for role, _ in ROLES), "other"], 0.0)
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        if int(proc.name) == os.getpid():
            role = "agents (this process)"
        else:
            role = next((role for role, word in ROLES if word in cmdline), "other")
        spent[role] += process_cpu_seconds(int(proc.name))
    return spent


def main() -> None:
    args = parse_args()
    extra_env = dict(item.split("=", 1) for item in args.env)
    stub = LLMStub()
    stub.start()
    data_dir = Path(tempfile.mkdtemp(prefix="rb-bench-load-"))
    service = DefaultService(data_dir=data_dir, llm_base_url=stub.base_url, extra_env=extra_env)
    result: dict[str, Any] = {"machine": machine_info(), "commit": commit(), "settings": extra_env}
    try:
        print(f"starting run.sh on {data_dir} …", flush=True)
        service.start()
        org = unique("load").lower()
        manage(service, "create_org", org, "--plan", "teams", "--owner-email", f"{org}@example.com")
        manage(service, "create_project", org, "agents")
        token = token_from(manage(service, "create_token", org, "--label", "agents", "--project", "agents"))
        result["loadavg_before"] = os.getloadavg()
        print(f"{args.agents} agents for {args.seconds:g} s (load average {result['loadavg_before'][0]:.2f}) …")
        cpu_before = cpu_by_role()
        began_at = time.time()
        began = time.monotonic()
        load = anyio.run(
            lambda: agents_run(service.url, token, agents=args.agents, seconds=args.seconds, marker=unique())
        )
        wall = time.monotonic() - began
        cpu_after = cpu_by_role()
        result["cpu_ms_per_call"] = {
            role: round((cpu_after[role] - cpu_before[role]) * 1000 / max(1, load.count()), 1) for role in cpu_after
        }
        result["loadavg_after"] = os.getloadavg()
        deadline = time.monotonic() + SETTLE_WITHIN
        seen = counts(service, org)
        while time.monotonic() < deadline and ({"queued", "running"} & set(seen["runs"])):
            time.sleep(2)
            seen = counts(service, org)
        result["counts"] = seen
        result["runs_s"] = [  # each consolidation run's start and end, in seconds since the load began
            [round(float(start) - began_at, 1), round(float(end) - began_at, 1)]
            for start, end in service.sql(
                "SELECT extract(epoch FROM r.started_at), extract(epoch FROM r.finished_at) "
                "FROM consolidation_consolidationrun r JOIN accounts_organization o ON o.id = r.organization_id "
                "WHERE o.slug = %s AND r.started_at IS NOT NULL AND r.finished_at IS NOT NULL ORDER BY 1",
                (org,),
            )
        ]
        result["calls"] = {
            tool or "all": {
                "calls": load.count(tool),
                "failed": sum(1 for c in load.calls if c.error and (tool is None or c.tool == tool)),
                "latency_ms": Latency.of(load.latencies_ms(tool)).as_dict(),
            }
            for tool in (None, "memory_search", "memory_record")
        }
        # every agent's first call is a record, so the load opens with fifty sessions and fifty records at once:
        # the same figures without the calls started in its first WARM_UP seconds
        steady = [c.ms for c in load.calls if not c.error and c.started >= WARM_UP]
        result["steady_latency_ms"] = Latency.of(steady).as_dict() if steady else None
        result["wall_seconds"] = round(wall, 2)
        result["throughput_per_s"] = round(load.count() / wall, 2)
        result["failures"] = load.failures[:50]
        # when the tail happened (seconds since the load began): a cluster points at what the service did then
        slowest = sorted((c for c in load.calls if not c.error), key=lambda c: -c.ms)[:20]
        result["slowest_calls"] = [
            {"tool": c.tool, "started_s": round(c.started, 1), "ms": round(c.ms)} for c in slowest
        ]
        report(args, result)
    finally:
        service.kill_everything()
        stub.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    name = f"load-{args.agents}x{args.seconds:g}s-{time.strftime('%Y%m%d-%H%M%S')}.json"
    (RESULTS_DIR / name).write_text(json.dumps(result, indent=2, default=str))
    print(f"\nresults: bench/results/{name}")


def report(args: argparse.Namespace, result: dict[str, Any]) -> None:
    machine = result["machine"]
    print(
        f"\n{args.agents} MCP agents × {args.seconds:g} s, {machine['date']}, {machine.get('cpu', '?')} "
        f"({machine['nproc']} cores), load average {result['loadavg_before'][0]:.2f} → {result['loadavg_after'][0]:.2f}"
    )
    print(f"{'tool':<15}{'calls':>7}{'failed':>8}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for tool, row in result["calls"].items():
        lat = row["latency_ms"]
        print(
            f"{tool:<15}{row['calls']:>7}{row['failed']:>8}{lat['p50']:>9.0f}{lat['p90']:>9.0f}{lat['p99']:>9.0f}"
            f"{lat['max']:>9.0f}"
        )
    if steady := result["steady_latency_ms"]:
        print(
            f"{'after ' + format(WARM_UP, 'g') + ' s':<15}{steady['n']:>7}{'':>8}{steady['p50']:>9.0f}"
            f"{steady['p90']:>9.0f}{steady['p99']:>9.0f}{steady['max']:>9.0f}"
        )
    seen = result["counts"]
    waited = seen["queue_wait_seconds_sum"] / seen["queue_wait_count"] if seen["queue_wait_count"] else 0.0
    print(
        f"throughput {result['throughput_per_s']:.1f} calls/s over {result['wall_seconds']:.0f} s; "
        f"consolidation runs {seen['runs']}; usage signals written {seen['usage_signals_written']:.0f}, "
        f"dropped {seen['usage_signals_dropped']:.0f} (stored {seen['stored_usage_signals']}), write retries "
        f"{seen['usage_write_retries']:.0f}; mean queue wait {waited * 1000:.0f} ms, queue timeouts "
        f"{seen['queue_timeouts']:.0f}; {seen['memories']} memories"
    )
    shares = result["cpu_ms_per_call"]
    print(
        f"CPU ms per call during the load ({sum(shares.values()):.1f} in all; processes that exited meanwhile are "
        "not counted): " + ", ".join(f"{role} {ms:.1f}" for role, ms in shares.items())
    )
    for failure in result["failures"][:10]:
        print("  failed:", failure[:300])


if __name__ == "__main__":
    main()
