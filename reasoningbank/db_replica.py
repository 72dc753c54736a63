"""Reads that may be a moment stale go to the read replica (docs/operations.md#a-read-replica).

With ``DATABASE_REPLICA_URL`` set, settings add the ``replica`` database alias and
``PrimaryReplicaRouter``. A selector that is safe to serve stale runs through ``replica_read``: inside
it, the ORM's reads (the router) and the raw SQL of ``read_alias()`` go to the replica; every write,
every read inside a transaction and every ``select_for_update`` stays on the primary. Everything else
reads the primary, as without a replica.

``replica_read`` keeps a reader on the primary when

* the call is not part of a web request (tasks and commands read what they have just written),
* the request, or another request of the same principal in the last ``replica_sticky_seconds()``,
  wrote something (read-your-writes: writes are noticed on the primary connection itself, so no
  write path can forget to say so),
* the last check found the replica too far behind (``DATABASE_REPLICA_MAX_LAG``) or unreachable;
  the check runs at most every ``DATABASE_REPLICA_CHECK_INTERVAL`` per process, never per query,

and when the replica fails mid-read (gone, or a query cancelled by a recovery conflict), the read is
done again on the primary: the caller never sees the replica's trouble.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from reasoningbank.db_replica_rules import lag_verdict, sticky_seconds, written_tables
from reasoningbank.metrics import REPLICA_READS
from reasoningbank.middleware import database_unavailable
from reasoningbank.request_context import RequestContext, request_context_get

logger = logging.getLogger(__name__)
T = TypeVar("T")

REPLICA_ALIAS = "replica"
# tables whose writes are bookkeeping nobody reads back at once: failed-token counters, the shared
# cache (where the write marks themselves live), a token's last-use touch, sign-in sessions, LLM
# metering (a deep search's question rewrite). A write to one of them keeps no reader on the primary.
UNTRACKED_TABLES = frozenset(
    {
        "rb_throttle",
        "rb_cache",
        "accounts_apitoken",
        "django_session",
        "reasoningbank_llmcall",
        "reasoningbank_llmbudgetperiod",
    }
)
_MARK_PREFIX = "replica:wrote:"  # + the principal's key, in the shared cache: every web process sees it

_read_alias: ContextVar[str | None] = ContextVar("rb_read_alias", default=None)
_untracked: ContextVar[bool] = ContextVar("rb_writes_untracked", default=False)


def replica_configured() -> bool:
    return REPLICA_ALIAS in connections.settings


def read_alias() -> str:
    """Where a read of the current code should go: the replica inside ``replica_read`` (unless a
    transaction is open on the primary), else the primary. Raw SQL uses ``connections[read_alias()]``."""
    alias = _read_alias.get()
    if alias is None or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    return alias


def read_rows(sql: str, params: dict[str, Any] | list[Any]) -> list[tuple[Any, ...]]:
    """A read's rows by raw SQL, from the read replica inside ``replica_read``. For the reads of every agent
    call: a static statement costs nothing to build, where the ORM compiled each query again (bench/README.md,
    where the CPU of one search goes)."""
    with connections[read_alias()].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class PrimaryReplicaRouter:
    """Writes always to the primary; reads to the replica only inside ``replica_read``. Explicit
    answers, never None: Django would otherwise follow an instance's own database, and a row read
    from the replica would then be saved there (refused) or its related rows read there outside
    ``replica_read``."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        return read_alias()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the replica holds the primary's rows: the same objects on both

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS  # the replica replays the primary's schema


# --- the replica's health, checked every few seconds -------------------------------------------------


@dataclass(frozen=True)
class ReplicaStatus:
    usable: bool
    lag_seconds: float | None  # None: unknown (unreachable, or behind with nothing replayed yet)
    reason: str  # "ok", "lagging", "unreachable", "not_standby", "failed_read"
    checked_at: float  # time.monotonic()


_status: ReplicaStatus | None = None
_status_lock = threading.Lock()


def replica_status_clear() -> None:
    """Forget the last check: the next ``replica_read`` checks again (tests, operators' shells)."""
    global _status
    _status = None


def replica_status() -> ReplicaStatus:
    """The replica's last known state, checked again when older than the check interval. One thread
    checks at a time; the others use the last verdict meanwhile (or the primary, before the first)."""
    global _status
    now = time.monotonic()
    current = _status
    if current is not None and now - current.checked_at < float(settings.DATABASE_REPLICA_CHECK_INTERVAL):
        return current
    if not _status_lock.acquire(blocking=False):
        return current or ReplicaStatus(False, None, "checking", now)
    try:
        checked = _replica_check()
        if current is None or checked.reason != current.reason:
            log = logger.info if checked.usable else logger.warning
            log("read replica: %s (lag %s s)", checked.reason, checked.lag_seconds)
        _status = checked
        return checked
    finally:
        _status_lock.release()


def _replica_check() -> ReplicaStatus:
    """How far behind the replica is. The primary's WAL position is read first: a replica that has
    replayed up to it is caught up however long ago its last transaction was (an idle primary makes
    ``now() - pg_last_xact_replay_timestamp()`` grow without the replica being behind); one still
    short of it is as far behind as the time since the last transaction it replayed."""
    now = time.monotonic()
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            primary_lsn = cursor.fetchone()[0]
        with connections[REPLICA_ALIAS].cursor() as cursor:
            cursor.execute(
                "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn() >= %s::pg_lsn, "
                "EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8",
                [primary_lsn],
            )
            in_recovery, caught_up, since_replay = cursor.fetchone()
    except DatabaseError as exc:
        _close_quietly(REPLICA_ALIAS)
        logger.debug("read replica check failed: %s", exc)
        return ReplicaStatus(False, None, "unreachable", now)
    usable, lag, reason = lag_verdict(
        in_recovery=bool(in_recovery),
        caught_up=bool(caught_up),
        seconds_since_replay=since_replay,
        max_lag=float(settings.DATABASE_REPLICA_MAX_LAG),
    )
    return ReplicaStatus(usable, lag, reason, now)


