"""Staleness reads (docs/code-memory.md#staleness): which of some memories have an anchor whose code
changed since it was written — for search's ranking and flags, and for the words every injection adds
("the code changed since <commit> — verify")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from memories.models import MemoryAnchor
from reasoningbank.db_replica import read_alias


@dataclass(frozen=True)
class CodeChanged:
    """A memory's first anchor flagged ``code_changed``: where, and the commit that changed it."""

    commit: str
    path: str
    symbol: str
    changed_at: datetime | None


def code_changed_of(organization_id: int, memory_ids: Iterable[str]) -> dict[str, CodeChanged]:
    """Of these memories of the organization, those with an anchor flagged ``code_changed`` → the oldest
    such change (read from the read replica inside ``replica_read``). One indexed query."""
    ids = list(dict.fromkeys(memory_ids))
    if not ids:
        return {}
    rows = (
        MemoryAnchor.objects.using(read_alias())
        .filter(organization_id=organization_id, memory_id__in=ids, state=MemoryAnchor.STATE_CODE_CHANGED)
        .order_by("memory_id", "changed_at", "id")
        .values_list("memory_id", "changed_commit", "path", "symbol", "changed_at")
    )
    found: dict[str, CodeChanged] = {}
    for memory_id, commit, path, symbol, changed_at in rows:
        found.setdefault(memory_id, CodeChanged(commit, path, symbol, changed_at))
    return found
