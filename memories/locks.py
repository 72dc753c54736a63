"""Row locks on memories, always taken in one order: ascending id (docs/concurrency.md).

Several writers change many ``memories_memory`` rows at once while agents work: the usage signals
written behind every search, the consolidation run's retention tiers and archival, the daily
confidence recompute. An UPDATE locks its rows in whatever order its plan visits them (a hash join
over the heap, an index scan in a list's order), so two such writers with overlapping rows could
each hold a row the other needs next: PostgreSQL then aborts one with "deadlock detected". Locking
the rows first, sorted by id, in the writer's transaction makes every pair of writers queue behind
one another instead: whoever takes the lowest shared row first goes first.

Call these inside ``transaction.atomic()``; the locks last until it commits.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from memories.models import Memory

# FOR NO KEY UPDATE: the lock an UPDATE that leaves the key alone takes anyway, so taking it first
# adds no conflict of its own (inserts of signals and links that reference the rows still go ahead)
_LOCK_SQL = "SELECT 1 FROM memories_memory WHERE id = ANY(%s::text[]) {org}ORDER BY id FOR NO KEY UPDATE"


def memories_lock(memory_ids: Iterable[str], *, organization_id: int | None = None) -> None:
    """Lock these memories (of this organization, when given) for an update of their non-key
    columns, in id order."""
    ids = sorted(set(memory_ids))
    if not ids:
        return
    with connection.cursor() as cursor:
        if organization_id is None:
            cursor.execute(_LOCK_SQL.format(org=""), [ids])
        else:
            cursor.execute(_LOCK_SQL.format(org="AND organization_id = %s "), [ids, organization_id])


def memories_lock_active(ids: Iterable[str]) -> list[str]:
    """Lock the still-active ones of these memories (in id order, so concurrent lockers never
    deadlock) and return their ids. Call inside a transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memories_memory WHERE id = ANY(%s) AND state = %s ORDER BY id FOR UPDATE",
            [list(ids), Memory.STATE_ACTIVE],
        )
        return [row[0] for row in cursor.fetchall()]
