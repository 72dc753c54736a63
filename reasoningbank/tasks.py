"""django-q2 entry points of the project package."""

from __future__ import annotations

from reasoningbank.services import queue_probe_record


def queue_probe() -> str:
    """The queue probe, scheduled every minute (``rb:queue-probe``): a task that reaches a worker only through the
    broker queue, the pusher and the worker pool, so its stamp proves all three run (``reasoningbank.health``)."""
    return queue_probe_record().beat_at.isoformat()


# the dotted path before the probe was renamed: a task already queued under it at an upgrade still runs
# (setup_schedules rewrites the schedule row, not the queued tasks: docs/architecture.md#the-worker-and-the-schedules)
worker_heartbeat = queue_probe
