"""Writes of the project package's own records: the queue probe's stamp and each worker's presence (rows of
``WorkerHeartbeat``, the model's name from before the two were told apart: renaming it would need a migration)."""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from reasoningbank.models import WorkerHeartbeat
from reasoningbank.processes import worker_identity, worker_is_gone


def cluster_name() -> str:
    """django-q2's cluster (and ORM queue) name, as the running cluster sees it."""
    from django_q.conf import Conf

    return str(Conf.CLUSTER_NAME)


def queue_probe_record(*, now: datetime | None = None) -> WorkerHeartbeat:
    """The queue probe reached a worker: stamp its cluster's row (one upsert, no history kept)."""
    beat, _ = WorkerHeartbeat.objects.update_or_create(
        cluster=cluster_name(),
        defaults={"beat_at": now or timezone.now(), "host": socket.gethostname()[:255], "pid": os.getpid()},
    )
    return beat


# One row per worker process group beside the cluster's own row: "<cluster>@<host>/<pid>" (the primary key
# is 100 characters; a long host name is cut, the pid kept). reasoningbank/worker_presence.py writes them.
WORKER_PRESENCE_SEPARATOR = "@"
WORKER_PRESENCE_KEPT = timedelta(days=1)


def worker_presence_key(identity: str) -> str:
    prefix = f"{cluster_name()}{WORKER_PRESENCE_SEPARATOR}"
    host, _, pid = identity.rpartition("/")
    return f"{prefix}{host[: 100 - len(prefix) - len(pid) - 1]}/{pid}"


def worker_presence_record(*, now: datetime | None = None) -> WorkerHeartbeat:
    """This worker (a qcluster on some machine) is alive: stamp its own row, and forget the rows of this
    machine's workers that are gone (a restart gives the worker a new pid) and of any worker silent for a day."""
    identity = worker_identity()
    now = now or timezone.now()
    beat, _ = WorkerHeartbeat.objects.update_or_create(
        cluster=worker_presence_key(identity),
        defaults={"beat_at": now, "host": socket.gethostname()[:255], "pid": os.getpid()},
    )
    others = WorkerHeartbeat.objects.filter(cluster__startswith=f"{cluster_name()}{WORKER_PRESENCE_SEPARATOR}").exclude(
        pk=beat.pk
    )
    gone = [row.pk for row in others if worker_is_gone(f"{row.host}/{row.pid}")]
    others.filter(Q(pk__in=gone) | Q(beat_at__lt=now - WORKER_PRESENCE_KEPT)).delete()
    return beat
