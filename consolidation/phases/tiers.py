"""Retention: the retention score and tier of every memory (docs/memory-model.md#tiers-and-retention), vectorised."""

from __future__ import annotations

import logging

from django.db import connection, transaction

from accounts.services import audit_record_many
from consolidation import retention
from consolidation.phases.registry import RunCounter, phase_register
from consolidation.run_state import RETENTION_WRITE_DELTA, RunState
from consolidation.selectors import (
    ScannedMemory,
)
from memories.models import MemoryLink
from memories.writes import memories_lock

logger = logging.getLogger("consolidation")


@phase_register(
    name="retention",
    order=30,
    description="score every memory's retention and move it between tiers (the daily decay)",
    counters=(
        RunCounter(
            "tier_transitions", "tier_transitions", "Memories whose tier (hot, warm, cold, archived) changed",
            dry_run_label="Would change tier",
        ),
    ),
)
def retention_step(state: RunState) -> None:
    tiers_update(state, state.memories)

# rows rewritten per transaction: each batch's row locks are held only while it writes, so a search's
# usage write waiting for one of them waits for a batch, not for the whole project
TIERS_WRITE_BATCH = 1000

_TIERS_UPDATE_SQL = (
    "UPDATE memories_memory m SET retention = v.r, tier = v.t "
    "FROM unnest(%s::text[], %s::float8[], %s::text[]) AS v(id, r, t) WHERE m.id = v.id"
)


def tiers_update(state: RunState, memories: dict[str, ScannedMemory]) -> None:
    """The retention score + tier of every memory, vectorised; the rows whose
    score or tier moved are rewritten in id order, a batch per transaction."""
    import numpy as np  # here, not at the top: the app's start-up imports every phase (docs/commands.md#start-up)

    if not memories:
        return
    superseded = set(
        MemoryLink.objects.filter(
            organization_id=state.run.organization_id, kind=MemoryLink.KIND_SUPERSEDES, target__project=state.project
        ).values_list("target_id", flat=True)
    )
    rows = list(memories.values())
    now = state.now.timestamp()
    created = np.fromiter((m.created for m in rows), dtype=np.float64, count=len(rows))
    last_access = np.fromiter((m.last_access for m in rows), dtype=np.float64, count=len(rows))
    scores = retention.retention_scores(
        age_days=(now - created) / 86400,
        access_age_days=(now - last_access) / 86400,
        activation_counts=np.fromiter((m.usage_count for m in rows), dtype=np.float64, count=len(rows)),
        importances=np.fromiter((m.importance for m in rows), dtype=np.float64, count=len(rows)),
        superseded=np.fromiter((m.id in superseded for m in rows), dtype=bool, count=len(rows)),
    )
    # salience for stale archival (docs/decisions.md#stale-archival-on-usage-alone): the usage-driven
    # part only. Importance keeps a memory warm in tiers, but must not make an unused memory
    # unarchivable forever.
    config = retention.DEFAULT_RETENTION_CONFIG
    salience = config.recency_weight * scores.recency + config.activation_weight * scores.activation
    old_tiers = np.array([m.tier for m in rows], dtype=object)
    old_scores = np.fromiter((m.retention for m in rows), dtype=np.float64, count=len(rows))
    tier_moved = scores.tiers.astype(object) != old_tiers
    # write only what moved: rewriting every row each run would churn the table for nothing
    moved = np.flatnonzero(tier_moved | (np.abs(scores.overall - old_scores) >= RETENTION_WRITE_DELTA))
    state.counters["tier_transitions"] = int(tier_moved.sum())
    overall, tiers, salience_list = scores.overall.tolist(), scores.tiers.tolist(), salience.tolist()
    for memory, score, tier, value in zip(rows, overall, tiers, salience_list, strict=True):
        memory.retention, memory.tier, memory.salience = score, tier, value
    if state.dry or not len(moved):
        return
    # in id order, locked before they are written (memories.locks): the UPDATE alone would lock them in
    # its plan's order and deadlock with a search's usage write holding some of them (docs/concurrency.md)
    ordered = sorted(moved.tolist(), key=lambda i: rows[i].id)
    for start in range(0, len(ordered), TIERS_WRITE_BATCH):
        batch = ordered[start : start + TIERS_WRITE_BATCH]
        ids = [rows[i].id for i in batch]
        with transaction.atomic(), connection.cursor() as cursor:
            memories_lock(ids, organization_id=state.run.organization_id)
            cursor.execute(_TIERS_UPDATE_SQL, [ids, [overall[i] for i in batch], [tiers[i] for i in batch]])
    _transitions_audit(state, [(rows[i].id, str(old_tiers[i]), tiers[i]) for i in np.flatnonzero(tier_moved)])


def _transitions_audit(state: RunState, transitions: list[tuple[str, str, str]]) -> None:
    """A ``memory.tier`` audit row per tier change, so a memory's history
    shows when and why it went cold: one statement per (from, to) pair."""
    by_pair: dict[tuple[str, str], list[str]] = {}
    for memory_id, old, new in transitions:
        by_pair.setdefault((old, new), []).append(memory_id)
    for (old, new), ids in sorted(by_pair.items()):
        # a tier change is a key decision, so INFO: one line per (from, to), the memories at DEBUG
        logger.info(
            "Memory tier changed: %d memories %s → %s",
            len(ids),
            old,
            new,
            extra={"run": state.run.id, "from_tier": old, "to_tier": new, "count": len(ids)},
        )
        logger.debug("Memories moved %s → %s", old, new, extra={"run": state.run.id, "memory_ids": ids[:1000]})
        audit_record_many(
            organization=state.run.organization,
            actor=state.principal,
            verb="memory.tier",
            target_type="memory",
            target_ids=ids,
            data={"from": old, "to": new, "run": state.run.id},
        )
