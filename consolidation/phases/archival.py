"""Stale archival: archive stale memories and expired working memories (docs/consolidation.md#archival)."""

from __future__ import annotations

import logging

from consolidation import retention
from consolidation.phases.registry import RunCounter, phase_register
from consolidation.run_state import STALE_IDLE_DAYS, STALE_RETENTION, RunState, run_archive
from consolidation.selectors import (
    ScannedMemory,
)
from memories.models import Memory

logger = logging.getLogger("consolidation")


# last: it reads the salience the retention phase computed, and every other phase has had its say.
# ``archived`` counts every archive of the run (duplicates, syntheses, supersessions, stale ones)
@phase_register(
    name="archive",
    order=100,
    description="archive stale memories and expired working memories",
    counters=(
        RunCounter(
            "archived", "memories_archived", "Memories archived (merged, superseded or stale)",
            dry_run_label="Would archive",
        ),
    ),
)
def archive_step(state: RunState) -> None:
    stale_archive(state, state.memories)


def stale_archive(state: RunState, memories: dict[str, ScannedMemory]) -> None:
    """Archive low-salience memories idle for 30 days; expired working memories too.
    Uses the salience computed by this run's retention phase (also in a dry run)."""
    now = state.now.timestamp()
    stale = [
        m.id
        for m in memories.values()
        if retention.is_stale(
            m.salience, idle_seconds=now - m.last_access, threshold=STALE_RETENTION, max_idle_days=STALE_IDLE_DAYS
        )
        or (m.kind == Memory.KIND_WORKING and m.expires is not None and m.expires < now)
    ]
    if not stale:
        return
    if state.dry:
        state.preview["stale"] = stale
    else:
        # only rows still active are archived; locked in id order first (docs/concurrency.md)
        stale = run_archive(state, stale, Memory.ARCHIVED_STALE, only_active=True)
    state.archived.extend(stale)
    state.counters["archived"] += len(stale)
