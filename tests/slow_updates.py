"""Control over how concurrent writers interleave, for the tests that prove they never deadlock
(docs/concurrency.md): every row UPDATE of a table sleeps a moment after locking its row, so a writer
that locks rows one by one still holds its first row when another writer asks for it; ``race`` starts
the second writer exactly then."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.utils import timezone

from memories.models import Memory

_SLOW_UPDATES = """
CREATE OR REPLACE FUNCTION test_slow_update() RETURNS trigger AS $$
BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $$ LANGUAGE plpgsql;
CREATE TRIGGER test_slow_update BEFORE UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION test_slow_update();
"""
_FAST_UPDATES = """
DROP TRIGGER IF EXISTS test_slow_update ON {table};
DROP FUNCTION IF EXISTS test_slow_update();
"""


@contextmanager
def slow_row_updates(table: str = "memories_memory") -> Iterator[None]:
    """Every row update of ``table`` sleeps 0.3 s after its row is locked, inside the block."""
    with connection.cursor() as cursor:
        cursor.execute(_SLOW_UPDATES.format(table=table))
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(_FAST_UPDATES.format(table=table))


def _backend_sleeping(pid: int) -> bool:
    """Whether that backend is inside the slow-update trigger, i.e. holds a row it updates."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "PgSleep"


def race(
    first: Callable[[], Any], first_plan: str, second: Callable[[], Any], *, table: str = "memories_memory"
) -> list[str]:
    """``first`` on one thread (its connection planned by ``first_plan``, e.g. ``SET enable_seqscan = off``)
    and ``second`` on another, started once ``first`` holds the first row it updates; each on its own
    connection, with every row update of ``table`` slowed. Returns the errors either hit."""
    errors: list[str] = []
    first_pid: list[int] = []
    ready = threading.Event()

    def run_first() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute(first_plan)
                cursor.execute("SELECT pg_backend_pid()")
                first_pid.append(cursor.fetchone()[0])
            ready.set()
            first()
        except Exception as exc:  # the test reports whatever a writer hit
            errors.append(f"first: {type(exc).__name__}: {exc}")
        finally:
            ready.set()
            connection.close()

    def run_second() -> None:
        try:
            ready.wait(30)
            deadline = time.monotonic() + 30
            while first_pid and not _backend_sleeping(first_pid[0]) and time.monotonic() < deadline:
                time.sleep(0.01)
            second()
        except Exception as exc:
            errors.append(f"second: {type(exc).__name__}: {exc}")
        finally:
            connection.close()

    with slow_row_updates(table):
        threads = [threading.Thread(target=run_first), threading.Thread(target=run_second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    return errors


def usage_arguments(memories: list[Memory], actor: str) -> list[Any]:
    """What ``memories_mark_used`` hands to the usage write, for these memories in this order."""
    now = timezone.now()
    return [
        [m.id for m in memories],
        [m.organization_id for m in memories],
        [m.project_id for m in memories],
        [m.alpha for m in memories],
        [m.beta for m in memories],
        [m.confidence for m in memories],
        "",  # the signals' session
        actor,
        now,  # the signals' created_at
        now,  # last_used_at
        now,  # last_signal_at
    ]
