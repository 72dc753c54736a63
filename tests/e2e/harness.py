"""The product as a user runs it: ``scripts/run.sh`` in its own process group on a fresh data
directory (its LLM: the loopback stub of ``llm_stub.py``), ``manage.py`` in a second process ("another
shell"), the official MCP SDK client over real HTTP, and process bookkeeping that proves a stop
leaves nothing behind.

Nothing here imports Django or the product's models: the suite sees the product only from outside
(HTTP, MCP, the command line, and SQL on the embedded server for the worker's records and its schedule).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "artifacts" / "e2e"
PYTHON = REPO / ".venv" / "bin" / "python"

# What a user's shell carries into run.sh; every product setting is left out on purpose (DEBUG,
# SECRET_KEY, DATABASE_URL, ...), as are pytest's own (RB_TESTING, RB_TEST_DB_NAME,
# DJANGO_SETTINGS_MODULE, PYTEST_*): the subprocess must run on the product's defaults.
# OPENBLAS_CORETYPE and GLIBC_TUNABLES too: they try another CPU's rounding on this one, the service and
# its PostgreSQL included (docs/contributing.md#portable-tests)
_PASSED_THROUGH = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "SHELL",
    "XDG_RUNTIME_DIR",
    "PYTHON",
    "OPENBLAS_CORETYPE",
    "GLIBC_TUNABLES",
)
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def user_env(**extra: str) -> dict[str, str]:
    env = {name: os.environ[name] for name in _PASSED_THROUGH if name in os.environ}
    env.update(extra)
    return env


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when pytest dies (even by SIGKILL), so a crashed test run
    cannot leave a server behind; run.sh's own trap then stops its children."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    # Ctrl-C as a terminal's job gets it: a shell starts its foreground job with SIGINT at its default and
    # unblocked. A disposition ignored (or a mask blocked) in this pytest process by a library would be
    # inherited, and bash cannot trap a signal ignored on entry: run.sh would never hear the Ctrl-C.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


# --- processes of a data directory -------------------------------------------------------------


@dataclass(frozen=True)
class Proc:
    pid: int
    kind: str  # uvicorn, qcluster, postgres, run.sh, other
    cmdline: str


def describe(procs: list[Proc]) -> str:
    """``postgres ×9 (pids 12, 13, …), qcluster ×4 (…)``: what is left, readable in one line."""
    kinds: dict[str, list[int]] = {}
    for proc in procs:
        kinds.setdefault(proc.kind, []).append(proc.pid)
    return ", ".join(f"{kind} ×{len(pids)} (pids {', '.join(map(str, sorted(pids)))})" for kind, pids in kinds.items())


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _kind(cmdline: str) -> str:
    if "uvicorn" in cmdline:
        return "uvicorn"
    if "qcluster" in cmdline:
        return "qcluster"
    if "run.sh" in cmdline:
        return "run.sh"
    if cmdline.startswith("postgres") or "/bin/postgres" in cmdline:
        return "postgres"
    return "other"


def processes_of(data_dir: Path) -> list[Proc]:
    """Every live process that belongs to ``data_dir``: started with it in its environment (web,
    worker, their children, manage.py) or serving it (the embedded PostgreSQL, its children)."""
    marker_env = f"RB_DATA_DIR={data_dir}".encode()
    marker_arg = str(data_dir).encode()
    postmaster = postmaster_pid(data_dir)
    found: list[Proc] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        raw = _read(f"/proc/{pid}/cmdline")
        if not raw:
            continue  # gone, or a zombie (already dead, only waiting to be reaped)
        stat = _read(f"/proc/{pid}/stat").decode(errors="replace")
        if ") Z " in stat:
            continue
        cmdline = raw.replace(b"\0", b" ").decode(errors="replace").strip()
        ppid = stat.rsplit(")", 1)[-1].split()[1] if ")" in stat else ""
        mine = (
            marker_env in _read(f"/proc/{pid}/environ").split(b"\0")
            or marker_arg in raw
            or (postmaster is not None and (pid == postmaster or ppid == str(postmaster)))
        )
        if mine:
            found.append(Proc(pid, _kind(cmdline), cmdline))
    return found


def pids_connected_to(port: int) -> set[int]:
    """Processes holding an open TCP connection to ``port`` on this machine (the worker process that
    waits on the LLM stub, say): /proc/net/tcp's sockets whose remote port it is, matched to the
    processes whose file descriptors hold them."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in _read(table).decode(errors="replace").splitlines()[1:]:
            fields = line.split()
            # remote address "0100007F:1F90", state 01 = ESTABLISHED
            if len(fields) > 9 and int(fields[2].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                inodes.add(f"socket:[{fields[9]}]")
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{entry}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{entry}/fd/{fd}") in inodes:
                        found.add(int(entry))
                        break
    return found


def postmaster_pid(data_dir: Path) -> int | None:
    lines = _read(str(data_dir / "pg" / "postmaster.pid")).decode(errors="replace").splitlines()
    if not lines or not lines[0].strip().isdigit():
        return None
    pid = int(lines[0])
    return pid if _read(f"/proc/{pid}/cmdline") else None


def pg_conninfo(data_dir: Path) -> dict[str, Any]:
    """psycopg connection arguments for the embedded server (its socket, from postmaster.pid)."""
    lines = _read(str(data_dir / "pg" / "postmaster.pid")).decode().splitlines()
    return {"host": lines[4], "port": int(lines[3]), "user": "postgres", "dbname": "postgres", "connect_timeout": 10}


# --- the service ---------------------------------------------------------------------------------


# django-q2's words for a worker process dying or failing to reach its broker (a pooled connection
# shared across the worker's forks once killed it: docs/decisions.md#django-q2-on-the-orm-broker-not-celery-and-redis)
WORKER_CRASH_SIGNS = ("reincarnated", "Failed to pull task", "Could not save task result", "after sudden death")


class ServiceError(AssertionError):
    pass


@dataclass
class Service:
    """``scripts/run.sh`` on its own data directory and port."""

    data_dir: Path
    llm_base_url: str
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    # settings a test adds for its own start (the supervision tests: run.sh's restart limits)
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "run.log"

    def env(self) -> dict[str, str]:
        """The service's environment: a user's shell plus what docs/configuration.md says to set."""
        return user_env(
            RB_DATA_DIR=str(self.data_dir),
            RB_PG_SHARED_BUFFERS="128MB",  # several of these servers share one small machine
            HOST="127.0.0.1",
            PORT=str(self.port),
            LLM_PROVIDER="openai",
            LLM_BASE_URL=self.llm_base_url,
            LLM_API_KEY="test",
            LLM_TIMEOUT_SECONDS="20",
            LLM_MAX_RETRIES="1",
            # schemathesis' auth checks send hundreds of invalid tokens from 127.0.0.1, which would
            # (rightly) block that address for AUTH_THROTTLE_BLOCK, and with it every later test's
            # agents and most of schemathesis' own run; its altered tokens keep the real token's
            # prefix, whose limit would turn the expected 401s into 429s. The throttle has its own
            # tests (tests/accounts/test_throttling.py); here both limits are out of reach.
            AUTH_THROTTLE_FAILURES="1000000",
            AUTH_THROTTLE_PREFIX_FAILURES="1000000",
            # the loads drive tens of agents through one token as fast as the machine allows, and
            # schemathesis sends hundreds of writes with one token: the write limits
            # (docs/security/memory-poisoning.md#write-limits) would refuse them by design. They have
            # their own tests (tests/accounts/write_limits/); here they are off.
            WRITE_LIMIT_TOKEN_PER_MINUTE="0",
            WRITE_LIMIT_TOKEN_PER_DAY="0",
            WRITE_LIMIT_ORG_PER_MINUTE="0",
            WRITE_LIMIT_ORG_PER_DAY="0",
            **self.extra_env,
        )

    def shell_env(self) -> dict[str, str]:
        """A second shell beside run.sh: the same data directory, nothing else of the service's."""
        return user_env(RB_DATA_DIR=str(self.data_dir), RB_PG_SHARED_BUFFERS="128MB")

    # -- start / stop --

    def start(self, timeout: float = 240, *, wait: bool = True) -> None:
        """run.sh, then (``wait``) until /readyz says it serves. Call it from the main thread: run.sh gets
        SIGTERM when the thread that started it ends (PR_SET_PDEATHSIG follows the thread, not the process)."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== e2e: start #{self.starts} at {time.strftime('%H:%M:%S')} =====\n".encode())
            log.flush()
            # straight into a file, not a pipe: run.sh must be able to print while it stops even
            # when pytest has died (a write to a dead pipe would kill it half-way through its trap)
            self.proc = subprocess.Popen(
                [str(REPO / "scripts" / "run.sh")],
                cwd=REPO,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, like a terminal's foreground job
                preexec_fn=_die_with_parent,
            )
        if wait:
            self.wait_healthy(timeout)

    def wait_healthy(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise ServiceError(
                    f"run.sh exited with {self.proc.returncode} before /readyz answered\n{self.log_tail()}"
                )
            try:
                response = httpx2.get(f"{self.url}/readyz", timeout=5)
                last = f"{response.status_code} {response.text[:300]}"
                # serving: the database answers and is migrated (a 503 for a stale worker or a stalled
                # queue left by an earlier start is the tests' business, not a failed start)
                body = response.json() if response.headers.get("content-type") == "application/json" else {}
                parts = (body.get("database") or {}, body.get("migrations") or {})
                if all(part.get("status") == "ok" for part in parts):
                    return dict(body)
            except httpx2.HTTPError as exc:
                last = repr(exc)
            time.sleep(0.5)
        raise ServiceError(f"/readyz: database not ready within {timeout:.0f}s (last: {last})\n{self.log_tail()}")

    def stop(self, sig: signal.Signals, *, group: bool, timeout: float = 45) -> list[Proc]:
        """Stop as a user does (Ctrl-C reaches the whole foreground group; ``kill`` only run.sh);
        return what is still running of this data directory once things had time to settle."""
        assert self.proc is not None
        if self.proc.poll() is None:
            if group:
                os.killpg(self.proc.pid, sig)
            else:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        deadline = time.monotonic() + 20  # PostgreSQL stops when its last client exits: allow for it
        left = processes_of(self.data_dir)
        while left and time.monotonic() < deadline:
            time.sleep(0.5)
            left = processes_of(self.data_dir)
        return left

    def kill_everything(self) -> None:
        """Teardown, whatever state things are in: the process group, then any straggler."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(10)
        for _ in range(20):
            left = processes_of(self.data_dir)
            if not left:
                return
            for proc in left:
                # the postmaster first, with SIGQUIT (immediate shutdown: it takes its children along)
                sig = signal.SIGQUIT if proc.pid == postmaster_pid(self.data_dir) else signal.SIGKILL
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(proc.pid, sig)
            time.sleep(0.5)

    def running(self) -> list[Proc]:
        return processes_of(self.data_dir)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def worker_crash_lines(self) -> list[str]:
        """The log lines that say the worker lost a process or its broker connection."""
        return [line for line in self.log_text().splitlines() if any(sign in line for sign in WORKER_CRASH_SIGNS)]

    def log_tail(self, lines: int = 80) -> str:
        return "----- run.sh log (tail) -----\n" + "\n".join(self.log_text().splitlines()[-lines:])

    def keep_log(self) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        target = ARTIFACTS / "run.log"
        if self.log_path.exists():
            shutil.copyfile(self.log_path, target)
        return target

    # -- the second shell --

    def manage(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """``.venv/bin/python manage.py ARGS`` in another process, as a user types it."""
        return subprocess.run(
            [str(PYTHON), "manage.py", *args],
            cwd=REPO,
            env=self.shell_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    # -- the embedded database, read from outside --

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(**pg_conninfo(self.data_dir), autocommit=True) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []


def completed_text(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\n--- stdout ---\n{result.stdout[-3000:]}\n--- stderr ---\n{result.stderr[-3000:]}"


TOKEN_RE = re.compile(r"\brb_[A-Za-z0-9_-]{20,}")


def token_from(output: str) -> str:
    """The raw token create_token prints last."""
    tokens = TOKEN_RE.findall(output)
    if not tokens:
        raise AssertionError(f"no rb_ token in the output:\n{output}")
    return tokens[-1]


# --- clients -------------------------------------------------------------------------------------


def screenshot(page: Any, name: str) -> None:
    """Keep what the browser showed under artifacts/e2e/ (kept by CI for a failing run)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def rest(service: Service, token: str) -> httpx2.Client:
    return httpx2.Client(base_url=service.url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


@contextlib.asynccontextmanager
async def mcp_client(service: Service, token: str, mode: str) -> AsyncIterator[Any]:
    """The official SDK client over Streamable HTTP to the live server (as an agent connects)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    try:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(f"{service.url}/mcp", http_client=http), mode=mode) as client:
                yield client
    except BaseExceptionGroup as group:
        # the SDK's task groups wrap a failed assertion in the test body in layers of groups
        leaves = _leaves(group)
        if len(leaves) == 1:
            raise _explained(leaves[0]) from None
        raise
    except MCPError as exc:
        raise _explained(exc) from None


def _explained(exc: BaseException) -> BaseException:
    """An MCPError's str() is only "Server returned an error response": add its code and data."""
    if isinstance(exc, MCPError):
        return AssertionError(f"MCP error {exc.code}: {exc.message} {exc.data!r}")
    return exc


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


async def call(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """A tool call that must succeed; its structured result."""
    result = await client.call_tool(tool, args)
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise AssertionError(f"{tool}({args}) failed: {text}")
    return dict(result.structured_content or {})


def unique(prefix: str = "E2E") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"
