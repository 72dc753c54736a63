"""django-q2 entry points for consolidation: take ids, call services."""

from __future__ import annotations

import logging

from accounts.access import system_principal
from accounts.plans.catalogue import FEATURE_INSTITUTIONAL_PROMOTION
from accounts.selectors import organizations_with_feature
from consolidation.promotion.services import promotions_propose
from consolidation.runs import consolidation_execute, runs_recover_stale, runs_resume_batch, runs_resume_budget
from consolidation.triggers import consolidation_schedule_due
from memories.writes import sessions_recover_stale, sessions_release_idle
from reasoningbank.ai.batch_services import batches_poll
from reasoningbank.tracing import task_traced

logger = logging.getLogger("consolidation")


@task_traced("task.consolidation_run")  # a child of the request that queued it (its trace_context)
def consolidation_run_task(run_id: str) -> str | None:
    run = consolidation_execute(run_id)
    return None if run is None else run.status


def consolidation_scheduler_tick() -> int:
    """Every few minutes: fail runs whose worker died, queue again the runs that waited for their
    organization's LLM budget and may go on (docs/llm-spend.md#what-waits), then queue the projects
    that are due."""
    runs_recover_stale()
    runs_resume_budget()
    return len(consolidation_schedule_due())


def llm_batches_poll() -> dict[str, int]:
    """Every two minutes: store the answers of the LLM batches that ended, then queue again the runs that
    waited for them (docs/llm-spend.md#batch-mode)."""
    counts = batches_poll()
    counts["resumed"] = runs_resume_batch()
    return counts


def work_sweep() -> dict[str, int]:
    """Every minute (``rb:work-sweep``) and whenever a worker process starts: work whose worker died
    is released — a consolidation run is failed (its project may run again), a session is queued
    again (docs/operations.md) — and sessions handed in while they went on are queued once idle
    (docs/claude-code.md#capture: every minute, so none looks stalled while it waits for the sweep)."""
    return {
        "runs": runs_recover_stale(),
        "sessions": sessions_recover_stale(),
        "idle_sessions": sessions_release_idle(),
    }


def promotions_institutional_daily() -> dict[str, int]:
    """Daily: institutional promotion for every organization whose plan has it. One org
    failing is logged and does not stop the others."""
    totals = {"organizations": 0, "proposed": 0, "accepted": 0, "failed": 0}
    for org in organizations_with_feature(FEATURE_INSTITUTIONAL_PROMOTION):
        try:
            report = promotions_propose(principal=system_principal(org), trigger="scheduled")
        except Exception:
            logger.exception("institutional promotion failed for %s", org.slug)
            totals["failed"] += 1
            continue
        totals["organizations"] += 1
        totals["proposed"] += len(report.proposed)
        totals["accepted"] += report.accepted
    return totals
