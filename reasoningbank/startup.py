"""What is left to do before the service can start (``manage.py prepare_service``, which ``scripts/run.sh``
runs): reads only, so a restart with nothing to do costs milliseconds here (docs/operations.md#what-happens-at-start).
"""

from __future__ import annotations

import os
from pathlib import Path


def migrations_unapplied() -> list[str]:
    """``app.migration`` names the database has not applied yet, in the order ``migrate`` would apply them
    (the same loader and plan ``migrate`` uses)."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, backwards in plan if not backwards]


def static_files_stale() -> list[str]:
    """Static files (as ``collectstatic`` finds them, the first finder winning) whose copy in
    ``STATIC_ROOT`` is missing or older than the source: what ``collectstatic`` would copy."""
    from django.apps import apps
    from django.contrib.staticfiles.finders import get_finders
    from django.contrib.staticfiles.storage import staticfiles_storage

    ignore = apps.get_app_config("staticfiles").ignore_patterns  # type: ignore[attr-defined]
    seen: set[str] = set()
    stale: list[str] = []
    for finder in get_finders():
        for path, storage in finder.list(ignore):
            prefix = getattr(storage, "prefix", None)
            prefixed = os.path.join(prefix, path) if prefix else path
            if prefixed in seen:
                continue
            seen.add(prefixed)
            target = Path(staticfiles_storage.path(prefixed))
            try:
                if target.stat().st_mtime >= Path(storage.path(path)).stat().st_mtime:
                    continue
            except OSError:
                pass  # no copy yet
            stale.append(prefixed)
    return stale


def process_age_seconds() -> float | None:
    """How long ago this process started (Linux's /proc; None elsewhere): its Python and Django set-up,
    when asked at the start of a command."""
    try:
        since_boot = float(Path("/proc/uptime").read_text().split()[0])
        stat = Path("/proc/self/stat").read_text()
        started_ticks = int(stat[stat.rfind(")") + 2 :].split()[19])
        return max(0.0, since_boot - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None
