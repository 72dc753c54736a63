"""Usage signals written by searches (docs/concurrency.md): concurrent writes on overlapping memories
never deadlock; a write that loses a race or finds no connection is tried again; one that still fails
is logged and counted as dropped, and never fails the search."""

from __future__ import annotations

import threading
from typing import Any

import psycopg.errors
import pytest
from django.db import IntegrityError, OperationalError, connection
from prometheus_client import REGISTRY
from psycopg_pool import PoolTimeout

from memories.confidence import services
from memories.models import Memory, MemorySignal
from memories.search.contracts import SearchInput
from memories.search.services import memory_search_use
from tests.factories import memory_recorder
from tests.slow_updates import slow_row_updates, usage_arguments

TITLE = "Retry flaky network calls with jittered backoff"
QUERY = "retry flaky network calls with backoff"


record = memory_recorder(
    title=TITLE,
    description="When an HTTP client call to a third-party API times out intermittently",
    content="Wrap the call in a retry loop with exponential backoff and random jitter.",
)


@pytest.mark.django_db(transaction=True)  # each writer thread commits on its own connection
def test_usage_writes_locking_the_same_memories_in_opposite_orders_do_not_deadlock(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    first, second = record(principal), record(principal, title="Pin the Postgres image tag in CI")
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def write(order: list[Memory]) -> None:
        try:
            with connection.cursor() as cursor:
                # the plan of a real-sized table: index lookups in the order the memories are listed
                cursor.execute("SET enable_seqscan = off; SET enable_hashjoin = off; SET enable_mergejoin = off")
            start.wait()
            services.usage_write(usage_arguments(order, "token:test"))
        except BaseException as exc:  # the test reports whatever the writer hit
            errors.append(exc)
        finally:
            connection.close()

    with slow_row_updates():
        writers = [threading.Thread(target=write, args=(order,)) for order in ([first, second], [second, first])]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(timeout=30)

    assert errors == []
    assert sorted(Memory.objects.values_list("usage_count", flat=True)) == [2, 2]
    assert MemorySignal.objects.filter(type="usage").count() == 4


@pytest.mark.django_db(transaction=True)
def test_many_concurrent_usage_writes_on_overlapping_memories_all_complete(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memories = [record(principal, title=f"{TITLE} variant {n}") for n in range(6)]
    errors: list[BaseException] = []
    start = threading.Barrier(6)

    def write(shift: int) -> None:
        # each writer takes four of the six memories, rotated and reversed: overlapping, in different orders
        order = (memories[shift:] + memories[:shift])[:4][:: -1 if shift % 2 else 1]
        try:
            start.wait()
            for _ in range(5):
                services.usage_write(usage_arguments(order, "token:test"))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    writers = [threading.Thread(target=write, args=(shift,)) for shift in range(6)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=60)

    assert errors == []
    assert sum(Memory.objects.values_list("usage_count", flat=True)) == 6 * 5 * 4


def _wrapped(cause: Exception, wrapper: type[Exception] = OperationalError) -> Exception:
    """What Django raises: its own error class, the driver's error as the cause."""
    error = wrapper(str(cause))
    error.__cause__ = cause
    return error


def _deadlock() -> Exception:
    return _wrapped(psycopg.errors.DeadlockDetected("deadlock detected"))


def _failing_usage_write(arguments: list[Any]) -> None:
    raise _deadlock()


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture(autouse=True)
def _no_backoff(settings: Any) -> None:
    settings.USAGE_WRITE_RETRY_DELAY = 0  # the retries' waits, not what is retried, would slow the tests


def failing_then_real(failures: list[Exception]) -> Any:
    """A usage write that raises each of ``failures`` in turn, then writes for real."""
    real = services.usage_write
    calls: list[int] = []

    def write(arguments: list[Any]) -> None:
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        real(arguments)

    write.calls = calls  # type: ignore[attr-defined]
    return write


@pytest.mark.django_db(transaction=True)  # a lost connection is given back to get another: not in a transaction
@pytest.mark.parametrize(
    ("failure", "reason"),
    [
        (_deadlock, "deadlock"),
        (lambda: _wrapped(psycopg.errors.SerializationFailure("could not serialize access")), "serialization"),
        (lambda: _wrapped(PoolTimeout("couldn't get a connection after 3.00 sec")), "database_unavailable"),
    ],
)
def test_a_usage_write_that_lost_a_race_or_found_no_connection_is_retried_and_written(
    agent, monkeypatch, failure, reason
):
    memory = record(agent)
    write = failing_then_real([failure(), failure()])
    monkeypatch.setattr(services, "usage_write", write)
    retried, dropped = (
        _sample("reasoningbank_usage_write_retries_total", reason=reason),
        _sample("reasoningbank_usage_signals_total", outcome="dropped"),
    )

    memory_search_use(principal=agent, search=SearchInput(query=QUERY, min_confidence=0.0).to_query())

    assert len(write.calls) == 3
    assert Memory.objects.get(pk=memory.pk).usage_count == 1
    assert MemorySignal.objects.filter(memory=memory, type="usage").count() == 1
    assert _sample("reasoningbank_usage_write_retries_total", reason=reason) == retried + 2
    assert _sample("reasoningbank_usage_signals_total", outcome="dropped") == dropped


def test_the_retries_wait_longer_each_time(agent, monkeypatch, settings):
    settings.USAGE_WRITE_RETRY_DELAY = 0.1
    settings.USAGE_WRITE_ATTEMPTS = 4
    waits: list[float] = []
    monkeypatch.setattr(services.time, "sleep", waits.append)
    monkeypatch.setattr(services, "usage_write", _failing_usage_write)

    services.usage_signals_write(usage_arguments([record(agent)], "token:test"))

    # three waits between four attempts, each the delay doubled, jittered by at most half either way
    assert len(waits) == 3
    for wait, base in zip(waits, (0.1, 0.2, 0.4), strict=True):
        assert base * 0.5 <= wait <= base * 1.5


def test_a_usage_write_failing_every_attempt_is_logged_and_its_signals_counted_as_dropped(
    agent, monkeypatch, caplog, settings
):
    settings.USAGE_WRITE_ATTEMPTS = 3
    first, second = record(agent), record(agent, title="Pin the Postgres image tag in CI")
    monkeypatch.setattr(services, "usage_write", _failing_usage_write)
    dropped = _sample("reasoningbank_usage_signals_total", outcome="dropped")
    failures = _sample("reasoningbank_usage_write_failures_total")

    services.usage_signals_write(usage_arguments([first, second], "token:test"))

    [line] = [r for r in caplog.records if r.levelname == "ERROR"]
    assert "failed after 3 attempts: 2 usage signals dropped" in line.getMessage()
    assert "deadlock detected" in line.getMessage()
    assert _sample("reasoningbank_usage_signals_total", outcome="dropped") == dropped + 2
    assert _sample("reasoningbank_usage_write_failures_total") == failures + 1


def test_a_usage_write_failing_for_another_reason_is_not_retried_but_still_counted(agent, monkeypatch, caplog):
    memory = record(agent)
    write = failing_then_real([_wrapped(psycopg.errors.ForeignKeyViolation("no such memory"), IntegrityError)])
    monkeypatch.setattr(services, "usage_write", write)
    dropped = _sample("reasoningbank_usage_signals_total", outcome="dropped")

    services.usage_signals_write(usage_arguments([memory], "token:test"))

    assert len(write.calls) == 1
    assert "failed after 1 attempt: 1 usage signals dropped" in caplog.text and "Traceback" in caplog.text
    assert _sample("reasoningbank_usage_signals_total", outcome="dropped") == dropped + 1


def test_written_usage_signals_are_counted_once_committed(agent, django_capture_on_commit_callbacks):
    memory = record(agent)
    written = _sample("reasoningbank_usage_signals_total", outcome="written")

    with django_capture_on_commit_callbacks(execute=False) as committed:
        memory_search_use(principal=agent, search=SearchInput(query=QUERY, min_confidence=0.0).to_query())
    assert _sample("reasoningbank_usage_signals_total", outcome="written") == written  # not yet committed
    for callback in committed:
        callback()

    assert Memory.objects.get(pk=memory.pk).usage_count == 1
    assert _sample("reasoningbank_usage_signals_total", outcome="written") == written + 1


def test_a_failing_usage_write_does_not_fail_the_search(agent, monkeypatch, caplog):
    memory = record(agent)
    monkeypatch.setattr(services, "usage_write", _failing_usage_write)

    result = memory_search_use(principal=agent, search=SearchInput(query=QUERY, min_confidence=0.0).to_query())

    assert [hit.memory.id for hit in result.hits] == [memory.id]
    assert "1 usage signals dropped" in caplog.text and "deadlock detected" in caplog.text
    assert Memory.objects.get(pk=memory.pk).usage_count == 0  # dropped, and counted as such


def test_a_failing_usage_write_does_not_fail_the_rest_search(cast, token_client, monkeypatch):
    client = token_client(cast.org_a, projects=[cast.project_a])
    created = client.post(
        "/api/v1/memories",
        {"title": TITLE, "description": "When calls time out", "content": "Back off with jitter", "outcome": "success"},
        format="json",
    )
    assert created.status_code == 201, created.content
    monkeypatch.setattr(services, "usage_write", _failing_usage_write)

    response = client.post("/api/v1/memories/search", {"query": QUERY, "min_confidence": 0}, format="json")

    assert response.status_code == 200, response.content
    assert [m["id"] for m in response.json()["memories"]] == [created.json()["id"]]
