"""django-q2 entry points for consolidation: take ids, call services."""

from __future__ import annotations

from consolidation.runs import consolidation_execute, runs_recover_stale
from consolidation.triggers import consolidation_schedule_due


def consolidation_run_task(run_id: str) -> str | None:
    run = consolidation_execute(run_id)
    return None if run is None else run.status


def consolidation_scheduler_tick() -> int:
    """Every few minutes: fail runs whose worker died, then queue the projects that are due."""
    runs_recover_stale()
    return len(consolidation_schedule_due())
