"""Shared helpers for the benchmark scripts in bench/: environment, Django set-up, a real uvicorn
server on a free loopback port, latency statistics and a description of the machine.

Benchmarks run against a dedicated embedded PostgreSQL (``RB_DATA_DIR=<repo>/.data/bench``,
git-ignored) so they never touch development or test data. ``configure_environment()`` must run
before anything imports Django settings.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH_DATA_DIR = REPO / ".data" / "bench"
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def log(message: str = "") -> None:
    """A progress or report line, flushed at once (the scripts run for minutes, often piped)."""
    print(message, flush=True)


def configure_environment() -> dict[str, str]:
    """Defaults for a benchmark process (kept when already set); returns what was chosen."""
    os.environ.setdefault("RB_DATA_DIR", str(BENCH_DATA_DIR))
    # measured as deployed: DEBUG off (Django's debug cursor formats and keeps every statement)
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reasoningbank.settings")
    os.environ.setdefault("LOG_LEVEL", "warning")
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    chosen = {name: os.environ[name] for name in ("RB_DATA_DIR", "DEBUG", "DJANGO_SETTINGS_MODULE")}
    return {**chosen, "EMBEDDER": os.environ.get("EMBEDDER", "(the product's default)")}


def django_setup(*, migrate: bool = True) -> None:
    configure_environment()
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", "--noinput", verbosity=0)


# --- statistics ------------------------------------------------------------------------------------


@dataclass
class Latency:
    """Latency figures in milliseconds for one measured series."""

    n: int
    mean: float
    p50: float
    p90: float
    p99: float
    min: float
    max: float

    @classmethod
    def of(cls, samples_ms: Sequence[float]) -> Latency:
        import numpy as np

        a = np.asarray(samples_ms, dtype=float)
        if a.size == 0:
            return cls(0, *([float("nan")] * 6))
        p50, p90, p99 = np.percentile(a, [50, 90, 99])
        return cls(int(a.size), float(a.mean()), float(p50), float(p90), float(p99), float(a.min()), float(a.max()))

    def as_dict(self) -> dict[str, float]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}


# --- a real server ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def uvicorn_server(
    app: str = "reasoningbank.asgi:application", *, workers: int = 1, startup_timeout: float = 180.0
) -> Iterator[tuple[str, int]]:
    """Start ``uvicorn app`` on 127.0.0.1 with a free port (same environment as this process) and
    yield (base URL, pid) once ``/healthz`` answers; stop it (by its own pid) afterwards."""
    import httpx2

    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        app,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--no-access-log",
        "--log-level",
        "warning",
    ]
    log_path = RESULTS_DIR / f"uvicorn-{port}.log"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    log = log_path.open("wb")
    proc = subprocess.Popen(cmd, cwd=REPO, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"uvicorn exited with {proc.returncode}; see {log_path}")
            try:
                if httpx2.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not become healthy in {startup_timeout}s; see {log_path}")
            time.sleep(0.2)
        yield base, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()
        if log_path.stat().st_size == 0:
            log_path.unlink()


# --- CPU accounting (robust against other load on the machine) -----------------------------------------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_stat(pid: int) -> tuple[int, float, float]:
    """(ppid, own CPU seconds, reaped children's CPU seconds) of a process, from /proc."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()  # after "pid (comm) "
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return ppid, (utime + stime) / _TICK, (cutime + cstime) / _TICK


def process_tree_cpu(root: int) -> float:
    """CPU seconds used so far by ``root``, its live descendants and every child it has reaped."""
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[float, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid, own, reaped = _proc_stat(int(entry.name))
            children.setdefault(ppid, []).append(int(entry.name))
            stats[int(entry.name)] = (own, reaped)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        own, reaped = stats.get(pid, (0.0, 0.0))
        total += own + reaped
        todo.extend(children.get(pid, []))
    return total


def postmaster_pid() -> int | None:
    """The embedded PostgreSQL server of RB_DATA_DIR (None with DATABASE_URL or when unknown)."""
    if os.environ.get("DATABASE_URL"):
        return None
    path = Path(os.environ.get("RB_DATA_DIR", str(BENCH_DATA_DIR))) / "pg" / "postmaster.pid"
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class CpuMeter:
    """CPU seconds of this process, an optional server process tree and the PostgreSQL server,
    between ``start()`` and ``stop()``; ``per_op_ms(n)`` divides by ``n`` operations."""

    def __init__(self, server_pid: int | None = None) -> None:
        self.server_pid = server_pid
        self.pg_pid = postmaster_pid()
        self.used: dict[str, float] = {}

    def _snapshot(self) -> dict[str, float]:
        t = os.times()
        snap = {"client": t.user + t.system}
        if self.server_pid:
            snap["server"] = process_tree_cpu(self.server_pid)
        if self.pg_pid:
            snap["postgres"] = process_tree_cpu(self.pg_pid)
        return snap

    def start(self) -> CpuMeter:
        self._start = self._snapshot()
        return self

    def stop(self) -> CpuMeter:
        end = self._snapshot()
        self.used = {k: end[k] - self._start[k] for k in end}
        return self

    def per_op_ms(self, n: int) -> dict[str, float]:
        out = {k: round(v * 1000 / max(n, 1), 2) for k, v in self.used.items()}
        out["total"] = round(sum(self.used.values()) * 1000 / max(n, 1), 2)
        return out


# --- the machine -----------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["ram_gib"] = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    return info


def revision() -> str | None:
    """The checked-out commit, read from .git (no git command), for the results file."""
    try:
        head = (REPO / ".git" / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        path = REPO / ".git" / ref
        if path.exists():
            return path.read_text().strip()
        for line in (REPO / ".git" / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        pass
    return None


def postgres_info() -> dict[str, Any]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        version = cursor.fetchone()[0]
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        settings_ = {}
        for name in (
            "shared_buffers",
            "work_mem",
            "effective_cache_size",
            "max_parallel_workers_per_gather",
            "synchronous_commit",
            "fsync",
            "random_page_cost",
        ):
            cursor.execute(f"SHOW {name}")
            settings_[name] = cursor.fetchone()[0]
    return {"version": version.split(" on ")[0], "pgvector": row[0] if row else None, **settings_}


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")
