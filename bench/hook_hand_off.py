"""The capture hook's hand-off (docs/claude-code.md#capture-hand-off): how long the Claude Code plugin's
capture hook takes at SessionEnd — a ``python3`` process given the event on stdin, its output read until
its pipes close, as Claude Code runs it — when the service answers at once, and when it does not answer
at all; and how long the detached sender then takes to deliver.

Claude Code cancels a SessionEnd hook after 1.5 s (``CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS``); before
the hand-off the hook posted the transcript itself and a long one on a busy service did not make it.

A loopback stand-in for the service (no Django, no database): ``--calls`` captures of a session file of
each ``--transcript-mb`` size (Claude Code's line format, bench/hooks.py's ``transcript_write``), a new
session each. Measured:

- ``answering``: the hook's wall time with a service that answers 200 at once, and the delay from the
  hook's start to the submission's arrival at the service (the sender's start and its POST);
- ``hanging``: the hook's wall time with a service that takes every request and answers none; then the
  service answers, and the time the one sender takes to deliver every queued submission is measured.

    .venv/bin/python bench/hook_hand_off.py --calls 30 --transcript-mb 0.5 2.5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._corpus import search_queries
from bench.common import Latency, machine_info, write_json
from bench.hooks import HOOK, transcript_write

RESULTS = Path(__file__).resolve().parent / "results"
WAIT = 120.0  # seconds to wait for deliveries before the bench gives up


class Service:
    """Takes POSTs, notes when each arrived; answers 200 at once, or only once ``gate`` opens."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.arrived: dict[str, float] = {}
        self.answered = 0
        self.lock = threading.Lock()

    def wait_answered(self, count: int) -> None:
        deadline = time.monotonic() + WAIT
        while self.answered < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"only {self.answered} of {count} submissions delivered in {WAIT:g} s")
            time.sleep(0.01)


@contextmanager
def service_running() -> Iterator[tuple[Service, str]]:
    service = Service()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with service.lock:
                service.arrived.setdefault(str(body.get("session_id")), time.perf_counter())
            service.gate.wait(WAIT)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
            with service.lock:
                service.answered += 1

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield service, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        service.gate.set()
        server.shutdown()
        server.server_close()


def capture(python: str, transcript: Path, session: str, env: dict[str, str]) -> tuple[float, float]:
    """The hook's wall time in ms, and when it started (perf_counter)."""
    event = {
        "session_id": session,
        "transcript_path": str(transcript),
        "hook_event_name": "SessionEnd",
        "reason": "exit",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [python, str(HOOK), "capture"],
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    if done.returncode or done.stdout or done.stderr:
        raise SystemExit(f"the hook failed: {done}")
    return (time.perf_counter() - started) * 1000, started


def series(python: str, megabytes: float, calls: int, tmp: Path) -> dict[str, Any]:
    transcript = tmp / f"session-{megabytes}.jsonl"
    transcript_write(transcript, megabytes, search_queries(50, seed=11))
    out: dict[str, Any] = {"transcript_bytes": transcript.stat().st_size}
    for mode in ("answering", "hanging"):
        with service_running() as (service, url):
            state = tmp / f"state-{megabytes}-{mode}"
            env = {
                "PATH": os.environ.get("PATH", ""),
                "REASONINGBANK_URL": url,
                "REASONINGBANK_TOKEN": "rb_bench",
                "REASONINGBANK_STATE_DIR": str(state),
            }
            if mode == "hanging":
                service.gate.clear()
            times, delays = [], []
            for n in range(calls + 3):
                session = f"{mode}-{n}"
                ms, started = capture(python, transcript, session, env)
                if mode == "answering":
                    service.wait_answered(n + 1)  # one at a time: the delay is the sender's own
                    if n >= 3:
                        delays.append((service.arrived[session] - started) * 1000)
                if n >= 3:  # three warm-up runs
                    times.append(ms)
            out[mode] = Latency.of(times).as_dict()
            if mode == "answering":
                out["delivered_after"] = Latency.of(delays).as_dict()
            else:
                released = time.perf_counter()
                service.gate.set()
                service.wait_answered(calls + 3)
                out["drain_ms"] = round((time.perf_counter() - released) * 1000, 1)
                out["drained"] = calls + 3
    return out


def python3() -> str:
    """The interpreter ``python3`` runs, as the hook files run it; asked for its own path, so that a version
    manager's shim in front of it (pyenv's is a shell script) is not measured with it."""
    found = shutil.which("python3")
    if not found:
        return sys.executable
    asked = subprocess.run([found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
    return asked.stdout.strip() or found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--transcript-mb", type=float, nargs="+", default=[0.5, 2.5])
    parser.add_argument("--python", default=python3(), help="the interpreter (default: what python3 runs)")
    args = parser.parse_args()
    starts = []
    for _ in range(20):
        started = time.perf_counter()
        subprocess.run([args.python, "-c", "pass"], check=True)
        starts.append((time.perf_counter() - started) * 1000)
    results: dict[str, Any] = {"python": args.python, "python_start": Latency.of(starts).as_dict()}
    with tempfile.TemporaryDirectory() as tmp:
        for megabytes in args.transcript_mb:
            results[f"{megabytes:g} MB"] = series(args.python, megabytes, args.calls, Path(tmp))
    print(f"{args.python} -c pass  p50 {results['python_start']['p50']:7.1f} ms")
    for name, figures in results.items():
        if not name.endswith(" MB"):
            continue
        for mode in ("answering", "hanging"):
            lat = figures[mode]
            print(f"{name:7} {mode:9} hook p50 {lat['p50']:7.1f}  p90 {lat['p90']:7.1f}  max {lat['max']:7.1f} ms")
        delay = figures["delivered_after"]
        print(f"{name:7} delivered {delay['p50']:.0f} ms (p50) after the hook started", end="; ")
        print(f"{figures['drained']} queued submissions drained in {figures['drain_ms']:.0f} ms")
    write_json(RESULTS / "hook-hand-off.json", {"machine": machine_info(), "results": results})


if __name__ == "__main__":
    main()
