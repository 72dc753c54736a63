"""Reactions to events: on-demand consolidation after new memories, and the events' log lines and
counters (seed 004 §7: cycles, patterns, contradictions, duplicates, archived)."""

from __future__ import annotations

import logging
from typing import Any

from reasoningbank.metrics import counter_add

logger = logging.getLogger("consolidation")


def on_memories_added(sender: Any, project: Any, count: int, **kwargs: Any) -> None:
    from consolidation.triggers import consolidation_on_demand

    consolidation_on_demand(project=project)


def on_run_completed(sender: Any, run: Any, **kwargs: Any) -> None:
    counters = run.counters or {}
    counter_add(
        "consolidation_runs_total",
        1,
        status=run.status,
        trigger=run.trigger,
        dry_run="true" if run.dry_run else "false",
    )
    for name in ("duplicates_merged", "archived", "created", "contradictions", "patterns", "supersessions"):
        if run.dry_run:  # proposals, not merges or archives: counted apart
            counter_add("consolidation_dry_run_proposals_total", counters.get(name, 0), kind=name)
        else:
            counter_add(f"consolidation_{name}_total", counters.get(name, 0))
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
            "[MEM:CONSOLIDATE] Contradiction %s <-> %s confidence=%.2f: %s",
            item["first"],
            item["second"],
            item["confidence"],
            item["explanation"],
        )
