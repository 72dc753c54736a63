"""Database work on other threads' pooled connections (reasoningbank/db_threads.py)."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from prometheus_client import REGISTRY

from reasoningbank import db_threads


@pytest.mark.parametrize(
    ("pool", "in_atomic_block", "usable"),
    [(object(), False, True), (None, False, False), (object(), True, False), (None, True, False)],
)
def test_other_connections_are_used_only_with_a_pool_and_outside_a_transaction(
    monkeypatch, pool, in_atomic_block, usable
):
    monkeypatch.setattr(db_threads, "connection", SimpleNamespace(pool=pool, in_atomic_block=in_atomic_block))
    assert db_threads.other_connections_usable() is usable


@pytest.mark.parametrize(
    ("stats", "usable"),
    [
        ({"pool_available": 2, "pool_size": 20, "pool_max": 20, "requests_waiting": 0}, True),
        ({"pool_available": 0, "pool_size": 5, "pool_max": 20, "requests_waiting": 0}, True),  # it can grow
        ({"pool_available": 0, "pool_size": 20, "pool_max": 20, "requests_waiting": 0}, False),  # all busy
        ({"pool_available": 1, "pool_size": 20, "pool_max": 20, "requests_waiting": 3}, False),  # others queue
    ],
)
def test_an_idle_connection_is_asked_for_only_when_the_pool_has_one_free(monkeypatch, stats, usable):
    pool = SimpleNamespace(get_stats=lambda: stats)
    monkeypatch.setattr(db_threads, "connection", SimpleNamespace(pool=pool, in_atomic_block=False))
    assert db_threads.other_connections_usable(idle=True) is usable
    assert db_threads.other_connections_usable() is True


def test_written_behind_work_runs_in_order_on_the_writer_thread(db):
    seen: list[tuple[int, str]] = []
    for i in range(3):
        assert db_threads.write_behind(lambda i: seen.append((i, threading.current_thread().name)), i)
    db_threads.write_behind_wait()
    assert [i for i, _ in seen] == [0, 1, 2]
    assert all(name.startswith("db-write-behind") for _, name in seen)


def test_a_failing_write_is_logged_and_frees_its_slot(db, caplog, monkeypatch):
    def boom() -> None:
        raise RuntimeError("database went away")

    monkeypatch.setattr(db_threads, "_write_slots", threading.BoundedSemaphore(1))
    assert db_threads.write_behind(boom)
    db_threads.write_behind_wait()
    assert "write-behind boom failed" in caplog.text
    assert REGISTRY.get_sample_value("reasoningbank_write_behind_total", {"outcome": "failed", "work": "boom"}) >= 1
    assert db_threads.write_behind(lambda: None)  # the one slot is free again
    db_threads.write_behind_wait()


def test_with_the_queue_full_the_caller_writes_itself(db, monkeypatch):
    monkeypatch.setattr(db_threads, "_write_slots", threading.BoundedSemaphore(1))
    gate = threading.Event()
    assert db_threads.write_behind(gate.wait)
    assert db_threads.write_behind(lambda: None) is False
    gate.set()
    db_threads.write_behind_wait()
    assert db_threads.write_behind(lambda: None)
    db_threads.write_behind_wait()


def test_work_beside_returns_its_result(db):
    assert db_threads.run_beside(lambda a, b: (a + b, threading.current_thread().name), 2, 3).result()[0] == 5
