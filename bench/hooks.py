"""The Claude Code plugin's hooks (docs/claude-code.md): p50 / p99 of each hook as Claude Code runs it —
a Python process given the event on stdin, calling a real uvicorn server — against a bank of N
memories, and the tokens the prompt hook injects per prompt over realistic sessions.

Uses ``bench/search.py``'s dataset (org ``bench``, N memories; load it first with ``bench/search.py
--sizes N --load-only``) and a token restricted to project ``web-app``. Measured, each ``--calls``
times after 5 warm-up calls:

- ``session-start``: ``POST /api/v1/memories/context`` with the session's id (a new session each call);
- ``prompt``: ``POST /api/v1/memories/search`` for the prompt with ``inject`` and ``exclude_seen``, the plugin's
  defaults (3 memories, 600 tokens, similarity ≥ 0.35), in sessions of ``--prompts`` prompts each;
  the tokens injected per prompt (four characters a token, the block as Claude Code receives it);
- ``capture``: a Stop (``partial``) with a session file of ``--transcript-mb`` MB (the hook queues its
  first prompt and the tail that fits in 500 KB and returns; the detached sender it starts posts it,
  and the service converts and scrubs it: bench/hook_hand_off.py measures that hand-off alone).

The process start of Python itself is measured too (``python -c pass``): it is part of what a hook
costs, and no hook can go below it.

    .venv/bin/python bench/hooks.py --size 100000 --calls 100 --python /usr/bin/python3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._corpus import search_queries
from bench.common import Latency, django_setup, machine_info, uvicorn_server, write_json
from bench.hooks_code import hook_run, python_start, server_cpu_seconds

REPO = Path(__file__).resolve().parent.parent
HOOK = REPO / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py"
RESULTS = Path(__file__).resolve().parent / "results"


def injected_tokens(stdout: str) -> int:
    if not stdout:
        return 0
    return math.ceil(len(json.loads(stdout)["hookSpecificOutput"]["additionalContext"]) / 4)


def transcript_write(path: Path, megabytes: float, prompts: list[str]) -> None:
    """A Claude Code session file of about ``megabytes`` MB: turns of a prompt, a Bash call with a long
    output and the assistant's answer, in Claude Code's line format."""
    size, turn = 0, 0
    with path.open("w") as file:
        while size < megabytes * 1_000_000:
            tool_id = f"toolu_{turn:05d}"
            lines = [
                {
                    "type": "user",
                    "isSidechain": False,
                    "uuid": str(uuid.uuid4()),
                    "sessionId": "bench",
                    "message": {"role": "user", "content": prompts[turn % len(prompts)]},
                },
                {
                    "type": "assistant",
                    "isSidechain": False,
                    "uuid": str(uuid.uuid4()),
                    "sessionId": "bench",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Running the tests first."},
                            {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": "pytest -q"}},
                        ],
                    },
                },
                {
                    "type": "user",
                    "isSidechain": False,
                    "uuid": str(uuid.uuid4()),
                    "sessionId": "bench",
                    "message": {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": tool_id,
                                "content": "." * 6000 + "\n40 passed in 3.1s",
                            }
                        ],
                    },
                    "toolUseResult": {"stdout": "." * 6000 + "\n40 passed in 3.1s", "stderr": ""},
                },
                {
                    "type": "assistant",
                    "isSidechain": False,
                    "uuid": str(uuid.uuid4()),
                    "sessionId": "bench",
                    "message": {"role": "assistant", "content": [{"type": "text", "text": "All green; done."}]},
                },
            ]
            for line in lines:
                text = json.dumps(line) + "\n"
                file.write(text)
                size += len(text)
            turn += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="the bench/search.py dataset size to use")
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--prompts", type=int, default=20, help="prompts per simulated session")
    parser.add_argument("--transcript-mb", type=float, default=4.0)
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the interpreter that runs the hooks (default: this one; a user's python3 has no editable install)",
    )
    args = parser.parse_args()
    os.environ.setdefault("RB_DATA_DIR", str(REPO / ".data" / "bench"))
    # captures wait for an LLM (none is configured): what is measured is the hand-in, not distillation
    os.environ.setdefault("LLM_PROVIDER", "none")
    django_setup(migrate=True)

    from bench._dataset import dataset_ensure
    from bench.search import bench_token

    dataset = dataset_ensure(args.size, reset=False, log=print)
    _, raw_token = bench_token(dataset.pop("orgs"))
    prompts = search_queries(args.calls + 5, seed=11)
    starts = [python_start(args.python) for _ in range(20)]
    results: dict[str, Any] = {
        "python_start": Latency.of([wall for wall, _ in starts]).as_dict(),
        "python_start_cpu": Latency.of([cpu for _, cpu in starts]).as_dict(),
    }
    with uvicorn_server() as (base, server_pid), tempfile.TemporaryDirectory() as tmp:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "REASONINGBANK_URL": base,
            "REASONINGBANK_TOKEN": raw_token,
            "REASONINGBANK_STATE_DIR": str(Path(tmp) / "state"),  # the captures' queue: not the user's own
            "REASONINGBANK_SEND_SECONDS": "60",  # a sender left when the server stops gives up soon after
        }

        def series(action: str, events: list[dict[str, Any]]) -> tuple[list[float], list[str]]:
            """Each event's hook run: wall times, and beside them in ``results`` the hook's own CPU and the
            server's (uvicorn and PostgreSQL) per run: comparable across the machine's load."""
            for event in events[:5]:
                hook_run(event, env, args.python, action)
            times, cpus, outputs = [], [], []
            server_before = server_cpu_seconds(server_pid)
            for event in events[5:]:
                ms, cpu, stdout, stderr = hook_run(event, env, args.python, action)
                if stderr:
                    raise SystemExit(f"{action} failed: {stderr}")
                times.append(ms)
                cpus.append(cpu)
                outputs.append(stdout)
            name = action.replace("-", "_")
            results[f"{name}_cpu"] = Latency.of(cpus).as_dict()
            results[f"{name}_server_cpu_ms"] = round(
                (server_cpu_seconds(server_pid) - server_before) * 1000 / len(times), 2
            )
            return times, outputs

        starts = [
            {"session_id": f"bench-{uuid.uuid4()}", "hook_event_name": "SessionStart", "source": "startup"}
            for _ in range(args.calls + 5)
        ]
        times, outputs = series("session-start", starts)
        results["session_start"] = Latency.of(times).as_dict()
        results["session_start_tokens_mean"] = statistics.mean(injected_tokens(o) for o in outputs)

        # realistic sessions: consecutive prompts of one session, so exclude_seen takes effect
        events, session = [], ""
        for n, prompt in enumerate(prompts):
            if n % args.prompts == 0:
                session = f"bench-{uuid.uuid4()}"
            events.append({"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": prompt})
        times, outputs = series("prompt", events)
        tokens = [injected_tokens(o) for o in outputs]
        results["prompt"] = Latency.of(times).as_dict()
        results["prompt_tokens"] = {
            "mean": round(statistics.mean(tokens), 1),
            "p50": statistics.median(tokens),
            "max": max(tokens),
            "prompts_with_nothing": sum(1 for t in tokens if t == 0),
            "prompts": len(tokens),
        }

        transcript = Path(tmp) / "session.jsonl"
        transcript_write(transcript, args.transcript_mb, prompts)
        captures = [
            {"session_id": f"bench-{uuid.uuid4()}", "transcript_path": str(transcript), "hook_event_name": "Stop"}
            for _ in range(min(args.calls, 50) + 5)
        ]
        times, _ = series("capture", captures)
        results["capture"] = Latency.of(times).as_dict()
        results["transcript_bytes"] = transcript.stat().st_size
    for name in ("python_start", "session_start", "prompt", "capture"):
        lat, cpu, server = results[name], results[f"{name}_cpu"], results.get(f"{name}_server_cpu_ms")
        line = f"{name:14} p50 {lat['p50']:7.1f} ms   p99 {lat['p99']:7.1f} ms   cpu p50 {cpu['p50']:6.1f} ms"
        print(line + (f"   server cpu {server:6.1f} ms/run" if server is not None else "") + f"   (n={lat['n']})")
    print(f"prompt tokens: {results['prompt_tokens']}")
    write_json(RESULTS / f"hooks-{args.size}.json", {"machine": machine_info(), "dataset": dataset, "results": results})


if __name__ == "__main__":
    main()
