"""Database work handed to other threads, each on its own pooled connection: search's second leg
runs beside the first, and usage-signal writes happen after the search has answered.

Only possible with the connection pool (a fresh connection per hand-off would cost more than it
saves) and when the caller holds no transaction (another connection could not see its rows).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import connection, connections

from reasoningbank.metrics import WRITE_BEHIND
from reasoningbank.tracing import bind, span

logger = logging.getLogger(__name__)
T = TypeVar("T")

_parallel = ThreadPoolExecutor(max_workers=8, thread_name_prefix="db-parallel")
# one writer keeps the writes in order; beyond this many pending, callers write themselves
_writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db-write-behind")
_write_slots = threading.BoundedSemaphore(256)


def other_connections_usable(*, idle: bool = False) -> bool:
    """Whether work may go to another pooled connection; with ``idle``, only when one is free now
    (under load a second connection per request would queue for the pool instead of saving time)."""
    # ``pool`` (Django ≥ 5.1, PostgreSQL) is None unless OPTIONS["pool"] is set
    pool = getattr(connection, "pool", None)
    if pool is None or connection.in_atomic_block:
        return False
    if not idle:
        return True
    stats = pool.get_stats()
    free = stats.get("pool_available", 0) > 0 or stats.get("pool_size", 0) < stats.get("pool_max", 0)
    return free and not stats.get("requests_waiting", 0)


def _on_own_connection(fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(*args)
    finally:
        for used in connections.all(initialized_only=True):
            used.close()  # this thread's connections (the primary's, the replica's) go back to their pools


def run_beside(fn: Callable[..., T], *args: Any) -> Future[T]:
    """``fn(*args)`` on another thread and connection, now; the caller collects the result. It sees the
    caller's context variables (a read on the replica stays on the replica: reasoningbank/db_replica.py)."""
    context = contextvars.copy_context()
    # bind: its spans stay in the caller's trace
    return _parallel.submit(context.run, bind(_on_own_connection), fn, *args)


def write_behind(fn: Callable[..., None], *args: Any) -> bool:
    """``fn(*args)`` on the writer thread after the caller has moved on; False (nothing queued) when
    the queue is full, so the caller writes itself. A failure is logged: what is written this way
    must be affordable to lose (usage signals)."""
    if not _write_slots.acquire(blocking=False):
        WRITE_BEHIND.labels(outcome="queue_full", work=getattr(fn, "__name__", str(fn))).inc()
        return False

    name = getattr(fn, "__name__", str(fn))

    def run() -> None:
        try:
            with span("db.write_behind", work=name):  # after the caller's span ended, still in its trace
                _on_own_connection(fn, *args)
            WRITE_BEHIND.labels(outcome="written", work=name).inc()
        except Exception:
            logger.exception("write-behind %s failed", name)
            WRITE_BEHIND.labels(outcome="failed", work=name).inc()
        finally:
            _write_slots.release()

    _writer.submit(bind(run))
    return True


def write_behind_wait() -> None:
    """Until every write queued so far is done (tests, shutdown)."""
    _writer.submit(lambda: None).result()
