"""Writes of the project package's own records (the worker heartbeat)."""

from __future__ import annotations

import os
import socket
from datetime import datetime

from django.utils import timezone

from reasoningbank.models import WorkerHeartbeat


def cluster_name() -> str:
    """django-q2's cluster (and ORM queue) name, as the running cluster sees it."""
    from django_q.conf import Conf

    return str(Conf.CLUSTER_NAME)


def worker_heartbeat_record(*, now: datetime | None = None) -> WorkerHeartbeat:
    """The worker is alive: stamp its cluster's row (one upsert, no history kept)."""
    beat, _ = WorkerHeartbeat.objects.update_or_create(
        cluster=cluster_name(),
        defaults={"beat_at": now or timezone.now(), "host": socket.gethostname()[:255], "pid": os.getpid()},
    )
    return beat
