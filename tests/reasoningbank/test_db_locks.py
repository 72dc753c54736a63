"""Locks every process respects (reasoningbank/db_locks.py), against the real PostgreSQL: a process waiting
for one must not hold up what the holder does in the meantime."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from reasoningbank import db_locks
from reasoningbank.db_locks import lock_held


@pytest.fixture
def scratch_table():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE lock_scratch (id int, name text)")
    yield "lock_scratch"
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS lock_scratch")


@pytest.mark.django_db(transaction=True)
def test_a_process_waiting_for_the_lock_does_not_stop_the_holder_building_an_index_concurrently(
    scratch_table, monkeypatch
):
    """Two machines start at once: the first migrates (CREATE INDEX CONCURRENTLY waits for every older
    snapshot in the database), the second waits for the lock. Waiting inside one blocked statement held a
    snapshot, and the two waited for each other for ever."""
    monkeypatch.setattr(db_locks, "LOCK_POLL_SECONDS", 0.05)
    refused: list[str] = []
    take = db_locks.lock_try_in_transaction
    monkeypatch.setattr(db_locks, "lock_try_in_transaction", lambda name: take(name) or refused.append(name) or False)
    second_done = threading.Event()

    def second_machine() -> None:
        try:
            with lock_held("lock-test"):
                second_done.set()
        finally:
            connection.close()

    with lock_held("lock-test"):
        machine = threading.Thread(target=second_machine, daemon=True)
        machine.start()
        deadline = time.monotonic() + 5
        while len(refused) < 2 and machine.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        with connection.cursor() as cursor:
            # bounded, so that a regression fails here instead of hanging the suite
            cursor.execute("SET statement_timeout = '20s'")
            cursor.execute(f"CREATE INDEX CONCURRENTLY lock_scratch_name ON {scratch_table} (name)")
            cursor.execute("RESET statement_timeout")
        assert not second_done.is_set()  # still waiting: the lock is held
    machine.join(30)

    assert second_done.is_set()
    with connection.cursor() as cursor:
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = 'lock_scratch_name'::regclass")
        assert cursor.fetchone()[0] is True
