"""Usage signals written by searches (issue 11 item 11): concurrent writes on overlapping memories
never deadlock, and a usage write that fails never fails the search."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.utils import timezone
from prometheus_client import REGISTRY

from memories import services_signals as services
from memories.contracts import SearchInput
from memories.models import Memory, MemorySignal
from memories.services import memory_search_use
from tests.factories import memory_recorder

TITLE = "Retry flaky network calls with jittered backoff"
QUERY = "retry flaky network calls with backoff"

# Every row update sleeps a little after its row is locked, so two writers that lock the same rows
# in opposite orders both hold their first row while they ask for the second: a certain deadlock
# unless the writers lock in one order.
_SLOW_UPDATES = """
CREATE OR REPLACE FUNCTION test_usage_slow_update() RETURNS trigger AS $$
BEGIN PERFORM pg_sleep(0.3); RETURN NEW; END $$ LANGUAGE plpgsql;
CREATE TRIGGER test_usage_slow_update BEFORE UPDATE ON memories_memory
FOR EACH ROW EXECUTE FUNCTION test_usage_slow_update();
"""
_FAST_UPDATES = """
DROP TRIGGER IF EXISTS test_usage_slow_update ON memories_memory;
DROP FUNCTION IF EXISTS test_usage_slow_update();
"""


record = memory_recorder(
    title=TITLE,
    description="When an HTTP client call to a third-party API times out intermittently",
    content="Wrap the call in a retry loop with exponential backoff and random jitter.",
)


def usage_arguments(memories: list[Memory], actor: str) -> list[Any]:
    """What ``memories_mark_used`` hands to ``_usage_write``, for these memories in this order."""
    now = timezone.now()
    return [
        [m.id for m in memories],
        [m.organization_id for m in memories],
        [m.project_id for m in memories],
        [m.alpha for m in memories],
        [m.beta for m in memories],
        [m.confidence for m in memories],
        actor,
        now,  # the signals' created_at
        now,  # last_used_at
        now,  # last_signal_at
    ]


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
            services._usage_write(usage_arguments(order, "token:test"))
        except BaseException as exc:  # the test reports whatever the writer hit
            errors.append(exc)
        finally:
            connection.close()

    with connection.cursor() as cursor:
        cursor.execute(_SLOW_UPDATES)
    try:
        writers = [threading.Thread(target=write, args=(order,)) for order in ([first, second], [second, first])]
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(timeout=30)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(_FAST_UPDATES)

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
                services._usage_write(usage_arguments(order, "token:test"))
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


def _failing_usage_write(arguments: list[Any]) -> None:
    raise OperationalError("deadlock detected")


def test_a_failing_usage_write_does_not_fail_the_search(cast, make_token, monkeypatch, caplog):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    monkeypatch.setattr(services, "_usage_write", _failing_usage_write)
    before = REGISTRY.get_sample_value("reasoningbank_usage_write_failures_total") or 0

    result = memory_search_use(principal=principal, search=SearchInput(query=QUERY, min_confidence=0.0).to_query())

    assert [hit.memory.id for hit in result.hits] == [memory.id]
    assert "memories failed; the search answers without it" in caplog.text and "deadlock detected" in caplog.text
    assert REGISTRY.get_sample_value("reasoningbank_usage_write_failures_total") == before + 1
    assert Memory.objects.get(pk=memory.pk).usage_count == 0  # lost, and affordable to lose


def test_a_failing_usage_write_does_not_fail_the_rest_search(cast, token_client, monkeypatch):
    client = token_client(cast.org_a, projects=[cast.project_a])
    created = client.post(
        "/api/v1/memories",
        {"title": TITLE, "description": "When calls time out", "content": "Back off with jitter", "outcome": "success"},
        format="json",
    )
    assert created.status_code == 201, created.content
    monkeypatch.setattr(services, "_usage_write", _failing_usage_write)

    response = client.post("/api/v1/memories/search", {"query": QUERY, "min_confidence": 0}, format="json")

    assert response.status_code == 200, response.content
    assert [m["id"] for m in response.json()["memories"]] == [created.json()["id"]]
