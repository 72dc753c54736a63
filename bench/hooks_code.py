"""Recall at the moment of action (docs/code-memory.md#recall-at-the-moment-of-action): p50 / p99 of the
Claude Code plugin's ``tool`` hook as Claude Code runs it — a Python process given the PreToolUse,
PostToolUseFailure or PostToolUse event on stdin, calling a real uvicorn server — against a bank of N
memories, Python's start included.

Uses ``bench/search.py``'s dataset (org ``bench``, N memories; load it first with ``bench/search.py
--sizes N --load-only``) and a token restricted to project ``web-app``, like ``bench/hooks.py``. It anchors
one memory in five of the bench organisation to a file of a synthetic repository (``github.com/bench/app``,
200 module directories of 10 files each, so a file has about ten memories and its directory about a
hundred) and one in fifty to one of 400 error signatures (idempotent: anchors already there are kept).
Measured, each ``--calls`` times after 5 warm-up calls, in sessions of ``--per-session`` events so the
session's ledger takes effect as in a real session:

- ``pre_tool_use``: a Read of a file of the repository (a working tree with ``git init`` and the origin
  remote), two in three of them anchored files, the others unanchored files of anchored directories;
- ``post_tool_use_failure``: a failing ``pytest`` whose traceback matches an anchored signature (other
  directories and line numbers than the anchor's), one in four an error no memory is anchored to;
- ``post_tool_use``: a Bash that passed (the hook reads its output and sends nothing).

The process start of Python itself (``python -c pass``) is measured too: no hook can go below it.

    .venv/bin/python bench/hooks_code.py --size 100000 --calls 200
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import Latency, django_setup, machine_info, uvicorn_server, write_json

REPO = Path(__file__).resolve().parent.parent
HOOK = REPO / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py"
RESULTS = Path(__file__).resolve().parent / "results"
REPOSITORY, REMOTE = "github.com/bench/app", "git@github.com:bench/app.git"
MODULES, FILES_PER_MODULE, SIGNATURES = 200, 10, 400
PATH_EVERY, ERROR_EVERY = 5, 50  # one memory in five anchored to a file, one in fifty to an error


def module_file(n: int) -> str:
    return f"src/module_{n % MODULES:03d}/file_{n // MODULES % FILES_PER_MODULE}.py"


def traceback(n: int, root: str, line: int) -> str:
    """Failure ``n`` (one of SIGNATURES kinds) as pytest prints it under ``root``, at line ``line``."""
    module = f"{root}/src/module_{n % MODULES:03d}"
    return (
        "Exception: Command failed\nExit code 1\n"
        "Traceback (most recent call last):\n"
        f'  File "{root}/tests/test_module_{n:03d}.py", line {line}, in test_case_{n}\n'
        f'  File "{module}/file_{n % FILES_PER_MODULE}.py", line {line + 7}, in handler_{n}\n'
        f"ValueError: invalid state {n} for order {line * 31} (kind {n})\n"
    )


def anchors_ensure(orgs: dict[str, Any]) -> dict[str, int]:
    """The bench organisation's anchors (file and error), created once."""
    from django.db import connection

    from memories.code.signatures import error_signature
    from memories.models import Memory, MemoryAnchor

    org = orgs["bench"].org
    existing = MemoryAnchor.objects.filter(organization=org, repository=REPOSITORY).count()
    errors = MemoryAnchor.objects.filter(organization=org).exclude(error_signature="")
    kind_one = error_signature(traceback(1, "/home/dev/app", 12))
    assert kind_one is not None
    if existing and errors.filter(error_signature=kind_one.digest).exists():
        return {"file_anchors": existing, "error_anchors": errors.count()}
    errors.delete()  # anchors of an earlier version of this script: every kind must be anchored
    ids = list(
        Memory.objects.filter(organization=org, state=Memory.STATE_ACTIVE).order_by("id").values_list("id", flat=True)
    )
    rows = []
    for i, memory_id in enumerate(ids):
        if i % PATH_EVERY == 0 and not existing:
            rows.append(MemoryAnchor(organization=org, memory_id=memory_id, repository=REPOSITORY, path=module_file(i)))
        if i % ERROR_EVERY == 0:
            signature = error_signature(traceback(i // ERROR_EVERY % SIGNATURES, "/home/dev/app", 12))
            assert signature is not None
            rows.append(
                MemoryAnchor(
                    organization=org, memory_id=memory_id, error_signature=signature.digest, error_text=signature.text
                )
            )
    MemoryAnchor.objects.bulk_create(rows, batch_size=5000)
    # as autovacuum would soon after: without statistics the planner reads every anchor of the repository
    # for a path (the bench would measure a table just loaded, not one in use)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memoryanchor")
    return anchors_ensure(orgs)


def hook_run(
    event: dict[str, Any], env: dict[str, str], python: str, action: str = "tool"
) -> tuple[float, float, str, str]:
    """The hook's wall time from its start to its exit, its CPU time (user + system: comparable across the
    machine's load, the interpreter's start included), and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)  # the server is a child too, but never reaped here
    started = time.perf_counter()
    done = subprocess.run(
        [python, str(HOOK), action],
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, done.stdout, done.stderr


def process_cpu_seconds(pid: int) -> float:
    """User + system seconds a process has used so far (Linux ``/proc``; 0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_seconds(server_pid: int) -> float:
    """The server's CPU so far: the uvicorn process and every process of the bench's PostgreSQL (its
    backends, the one serving uvicorn among them)."""
    total = process_cpu_seconds(server_pid)
    pid_file = Path(os.environ["RB_DATA_DIR"]) / "pg" / "postmaster.pid"
    try:
        postmaster = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return total
    total += process_cpu_seconds(postmaster)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                total += process_cpu_seconds(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return total


def injected_tokens(stdout: str) -> int:
    return math.ceil(len(json.loads(stdout)["hookSpecificOutput"]["additionalContext"]) / 4) if stdout else 0


def python_start(python: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([python, "-c", "pass"], check=True)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def events_of(kind: str, count: int, per_session: int, root: Path, rng: random.Random) -> list[dict[str, Any]]:
    events, session = [], ""
    for n in range(count):
        if n % per_session == 0:
            session = f"bench-{uuid.uuid4()}"
        base = {"session_id": session, "transcript_path": None, "cwd": str(root), "permission_mode": "default"}
        if kind == "pre_tool_use":
            index = rng.randrange(MODULES * FILES_PER_MODULE)
            # two in three an anchored file (index a multiple of PATH_EVERY), else a file of the same directory
            index = index - index % PATH_EVERY + (0 if rng.random() < 2 / 3 else 1)
            path = root / module_file(index)
            events.append({**base, "hook_event_name": "PreToolUse", "tool_name": "Read",
                           "tool_input": {"file_path": str(path)}, "tool_use_id": f"toolu_{n}"})  # fmt: skip
        elif kind == "post_tool_use_failure":
            known = rng.random() < 0.75
            which = rng.randrange(SIGNATURES) if known else SIGNATURES + rng.randrange(10_000)
            output = traceback(which, str(root), 40 + rng.randrange(200)) if known else traceback(which, str(root), 3)
            events.append({**base, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                           "tool_input": {"command": "python -m pytest -q"}, "tool_use_id": f"toolu_{n}",
                           "error": output, "is_interrupt": False})  # fmt: skip
        else:
            events.append({**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                           "tool_input": {"command": "python -m pytest -q"}, "tool_use_id": f"toolu_{n}",
                           "tool_response": {"stdout": "." * 400 + "\n200 passed in 3.1s", "stderr": "",
                                             "interrupted": False, "isImage": False}})  # fmt: skip
    return events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="the bench/search.py dataset size to use")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--per-session", type=int, default=20, help="tool events per simulated session")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter that runs the hook (default: this one; a user's python3 has no editable install)",
    )
    parser.add_argument(
        "--profile", action="store_true",
        help="instead: where the server's time goes (bench/_recall_profile.py), in this process, no hook run",
    )  # fmt: skip
    args = parser.parse_args()
    os.environ.setdefault("RB_DATA_DIR", str(REPO / ".data" / "bench"))
    os.environ.setdefault("LLM_PROVIDER", "none")
    django_setup(migrate=True)

    from bench._dataset import dataset_ensure
    from bench.search import bench_token

    dataset = dataset_ensure(args.size, reset=False, log=print)
    orgs = dataset.pop("orgs")
    anchors = anchors_ensure(orgs)
    print(f"anchors: {anchors}")
    token, raw_token = bench_token(orgs)
    if args.profile:
        from bench._recall_profile import print_profile, profile_recall

        report = profile_recall(token, raw_token, args.calls, module_file, traceback)
        print_profile(report)
        write_json(RESULTS / f"hooks-code-profile-{args.size}.json", {"machine": machine_info(), "profile": report})
        return
    rng = random.Random(7)
    starts = [python_start(args.python) for _ in range(30)]
    results: dict[str, Any] = {
        "python_start": Latency.of([wall for wall, _ in starts]).as_dict(),
        "python_start_cpu": Latency.of([cpu for _, cpu in starts]).as_dict(),
        "load_before": os.getloadavg(),
    }
    with uvicorn_server() as (base, server_pid), tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "app"
        root.mkdir()
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "remote", "add", "origin", REMOTE], check=True)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "REASONINGBANK_URL": base,
            "REASONINGBANK_TOKEN": raw_token,
            "REASONINGBANK_STATE_DIR": str(Path(tmp) / "state"),
        }
        for kind in ("pre_tool_use", "post_tool_use_failure", "post_tool_use"):
            events = events_of(kind, args.calls + 5, args.per_session, root, rng)
            for event in events[:5]:
                hook_run({**event, "session_id": f"warm-{uuid.uuid4()}"}, env, args.python)
            times, cpus, tokens = [], [], []
            server_before = server_cpu_seconds(server_pid)
            for event in events[5:]:
                ms, cpu, stdout, stderr = hook_run(event, env, args.python)
                if stderr:
                    raise SystemExit(f"{kind} failed: {stderr}")
                times.append(ms)
                cpus.append(cpu)
                tokens.append(injected_tokens(stdout))
            server_ms = (server_cpu_seconds(server_pid) - server_before) * 1000
            results[kind] = Latency.of(times).as_dict()
            results[f"{kind}_cpu"] = Latency.of(cpus).as_dict()
            # per hook run; PostToolUse of a passing command sends nothing, so its figure is the idle server's
            results[f"{kind}_server_cpu_ms"] = round(server_ms / len(times), 2)
            results[f"{kind}_load"] = os.getloadavg()
            results[f"{kind}_tokens"] = {
                "mean": round(statistics.mean(tokens), 1),
                "max": max(tokens),
                "events_with_nothing": sum(1 for t in tokens if t == 0),
                "events": len(tokens),
            }
    for name in ("python_start", "pre_tool_use", "post_tool_use_failure", "post_tool_use"):
        lat, cpu = results[name], results[f"{name}_cpu"]
        server = results.get(f"{name}_server_cpu_ms")
        print(
            f"{name:22} p50 {lat['p50']:7.1f} ms   p90 {lat['p90']:7.1f} ms   p99 {lat['p99']:7.1f} ms   (n={lat['n']})"
            f"   cpu p50 {cpu['p50']:6.1f} ms p90 {cpu['p90']:6.1f}"
            + (
                f"   server cpu {server:6.1f} ms/run   load {results[f'{name}_load'][0]:.1f}"
                if server is not None
                else ""
            )
        )
    print(f"load average before the runs: {results['load_before']}")
    for name in ("pre_tool_use", "post_tool_use_failure"):
        print(f"{name} tokens: {results[f'{name}_tokens']}")
    write_json(
        RESULTS / f"hooks-code-{args.size}.json",
        {"machine": machine_info(), "python": args.python, "dataset": dataset, "anchors": anchors, "results": results},
    )


if __name__ == "__main__":
    main()
