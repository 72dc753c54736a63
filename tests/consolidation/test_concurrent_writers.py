"""The consolidation run's memory updates (retention tiers, stale archival) and the usage signals that
searches write behind their answers lock the rows they share in one order, so they queue instead of
deadlocking (docs/concurrency.md).

Each test runs the two writers on two threads with their own PostgreSQL connections, on the same two
memories, with the interleaving that deadlocked: the run's statement visits the memories in the
other order (as a real table's plan may: a list's order, or the heap's), holds the first one, and
only then does the usage write start. Every row update sleeps a moment after locking its row (a
trigger), so the run still holds its first row when the usage write asks for both.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from consolidation.phases.archival import stale_archive
from consolidation.phases.tiers import tiers_update
from consolidation.run_state import RunOptions, RunState
from consolidation.selectors import memories_scan
from memories.confidence import services as services_signals
from memories.models import Memory, MemorySignal
from tests.factories import ConsolidationRunFactory, memory_recorder
from tests.slow_updates import race, usage_arguments

pytestmark = pytest.mark.django_db(transaction=True)  # each writer commits on its own connection

record = memory_recorder(
    description="When a service keeps timing out under load",
    content="Set an explicit timeout on every outbound call and retry with jittered backoff.",
)


def two_old_memories(principal: Any) -> list[Memory]:
    """Two memories a year old, still filed as hot and never used: the run moves both to cold, and
    archives both as stale. Sorted by id (the order the usage write locks them in)."""
    memories = [record(principal, title="Time out outbound calls"), record(principal, title="Back off on retries")]
    year_ago = timezone.now() - timedelta(days=365)
    Memory.objects.filter(pk__in=[m.pk for m in memories]).update(
        created_at=year_ago, updated_at=year_ago, tier="hot", retention=0.9
    )
    return sorted((Memory.objects.get(pk=m.pk) for m in memories), key=lambda m: m.id)


def run_state_for(principal: Any) -> RunState:
    run = ConsolidationRunFactory(project=principal.token.projects.get(), status="running")
    started = time.monotonic()
    return RunState(
        run=run,
        project=run.project,
        options=RunOptions(),
        principal=principal,
        llm=None,
        started=started,
        deadline=started + 600,
        now=timezone.now(),
    )


def test_the_retention_phase_and_a_searchs_usage_write_on_the_same_memories_do_not_deadlock(agent):
    first, second = two_old_memories(agent)
    state = run_state_for(agent)
    scanned = memories_scan(organization_id=state.run.organization_id, project_id=state.project.id)
    # the phase's rows in descending id order, and a plan that updates them in the order listed
    backwards = dict(sorted(scanned.items(), reverse=True))
    errors = race(
        lambda: tiers_update(state, backwards),
        "SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_seqscan = off",
        lambda: services_signals.usage_write(usage_arguments([first, second], agent.actor_label)),
    )

    assert errors == []
    assert sorted(Memory.objects.values_list("tier", flat=True)) == ["cold", "cold"]
    assert sorted(Memory.objects.values_list("usage_count", flat=True)) == [1, 1]
    assert MemorySignal.objects.filter(type="usage").count() == 2


def test_stale_archival_and_a_searchs_usage_write_on_the_same_memories_do_not_deadlock(agent):
    first, second = two_old_memories(agent)
    # a newer version of the first memory's row: the heap now holds the second one before it, and a
    # sequential scan visits them in that order (a real table's heap is in no particular id order)
    Memory.objects.filter(pk=first.pk).update(title=first.title)
    state = run_state_for(agent)
    scanned = memories_scan(organization_id=state.run.organization_id, project_id=state.project.id)
    for memory in scanned.values():
        memory.salience = 0.01  # as the retention phase leaves a memory unused for a year

    errors = race(
        lambda: stale_archive(state, scanned),
        "SET enable_indexscan = off; SET enable_bitmapscan = off",
        lambda: services_signals.usage_write(usage_arguments([first, second], agent.actor_label)),
    )

    assert errors == []
    assert sorted(Memory.objects.values_list("state", flat=True)) == ["archived", "archived"]
    assert sorted(Memory.objects.values_list("usage_count", flat=True)) == [1, 1]
