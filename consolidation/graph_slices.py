"""Which memories the stored neighbour graph probes again, a slice at a time (pure logic).

An approximate index misses a few percent of the edges in any one pass, and an incremental run
never looks for them again. Re-probing every memory once a week would make that week's run as
slow as the first one (about 90 s at 100K memories on two cores). Instead the memories fall into
``SLICES`` fixed slices by id, and a slice is probed again once its last probe is ``max_age``
old; a full pass stamps the slices as if probed a day apart, so afterwards one slice falls due
per day and every run stays small.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from datetime import datetime, timedelta

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

SLICES = 7


def slice_of(memory_id: str) -> int:
    """A memory's slice: stable across processes and releases (not Python's salted ``hash``)."""
    return zlib.crc32(memory_id.encode()) % SLICES


def slices_staggered(now: datetime, max_age: timedelta) -> list[datetime]:
    """Probe times to record after probing every memory at ``now``: slice ``i`` as if probed
    ``i`` steps of ``max_age / SLICES`` earlier, so the slices fall due one step apart."""
    step = max_age / SLICES
    return [now - i * step for i in range(SLICES)]


def slices_due(probed_at: Sequence[datetime], now: datetime, max_age: timedelta) -> set[int]:
    """Slices whose last probe is ``max_age`` old or more (every slice when the record is not one
    time per slice)."""
    if len(probed_at) != SLICES:
        return set(range(SLICES))
    return {i for i, at in enumerate(probed_at) if at <= now - max_age}
