"""django-q2 entry points for memories: take ids, call services."""

from __future__ import annotations

import logging
from datetime import datetime

from memories.code.services_staleness import code_deleted_archive
from memories.confidence.services import confidence_recompute_all, signals_decay, signals_rollup
from memories.confidence.services_impressions import memories_demote_ignored
from memories.moderation.services import memories_prune_low_confidence
from memories.sessions.services import session_process, sessions_resume_waiting
from reasoningbank.tracing import task_traced

logger = logging.getLogger(__name__)


def signals_rollup_daily(now: datetime | None = None) -> dict[str, int]:
    """The daily rollup, then the time decay of silent memories' evidence, then the demotion of memories
    shown often and never used, then a recompute of every confidence with the learned weights, then pruning
    of the memories whose confidence stayed too low (docs/confidence.md#the-event-log-and-the-daily-rollup)."""
    result = signals_rollup(now=now)
    result["decayed"] = signals_decay(now=now)
    result["demoted"] = memories_demote_ignored(now=now)
    result["recomputed"] = confidence_recompute_all()
    result["pruned"] = memories_prune_low_confidence(now=now)["pruned"]
    logger.info("signal rollup folded=%s memories=%s decayed=%s demoted=%s recomputed=%s pruned=%s", *result.values())
    return result


def code_deleted_archive_daily(now: datetime | None = None) -> dict[str, int]:
    """Archive the memories whose code is gone (docs/code-memory.md#staleness)."""
    result = code_deleted_archive(now=now)
    logger.info("code deleted archive archived=%s", result["archived"])
    return result


@task_traced("task.session_distill")  # a child of the request that queued it (its trace_context)
def session_distill(session_id: str) -> str | None:
    """Distil one submitted session (queued by session_submit / retries)."""
    session = session_process(session_id)
    return None if session is None else session.status


def sessions_resume() -> int:
    return sessions_resume_waiting()