def _close_quietly(alias: str) -> None:
    try:
        connections[alias].close()
    except DatabaseError:
        pass  # a connection already broken: nothing left to close


# --- read-your-writes ----------------------------------------------------------------------------------


def replica_sticky_seconds() -> float:
    return sticky_seconds(
        max_lag=float(settings.DATABASE_REPLICA_MAX_LAG),
        check_interval=float(settings.DATABASE_REPLICA_CHECK_INTERVAL),
    )


def _principal_key(context: RequestContext) -> str:
    return f"{context.org}:{context.token_prefix}"


_recent_writes: dict[str, float] = {}  # this process's own marks (principal key → monotonic time)


def _principal_wrote_recently(context: RequestContext) -> bool:
    key = _principal_key(context)
    mark = _recent_writes.get(key)
    if mark is not None and time.monotonic() - mark < replica_sticky_seconds():
        return True
    return bool(_shared_cache().get(_MARK_PREFIX + key))  # a mark another web process left


def _shared_cache() -> Any:
    return caches["shared" if "shared" in settings.CACHES else "default"]


def _write_mark(context: RequestContext) -> None:
    """The request wrote: it and its principal's next requests read the primary for a while."""
    context.wrote = True
    key = _principal_key(context)
    _recent_writes[key] = time.monotonic()
    if len(_recent_writes) > 10_000:  # principals that stopped writing long ago go
        horizon = time.monotonic() - replica_sticky_seconds()
        for stale in [k for k, at in list(_recent_writes.items()) if at < horizon]:
            _recent_writes.pop(stale, None)
    token = _untracked.set(True)  # the mark's own write is not one to track
    try:
        _shared_cache().set(_MARK_PREFIX + key, 1, timeout=max(1, round(replica_sticky_seconds())))
    except DatabaseError:
        logger.warning("read replica: could not share a write mark; other processes may read the replica")
    finally:
        _untracked.reset(token)


def _track_writes(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    """An execute wrapper on the primary's connections: the first tracked write of a request marks it."""
    result = execute(sql, params, many, context)
    request = request_context_get()
    if request is not None and not request.wrote and not _untracked.get():
        if any(table not in UNTRACKED_TABLES for table in written_tables(sql)):
            _write_mark(request)
    return result


def write_tracking_install(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """``connection_created`` receiver: watch the primary's connections for writes (with a replica)."""
    if (
        connection.alias == DEFAULT_DB_ALIAS
        and replica_configured()
        and _track_writes not in connection.execute_wrappers
    ):
        connection.execute_wrappers.append(_track_writes)


@contextmanager
def writes_untracked() -> Any:
    """Writes nobody needs to read back at once (a search's usage signals): they keep no reader on
    the primary. Without this, every search would pin its agent to the primary."""
    token = _untracked.set(True)
    try:
        yield
    finally:
        _untracked.reset(token)


# --- the entry point -------------------------------------------------------------------------------


def _replica_for_request() -> tuple[str | None, str]:
    """The alias a stale-safe read of this request may use, and why (a metric label)."""
    if not replica_configured():
        return None, "none"
    context = request_context_get()
    if context is None:
        return None, "outside_request"
    if context.wrote:
        return None, "recent_write"
    if not context.no_recent_write:
        if _principal_wrote_recently(context):
            return None, "recent_write"
        context.no_recent_write = True
    status = replica_status()
    if not status.usable:
        return None, status.reason
    return REPLICA_ALIAS, "ok"


def _replica_failed(exc: BaseException) -> bool:
    """A failure that the primary would not have had: the replica gone, or a query it cancelled
    because replay needed the rows (SQLSTATE 40001, a recovery conflict)."""
    cause = exc.__cause__ or exc
    return database_unavailable(exc) or getattr(cause, "sqlstate", None) == "40001"


def replica_read(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` with its reads on the replica when allowed (this module's docstring),
    else on the primary; again on the primary when the replica fails during it. ``fn`` must be a
    read, or writes that may run twice: it is run again after a failure on the replica."""
    alias, reason = _replica_for_request()
    if alias is None:
        if reason != "none":
            REPLICA_READS.labels(target="primary", reason=reason).inc()
        return fn(*args, **kwargs)
    token = _read_alias.set(alias)
    try:
        result = fn(*args, **kwargs)
        REPLICA_READS.labels(target="replica", reason="ok").inc()
        return result
    except DatabaseError as exc:
        if not _replica_failed(exc):
            raise
        global _status
        _status = ReplicaStatus(False, None, "failed_read", time.monotonic())
        logger.warning("read replica failed during a read (%s); reading the primary", exc)
        _close_quietly(alias)
    finally:
        _read_alias.reset(token)
    REPLICA_READS.labels(target="primary", reason="failed_read").inc()
    return fn(*args, **kwargs)


def replica_reads(fn: Callable[..., T]) -> Callable[..., T]:
    """``replica_read`` as a decorator (a dashboard page: a GET, safe to run twice)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return replica_read(fn, *args, **kwargs)

    return wrapper
