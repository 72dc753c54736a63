"""Locks that every process of the service respects, on every machine: PostgreSQL advisory locks,
the one place all of them share (docs/operations.md#several-machines-on-one-database).

Only transaction-scoped ones (``pg_advisory_xact_lock``): a session-level advisory lock would stay
with whichever server connection a transaction pooler (PgBouncer, pool_mode = transaction) happened
to hand out, and be released or kept by chance. A transaction's lock is released at its end,
whatever connection it ran on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

# the first key of hashtextextended: names of this module's locks stay apart from other advisory locks
_SEED = 0x5242  # "RB"
# how often a process waiting for ``lock_held`` asks again
LOCK_POLL_SECONDS = 0.5


def lock_in_transaction(name: str) -> None:
    """Wait for the lock ``name`` and hold it until the caller's transaction ends (it must be in one:
    outside ``transaction.atomic`` the lock would end with the statement that took it)."""
    if not connection.in_atomic_block:
        raise RuntimeError("lock_in_transaction needs a transaction (transaction.atomic)")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))", [name, _SEED])


def lock_try_in_transaction(name: str) -> bool:
    """``lock_in_transaction`` without the wait: True when taken (until the transaction ends)."""
    if not connection.in_atomic_block:
        raise RuntimeError("lock_try_in_transaction needs a transaction (transaction.atomic)")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(%s, %s))", [name, _SEED])
        return bool(cursor.fetchone()[0])


@contextmanager
def lock_held(name: str) -> Iterator[None]:
    """``with lock_held("prepare-service"):`` runs its body while no other process holds ``name``.

    The lock lives in a transaction of a connection of its own (another thread's: Django's connections
    are per thread), so the body's own work commits as it goes: a migration commits migration by
    migration, and a second machine waiting here sees all of it once the first lets go."""
    acquired, release = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def hold() -> None:
        try:
            # Asked again every LOCK_POLL_SECONDS rather than waited for in one statement: a statement
            # blocked on the lock holds a snapshot, and the holder's migrations that build an index
            # CONCURRENTLY wait for every older snapshot to end — both machines would wait for each other
            # through a cycle PostgreSQL cannot see (two run.sh started at once hung in their migrations).
            while True:
                with transaction.atomic():
                    if lock_try_in_transaction(name):
                        acquired.set()
                        release.wait()
                        return
                time.sleep(LOCK_POLL_SECONDS)
        except BaseException as exc:  # reported in the caller's thread
            failure.append(exc)
        finally:
            acquired.set()
            connection.close()  # this thread's own connection

    holder = threading.Thread(target=hold, name=f"lock {name}", daemon=True)
    holder.start()
    acquired.wait()
    if failure:
        holder.join()
        raise failure[0]
    try:
        yield
    finally:
        release.set()
        holder.join()
