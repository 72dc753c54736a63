"""Each worker's own presence stamp, so that the system page shows every worker of the service, on every
machine (docs/operations.md#several-machines-on-one-database).

The queue probe (``rb:queue-probe``) proves that *some* worker runs tasks: one task a minute, taken by
whichever cluster pulls it first, so with two workers it says nothing about the second. Each worker
proves itself here instead: django-q2's sentinel (the process of ``qcluster`` that guards the pusher and
the workers and restarts them when they die) calls its scheduler about every 30 seconds; this wraps that
call to stamp the worker's own row afterwards. django-q2 offers no hook there, hence the wrapper;
``tests/reasoningbank/test_worker_presence.py`` fails if a django-q2 upgrade moves the call.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError

from reasoningbank.services import worker_presence_record

logger = logging.getLogger(__name__)


def worker_presence_install() -> None:
    """In the worker process, before qcluster forks its sentinel (``ReasoningBankConfig.ready``)."""
    import django_q.cluster

    original = django_q.cluster.scheduler
    if getattr(original, "beats", False):
        return

    def scheduler(broker: Any = None) -> None:
        original(broker=broker)  # first: it closes the connections that went stale since the last call
        try:
            worker_presence_record()
        except DatabaseError as exc:  # the next call tries again; a beat that never comes reads as down
            logger.warning("this worker's presence was not stamped: %s", exc)

    scheduler.beats = True  # type: ignore[attr-defined]
    django_q.cluster.scheduler = scheduler
