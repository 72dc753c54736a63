"""The scan: load the project's active memories (ids, vectors, usage) for the run's later phases."""

from __future__ import annotations

import logging

from consolidation.phases.registry import RunCounter, phase_register
from consolidation.run_state import RunState
from consolidation.selectors import (
    ScannedMemory,
    memories_scan,
)

logger = logging.getLogger("consolidation")


@phase_register(
    name="scan",
    order=10,
    description="load the project's active memories (ids, vectors, usage)",
    counters=(RunCounter("processed", "memories_processed", "Memories a consolidation run scanned"),),
)
def scan_step(state: RunState) -> None:
    state.memories = memories_load(state)


def memories_load(state: RunState) -> dict[str, ScannedMemory]:
    memories = memories_scan(organization_id=state.run.organization_id, project_id=state.project.id)
    state.counters["processed"] = len(memories)
    return memories
