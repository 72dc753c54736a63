"""``manage.py prepare_service``: what ``scripts/run.sh`` does before it starts web and worker, in one
process (each ``manage.py`` process pays the Python and Django set-up again, seconds each), and only
the work that is not done yet (docs/operations.md#what-happens-at-start):

* migrations, when the database has unapplied ones (a ``migrate`` with nothing to apply still runs
  the system checks and the post-migrate handlers: seconds of every restart);
* the default embedder's ONNX graph, built into ``EMBEDDING_CACHE_DIR`` on the first start (seconds of CPU
  that the first records would otherwise wait for, while every other request waits for a core);
* memories and summaries embedded by another model than the configured one, re-embedded;
* static files, collected when one is missing from ``STATIC_ROOT`` or older than its source (the
  compression of every file otherwise runs again at each start);
* the periodic jobs, created or updated (idempotent, a few rows);
* behind a transaction pooler (``DATABASE_POOLER=transaction``), search's session settings stored as
  the role's defaults (``reasoningbank/db_session.py``).

Several machines may start at once against one database (docs/operations.md#several-machines-on-one-database):
the steps run under a lock in PostgreSQL, so the second machine waits, then finds the work done instead of
applying the same migration at the same time (a duplicate table, a failed start).

One line per step, with its time. The embedded PostgreSQL is left running for web and worker.
"""

from __future__ import annotations

import io
import time
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from memories.writes import memories_reembed, summaries_reembed
from reasoningbank.ai.embedders import embedder_from_settings
from reasoningbank.db_locks import lock_held
from reasoningbank.db_session import session_defaults_store
from reasoningbank.embedded_db import server_keep_running
from reasoningbank.startup import migrations_unapplied, process_age_seconds, static_files_stale

PREPARE_LOCK = "prepare-service"


class Command(BaseCommand):
    help = "Migrate, re-embed, collect static files and set up the schedules, each only when needed (run.sh)."

    def handle(self, *args: Any, **options: Any) -> None:
        setup = process_age_seconds()
        if setup is not None:
            self.step("set-up", "Python, Django and the database connection", setup)

        began = time.monotonic()
        with lock_held(PREPARE_LOCK):
            waited = time.monotonic() - began
            if waited >= 1:
                self.step("lock", "another process was preparing the same database", waited)
            self.prepare()
        # web and worker attach next: a stop and a start of the server in between would cost seconds
        server_keep_running()

    def prepare(self) -> None:
        began = time.monotonic()
        unapplied = migrations_unapplied()
        if unapplied:
            self.stdout.write(f"    migrations   applying {len(unapplied)} ...")
            call_command("migrate", interactive=False, verbosity=0)
            self.step("migrations", f"{len(unapplied)} applied", time.monotonic() - began)
        else:
            self.step("migrations", "none to apply", time.monotonic() - began)

        if settings.EMBEDDER == "minilm-onnx":
            began = time.monotonic()
            embedder_from_settings()  # loads the graph from the cache, or builds and caches it
            self.step("embedder", f"{settings.EMBEDDER} ready", time.monotonic() - began)

        began = time.monotonic()

        def progress(done: int, total: int) -> None:
            self.stdout.write(f"    embeddings   {done}/{total} re-embedded")

        memories = memories_reembed(only_stale=True, progress=progress)
        summaries = summaries_reembed(only_stale=True)
        done = f"{memories} memories and {summaries} summaries re-embedded" if memories or summaries else "current"
        self.step("embeddings", done, time.monotonic() - began)

        began = time.monotonic()
        stale = static_files_stale()
        if stale:
            call_command("collectstatic", interactive=False, verbosity=0)
            self.step("static files", f"{len(stale)} collected", time.monotonic() - began)
        else:
            self.step("static files", "up to date", time.monotonic() - began)

        began = time.monotonic()
        out = io.StringIO()
        call_command("setup_schedules", stdout=out)
        placed = out.getvalue().strip().splitlines()[-1].replace(" schedules ", " ", 1)  # "7 in place, 0 removed"
        self.step("schedules", placed, time.monotonic() - began)

        if settings.DATABASE_POOLER == "transaction":
            began = time.monotonic()
            stored = session_defaults_store()
            self.step("pooler", f"{', '.join(stored)} stored as the role's defaults", time.monotonic() - began)

    def step(self, name: str, what: str, seconds: float) -> None:
        self.stdout.write(f"    {name:<12} {what} ({seconds:.1f} s)")
