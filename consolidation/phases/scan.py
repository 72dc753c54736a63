"""Phase 1: load the project's active memories (ids, vectors, usage) for the run."""

from __future__ import annotations

import logging

from consolidation.run_state import RunState
from consolidation.selectors import (
    ScannedMemory,
    memories_scan,
)

logger = logging.getLogger("consolidation")


def memories_load(ctx: RunState) -> dict[str, ScannedMemory]:
    memories = memories_scan(organization_id=ctx.run.organization_id, project_id=ctx.project.id)
    ctx.counters["processed"] = len(memories)
    return memories
