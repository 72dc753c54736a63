"""Staleness reads (docs/code-memory.md#staleness): which of some memories have an anchor whose code
changed since it was written — for search's ranking and flags, and for the words every injection adds
("the code changed since <commit> — verify")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memories.models import MemoryAnchor
from reasoningbank.db_replica import read_rows


@dataclass(frozen=True)
class CodeChanged:
    """A memory's first anchor flagged ``code_changed``: where, and the commit that changed it."""

    commit: str
    path: str
    symbol: str
    changed_at: datetime | None


_CHANGED_SQL = (
    f"SELECT DISTINCT ON (a.memory_id) a.memory_id, a.changed_commit, a.path, a.symbol, a.changed_at "
    f"FROM {MemoryAnchor._meta.db_table} a "
    "WHERE a.organization_id = %s AND a.memory_id = ANY(%s) AND a.state = %s "
    "ORDER BY a.memory_id, a.changed_at, a.id"
)


def code_changed_of(organization_id: int, memory_ids: Iterable[str]) -> dict[str, CodeChanged]:
    """Of these memories of the organization, those with an anchor flagged ``code_changed`` → the oldest
    such change (read from the read replica inside ``replica_read``). One indexed statement, written out:
    search reads it for every call (reasoningbank/db_replica.py ``read_rows``)."""
    ids = list(dict.fromkeys(memory_ids))
    if not ids:
        return {}
    rows = read_rows(_CHANGED_SQL, [organization_id, ids, MemoryAnchor.STATE_CODE_CHANGED])
    return {
        memory_id: CodeChanged(commit, path, symbol, changed_at) for memory_id, commit, path, symbol, changed_at in rows
    }
