"""django-q2 entry points for memories: take ids, call services."""

from __future__ import annotations

import logging

from memories.services_signals import confidence_recompute_all, signals_rollup

logger = logging.getLogger(__name__)


def signals_rollup_daily() -> dict[str, int]:
    """Seed 000's daily rollup, then a recompute of every confidence with the learned weights."""
    result = signals_rollup()
    result["recomputed"] = confidence_recompute_all()
    logger.info("signal rollup folded=%s memories=%s recomputed=%s", *result.values())
    return result


def session_distill(session_id: str) -> str | None:
    """Distil one submitted session (queued by session_submit / retries)."""
    from memories.services_sessions import session_process

    session = session_process(session_id)
    return None if session is None else session.status


def sessions_resume() -> int:
    from memories.services_sessions import sessions_resume_waiting

    return sessions_resume_waiting()
