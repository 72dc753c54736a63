"""A memory's full-text vector (docs/search.md#candidates): PostgreSQL writes it from the title,
description and content whenever one of them is written, and leaves it — and the row's indexes — alone
when anything else changes, so that the usage update every search makes stays a HOT update."""

from __future__ import annotations

import pytest
from django.db import connection

from memories.confidence.services import memories_mark_used
from memories.models import Memory
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def vector(memory_id: str) -> str:
    return str(Memory.objects.values_list("search_vector", flat=True).get(pk=memory_id))


def hot_updates_in_this_transaction() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_get_xact_tuples_hot_updated('memories_memory'::regclass)")
        return int(cursor.fetchone()[0])


def test_the_vector_follows_the_text_however_it_is_written(agent):
    memory = MemoryFactory(
        principal=agent, title="Pin the compiler version", description="When builds differ between machines",
        content="Pin the toolchain in the repository so every machine compiles with the same version.",
    )  # fmt: skip
    assert "'pin':1A" in vector(memory.id) and "'toolchain'" in vector(memory.id)

    memory.title = "Vendor the linker"
    memory.save()
    assert "'vendor':1A" in vector(memory.id) and "'pin':1A" not in vector(memory.id)

    Memory.objects.filter(pk=memory.pk).update(content="Cache the dependency downloads between runs.")
    assert "'download'" in vector(memory.id) and "'toolchain'" not in vector(memory.id)

    Memory.objects.filter(pk=memory.pk).update(search_vector="forged")  # the app never writes it
    assert "'forg'" not in vector(memory.id) and "'vendor':1A" in vector(memory.id)


def test_a_usage_update_of_a_long_memory_leaves_its_indexes_alone(agent):
    # long enough that PostgreSQL compresses the stored vector: a generated column recomputed at each update
    # never equals it, and no update of such a row was HOT
    words = " ".join(f"step{n} checks the queue depth and the retry budget of worker{n}" for n in range(120))
    memory = MemoryFactory(
        principal=agent, title="Drain the queue before a deploy", description="When a deploy drops jobs",
        content=f"Before the deploy: {words}.",
    )  # fmt: skip
    before = vector(memory.id)
    hot_before = hot_updates_in_this_transaction()

    memories_mark_used(principal=agent, memories=[Memory.objects.get(pk=memory.pk)], project=None)

    assert Memory.objects.get(pk=memory.pk).usage_count == 1
    assert hot_updates_in_this_transaction() == hot_before + 1
    assert vector(memory.id) == before
