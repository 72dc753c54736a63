"""The heartbeat of work in progress (a consolidation run, a session distillation), so that work whose
worker died is noticed within a minute instead of blocking its project (docs/operations.md).

While a task executes, a thread of its worker process stamps the row's ``heartbeat_at`` (the
database's clock) every ``WORK_HEARTBEAT_INTERVAL`` and names the process in ``worker``
(``<host>/<pid>``). A thread, not the
phases themselves, because one phase may wait minutes on an LLM: the beat says "this process is
alive", not "this phase moved". The sweeps that act on a stale beat live with their models
(``consolidation.runs.runs_recover_stale``, ``memories.sessions.services.sessions_recover_stale``).

When the row is no longer running (a sweep failed it while this process was alive but could not
reach the database, say), ``lost`` turns true and the task gives up at its next check instead of
finishing work its project has already been released from.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from types import TracebackType
from typing import Any

from django.db import DatabaseError, connection
from django.db.models.functions import Now

from reasoningbank.processes import process_exists, worker_identity, worker_is_gone

__all__ = ["WorkHeartbeat", "database_now", "process_exists", "worker_identity", "worker_is_gone"]


def database_now() -> datetime:
    """The database's clock. Heartbeats are stamped and judged by it, not by each host's: a worker
    whose clock runs 45 s behind the web's must not read as dead (docs/operations.md)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        row = cursor.fetchone()
    return row[0]  # type: ignore[no-any-return]

logger = logging.getLogger(__name__)


class WorkHeartbeat:
    """``with WorkHeartbeat(Model, pk, interval=...):`` stamps ``heartbeat_at`` of the row while it
    is ``running``, from a daemon thread with its own database connection."""

    def __init__(self, model: Any, pk: str, *, interval: float, running: str = "running") -> None:
        self.model, self.pk, self.interval, self.running = model, pk, interval, running
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat {pk}", daemon=True)

    def __enter__(self) -> WorkHeartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=max(5.0, self.interval))

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval) and self.beat_once():
                pass
        finally:
            connection.close()  # this thread's own connection

    def beat_once(self) -> bool:
        """One beat; False (and ``lost``) when the row exists and is no longer running. A row this
        connection cannot see (not committed yet) and a database that does not answer are not a lost
        run: the next beat tries again, and the sweep judges by the beats that arrived."""
        rows = self.model.objects.filter(pk=self.pk)
        try:
            if rows.filter(status=self.running).update(heartbeat_at=Now()) or not rows.exists():
                return True
        except DatabaseError as exc:
            logger.warning("heartbeat of %s %s not written: %s", self.model.__name__, self.pk, exc)
            connection.close()  # a broken connection is opened afresh at the next beat
            return True
        self.lost = True
        logger.warning("%s %s is no longer running: its heartbeat stops", self.model.__name__, self.pk)
        return False
