"""How long ``scripts/run.sh`` takes to serve, as a new user meets it: a fresh ``git clone`` (no .venv,
no .data) with empty pip / uv caches, to the first 200 from ``/readyz``; then Ctrl-C and a restart on
the same data; then (``--warm``) a second fresh clone whose install finds the caches the first one
filled. Every ``==>`` line run.sh prints is a phase: the table gives when it began and how long it
lasted (until the next one, or until ready), so the figures say where the time goes.

    .venv/bin/python bench/startup.py                        # this repository's HEAD, cold + restart
    .venv/bin/python bench/startup.py --warm                 # + a second clone with warm caches
    .venv/bin/python bench/startup.py --source /work/main    # another clone's HEAD (a before/after)
    .venv/bin/python bench/startup.py --restarts 3 --show-log

Stdlib only, so it measures any revision (even one whose .venv cannot be built). Everything it
creates lives in a temporary directory that is removed at the end (``--keep`` keeps it). The machine
is shared: the script prints the load average before and after, to quote with the figures
(bench/README.md#startuppy-first-start-and-restart).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS_DIR, free_port, log, machine_info, write_json

REPO = Path(__file__).resolve().parent.parent
# this shell's environment goes to run.sh (a proxy's or a company's certificates for the install, say),
# less what would change what is measured: the product's own settings, a test run's, the caches
_LEFT_OUT = (
    "RB_",
    "DJANGO_",
    "PYTEST",
    "DATABASE_URL",
    "HOST",
    "PORT",
    "SITE_URL",
    "DEBUG",
    "EMBEDDER",
    "LLM_",
    "PIP_CACHE_DIR",
    "UV_CACHE_DIR",
    "VIRTUAL_ENV",
)


@dataclass
class Start:
    """One run of run.sh until /readyz answered 200."""

    label: str
    lines: list[tuple[float, str]] = field(default_factory=list)  # (seconds since the start, line)
    ready_at: float | None = None  # the first 200 from /readyz
    said_ready_at: float | None = None  # the line that says it is ready (with its URL)
    exit_code: int | None = None
    stop_seconds: float | None = None
    left_running: list[str] = field(default_factory=list)  # what a failed stop left behind (killed)
    # CPU seconds of run.sh and everything it started, start to stop (not the PostgreSQL server: a daemon
    # of its own): the figure a busy machine disturbs least
    cpu_seconds: float | None = None

    def phases(self) -> list[tuple[str, float, float]]:
        """(``==>`` line, began at, lasted) for each phase, the last one ending when ready."""
        marks = [(at, text[4:]) for at, text in self.lines if text.startswith("==> ")]
        end = self.ready_at if self.ready_at is not None else (self.lines[-1][0] if self.lines else 0.0)
        out = []
        for index, (at, text) in enumerate(marks):
            until = marks[index + 1][0] if index + 1 < len(marks) else end
            if at <= end:
                out.append((text, at, max(0.0, min(until, end) - at)))
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "ready_seconds": self.ready_at,
            "said_ready_seconds": self.said_ready_at,
            "stop_seconds": self.stop_seconds,
            "exit_code": self.exit_code,
            "left_running": self.left_running,
            "cpu_seconds": self.cpu_seconds,
            "phases": [{"phase": p, "at": round(a, 2), "seconds": round(s, 2)} for p, a, s in self.phases()],
        }


def load_average() -> str:
    with contextlib.suppress(OSError):
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return "?"


def readyz_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (OSError, ValueError):
        return None


def run_until_ready(clone: Path, env: dict[str, str], url: str, label: str, timeout: float, show: bool) -> Start:
    """Start run.sh in ``clone``, time its lines and the first 200 from /readyz, then Ctrl-C it."""
    start = Start(label)
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    proc = subprocess.Popen(
        ["scripts/run.sh"],
        cwd=clone,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: Ctrl-C below reaches all of it, as in a terminal
        # a shell that starts this script in the background hands it SIGINT ignored, and bash cannot trap
        # a signal ignored at its start: run.sh would not hear the Ctrl-C below
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            at = time.monotonic() - began
            text = raw.decode(errors="replace").rstrip()
            start.lines.append((at, text))
            if start.said_ready_at is None and " ready at " in text:
                start.said_ready_at = at
            if show:
                log(f"  [{at:7.1f}s] {text}")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        while time.monotonic() - began < timeout and proc.poll() is None:
            if readyz_status(url) == 200:
                start.ready_at = time.monotonic() - began
                break
            time.sleep(0.2)
        # the "ready" line comes from run.sh's own poll: give it a moment to be printed
        settle = time.monotonic() + 5
        while start.ready_at is not None and start.said_ready_at is None and time.monotonic() < settle:
            time.sleep(0.1)
    finally:
        stopping = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            start.exit_code = proc.wait(60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            start.exit_code = proc.wait(10)
        start.stop_seconds = time.monotonic() - stopping
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        start.cpu_seconds = round(
            cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime, 1
        )
        reader.join(5)
        start.left_running = leftovers_kill(clone)
    return start


def leftovers_kill(clone: Path) -> list[str]:
    """Processes still running from ``clone`` after run.sh exited (a failed stop): killed, so the
    next round measures its own start and not the last one's server; returned to be reported."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            cwd = os.readlink(f"/proc/{entry}/cwd")
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if cwd == str(clone) or cwd.startswith(f"{clone}/") or str(clone) in cmdline:
                found.append(f"{entry} {cmdline[:100]}")
                os.kill(int(entry), signal.SIGKILL)
    return found


