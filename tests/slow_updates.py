"""Control over how concurrent writers interleave, for the tests that prove they never deadlock
(docs/concurrency.md): every row UPDATE of ``memories_memory`` sleeps a moment after locking its row,
so a writer that locks rows one by one still holds its first row when another writer asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.utils import timezone

from memories.models import Memory

SLOW_UPDATES = """
CREATE OR REPLACE FUNCTION test_usage_slow_update() RETURNS trigger AS $$
BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $$ LANGUAGE plpgsql;
CREATE TRIGGER test_usage_slow_update BEFORE UPDATE ON memories_memory
FOR EACH ROW EXECUTE FUNCTION test_usage_slow_update();
"""
FAST_UPDATES = """
DROP TRIGGER IF EXISTS test_usage_slow_update ON memories_memory;
DROP FUNCTION IF EXISTS test_usage_slow_update();
"""


@contextmanager
def slow_row_updates() -> Iterator[None]:
    """Every row update of a memory sleeps 0.3 s after its row is locked, inside the block."""
    with connection.cursor() as cursor:
        cursor.execute(SLOW_UPDATES)
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(FAST_UPDATES)


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
        actor,
        now,  # the signals' created_at
        now,  # last_used_at
        now,  # last_signal_at
    ]
