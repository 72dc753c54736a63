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
    return anchors_ensure(orgs)


def hook_run(event: dict[str, Any], env: dict[str, str]) -> tuple[float, str, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(HOOK), "tool"],
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return (time.perf_counter() - started) * 1000, done.stdout, done.stderr


def injected_tokens(stdout: str) -> int:
    return math.ceil(len(json.loads(stdout)["hookSpecificOutput"]["additionalContext"]) / 4) if stdout else 0


def python_start() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return (time.perf_counter() - started) * 1000


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
    _, raw_token = bench_token(orgs)
    rng = random.Random(7)
    results: dict[str, Any] = {"python_start": Latency.of([python_start() for _ in range(30)]).as_dict()}
    with uvicorn_server() as (base, _pid), tempfile.TemporaryDirectory() as tmp:
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
                hook_run({**event, "session_id": f"warm-{uuid.uuid4()}"}, env)
            times, tokens = [], []
            for event in events[5:]:
                ms, stdout, stderr = hook_run(event, env)
                if stderr:
                    raise SystemExit(f"{kind} failed: {stderr}")
                times.append(ms)
                tokens.append(injected_tokens(stdout))
            results[kind] = Latency.of(times).as_dict()
            results[f"{kind}_tokens"] = {
                "mean": round(statistics.mean(tokens), 1),
                "max": max(tokens),
                "events_with_nothing": sum(1 for t in tokens if t == 0),
                "events": len(tokens),
            }
    for name in ("python_start", "pre_tool_use", "post_tool_use_failure", "post_tool_use"):
        lat = results[name]
        print(
            f"{name:22} p50 {lat['p50']:7.1f} ms   p90 {lat['p90']:7.1f} ms   p99 {lat['p99']:7.1f} ms   (n={lat['n']})"
        )
    for name in ("pre_tool_use", "post_tool_use_failure"):
        print(f"{name} tokens: {results[f'{name}_tokens']}")
    write_json(
        RESULTS / f"hooks-code-{args.size}.json",
        {"machine": machine_info(), "dataset": dataset, "anchors": anchors, "results": results},
    )


if __name__ == "__main__":
    main()