def report(start: Start) -> None:
    log(f"\n{start.label}")
    for phase, at, seconds in start.phases():
        log(f"  {at:7.1f}s  {seconds:6.1f}s  {phase}")
    ready = f"{start.ready_at:.1f}s" if start.ready_at is not None else "NOT READY"
    said = f"{start.said_ready_at:.1f}s" if start.said_ready_at is not None else "never"
    log(
        f"  total to /readyz 200: {ready}   ('ready at' line: {said})   stop after Ctrl-C: {start.stop_seconds:.1f}s"
        f"   CPU start to stop: {start.cpu_seconds}s"
    )
    if start.left_running:
        log(f"  LEFT RUNNING after the stop (killed): {'; '.join(start.left_running)}")


def clone_fresh(source: Path, target: Path, rev: str | None) -> float:
    began = time.monotonic()
    subprocess.run(["git", "clone", "--quiet", str(source), str(target)], check=True)
    if rev:
        subprocess.run(["git", "-C", str(target), "checkout", "--quiet", rev], check=True)
    return time.monotonic() - began


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", type=Path, default=REPO, help="the repository to clone (default: this one)")
    parser.add_argument("--rev", help="a commit or branch of --source to check out (default: its HEAD)")
    parser.add_argument("--restarts", type=int, default=1, help="restarts on the same data after the first start")
    parser.add_argument("--warm", action="store_true", help="then a second fresh clone with the caches now filled")
    parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for each start")
    parser.add_argument("--workdir", type=Path, help="where to clone (default: a new temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the clones and caches")
    parser.add_argument("--show-log", action="store_true", help="print run.sh's lines as they come")
    args = parser.parse_args()

    work = args.workdir or Path(tempfile.mkdtemp(prefix="rb-startup-"))
    work.mkdir(parents=True, exist_ok=True)
    caches = {"PIP_CACHE_DIR": work / "pip-cache", "UV_CACHE_DIR": work / "uv-cache"}
    for path in caches.values():
        shutil.rmtree(path, ignore_errors=True)  # cold: a new user has none
        path.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {name: value for name, value in os.environ.items() if not name.startswith(_LEFT_OUT)}
    env.update({name: str(path) for name, path in caches.items()}, HOST="127.0.0.1", PORT=str(port))

    info = machine_info()
    load_before = load_average()
    log(f"{info.get('cpu')} ×{info.get('nproc')}, {info.get('ram_gib')} GiB; load average {load_before}")
    starts: list[Start] = []
    clones: list[float] = []
    try:
        rounds = [("first start, fresh clone, cold caches", True)]
        rounds += [(f"restart #{n + 1} on the same data", False) for n in range(args.restarts)]
        if args.warm:
            rounds.append(("first start, fresh clone, warm caches", True))
        clone = work / "clone"
        for label, fresh in rounds:
            if fresh:
                shutil.rmtree(clone, ignore_errors=True)
                clones.append(clone_fresh(args.source, clone, args.rev))
                log(f"\ncloned {args.source} into {clone} in {clones[-1]:.1f}s")
            log(f"{label}: starting run.sh on {url} (load average {load_average()})")
            start = run_until_ready(clone, env, url, label, args.timeout, args.show_log)
            starts.append(start)
            report(start)
            if start.ready_at is None or start.left_running:
                log("\n".join(text for _, text in start.lines[-40:]))
                break
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    load_after = load_average()
    log(f"\nload average {load_before} before, {load_after} after")
    result = {
        "machine": info,
        "source": str(args.source),
        "rev": args.rev,
        "load_before": load_before,
        "load_after": load_after,
        "clone_seconds": clones,
        "starts": [s.as_dict() for s in starts],
    }
    out = RESULTS_DIR / f"startup-{time.strftime('%Y%m%d-%H%M%S')}.json"
    write_json(out, result)
    log(f"results: {out}")
    return 0 if starts and all(s.ready_at is not None for s in starts) else 1


if __name__ == "__main__":
    sys.exit(main())
