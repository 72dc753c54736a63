"""django-q2 entry points of the project package."""

from __future__ import annotations

from reasoningbank.services import worker_heartbeat_record


def worker_heartbeat() -> str:
    """Scheduled every minute (``rb:worker-heartbeat``): proves the queue, pusher and workers run."""
    return worker_heartbeat_record().beat_at.isoformat()
