"""Reactions to events: on-demand consolidation after new memories, and the events' log lines and
counters (cycles, patterns, contradictions, duplicates, archived; docs/observability.md#logs)."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import connection

from consolidation.metrics import consolidation_run_observe
from consolidation.tasks import work_sweep
from consolidation.triggers import consolidation_on_demand
from reasoningbank.logging_json import TRACE, log_body
from reasoningbank.services import cluster_name

logger = logging.getLogger("consolidation")


def on_memories_added(sender: Any, project: Any, count: int, **kwargs: Any) -> None:
    consolidation_on_demand(project=project)


def on_worker_spawned(sender: Any, proc_name: str = "", **kwargs: Any) -> None:
    """A django-q2 worker process started — at the cluster's start, or in place of one that died
    (killed, out of memory, timed out): release at once the work of any worker of this host that is
    gone, instead of waiting for its heartbeat to go stale (docs/operations.md). Never stops the
    worker from starting. Not in the webhook worker (docs/security/worker-fairness.md): its processes
    take deliveries only, and the worker's own processes sweep."""
    if cluster_name() == settings.WEBHOOKS_CLUSTER:
        return
    try:
        released = work_sweep()
    except Exception:  # the database may be the reason the last worker died; the minute's sweep retries
        logger.warning("the sweep at the start of worker %s failed", proc_name, exc_info=True)
    else:
        if any(released.values()):
            logger.warning(
                "worker %s started: released the work of a dead worker (%d run(s) failed, %d session(s) requeued)",
                proc_name,
                released["runs"],
                released["sessions"],
            )
    finally:
        connection.close()


def on_run_completed(sender: Any, run: Any, **kwargs: Any) -> None:
    counters = run.counters or {}
    # a dry run's proposals carry dry_run="true": they are never counted as merges or archives
    consolidation_run_observe(
        status=run.status,
        trigger=run.trigger,
        dry_run=run.dry_run,
        counters=counters,
        duration_seconds=None if run.status == "skipped" else (run.result or {}).get("duration_seconds"),
    )
    logger.info(
        (
            "[MEM:CONSOLIDATE] Dry run of the cycle for %s: %s processed, %s patterns, would archive %s, in %sms"
            if run.dry_run
            else "[MEM:CONSOLIDATE] Completed cycle for %s: %s processed, %s patterns, %s archived in %sms"
        ),
        run.project.slug if run.project else run.organization.slug,
        counters.get("processed", 0),
        counters.get("patterns", 0),
        counters.get("archived", 0),
        int((run.result or {}).get("duration_seconds", 0) * 1000),
    )


def on_pattern_extracted(sender: Any, run: Any, memory: Any, source_count: int, **kwargs: Any) -> None:
    logger.info("[MEM:CONSOLIDATE] Extracted pattern %s from %d episodic memories", memory.id, source_count)


def on_contradiction_detected(sender: Any, run: Any, contradictions: list[dict[str, Any]], **kwargs: Any) -> None:
    for item in contradictions:
        logger.info(
            "[MEM:CONSOLIDATE] Contradiction %s <-> %s confidence=%.2f",
            item["first"],
            item["second"],
            item["confidence"],
            extra={"run": run.id, "first": item["first"], "second": item["second"]},
        )
        # the judge's explanation quotes the memories: a body, so TRACE only, scrubbed
        # (docs/observability.md#logs)
        if logger.isEnabledFor(TRACE):
            logger.log(
                TRACE, "Contradiction explanation", extra={"run": run.id, "explanation": log_body(item["explanation"])}
            )
