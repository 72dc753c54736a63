"""Impressions (``memories.confidence.services_impressions``; docs/confidence.md#impressions-and-use): a memory
put in an agent's context unasked is counted as shown and moves no confidence; a use resets its unused count;
the daily job gives a memory shown often and never used one usage-negative signal per threshold reached."""

from __future__ import annotations

from typing import Any

import pytest

from memories.confidence.services import memories_mark_used, memory_feedback, memory_outcome
from memories.confidence.services_impressions import DEMOTION_ACTOR, memories_demote_ignored, memories_mark_shown
from memories.models import Memory, MemorySignal
from memories.tasks import signals_rollup_daily
from tests.factories import memory_recorder

record = memory_recorder(
    title="Pin the protobuf compiler version",
    description="When generated code differs between machines",
    content="Pin protoc in the build image and regenerate the code there, never on laptops.",
)


@pytest.fixture
def alice(cast: Any) -> Any:
    return cast.principal(cast.alice)


def shown(memory: Memory, times: int) -> Memory:
    for _ in range(times):
        memories_mark_shown(organization_id=memory.organization_id, memory_ids=[memory.id], write_behind=False)
    memory.refresh_from_db()
    return memory


def test_a_memory_shown_is_counted_and_its_confidence_stays(alice):
    memory = record(alice)
    before = memory.confidence

    shown(memory, 3)

    assert (memory.impression_count, memory.impressions_unused, memory.last_shown_at is not None) == (3, 3, True)
    assert memory.confidence == pytest.approx(before, abs=1e-12)
    assert (memory.usage_count, memory.last_used_at, memory.last_signal_at) == (0, None, None)
    assert not MemorySignal.objects.filter(memory=memory).exists()


def test_a_memory_named_twice_in_one_showing_counts_once(alice):
    memory = record(alice)
    memories_mark_shown(organization_id=memory.organization_id, memory_ids=[memory.id, memory.id], write_behind=False)
    memory.refresh_from_db()
    assert memory.impression_count == 1


def test_another_organizations_memory_is_never_counted(cast, alice):
    theirs = record(cast.principal(cast.charlie))

    memories_mark_shown(organization_id=cast.org_a.id, memory_ids=[theirs.id], write_behind=False)

    theirs.refresh_from_db()
    assert (theirs.impression_count, theirs.last_shown_at) == (0, None)


def test_a_use_resets_the_impressions_since_the_last_use_but_not_the_count(alice):
    memory = shown(record(alice), 5)

    memories_mark_used(principal=alice, memories=[memory], project=None)

    memory.refresh_from_db()
    assert (memory.impression_count, memory.impressions_unused, memory.usage_count) == (5, 0, 1)


def test_the_daily_job_demotes_a_memory_shown_the_threshold_times_without_use(settings, alice):
    settings.IMPRESSIONS_UNUSED_DEMOTE = 4
    ignored, used, rare = record(alice), record(alice, title="Used one"), record(alice, title="Rare one")
    shown(ignored, 9)  # two thresholds and one left over
    shown(used, 3)
    memories_mark_used(principal=alice, memories=[used], project=None)
    shown(used, 3)  # six shown, but only three since its use
    shown(rare, 3)
    confidences = {m.id: Memory.objects.get(pk=m.pk).confidence for m in (ignored, used, rare)}

    assert memories_demote_ignored() == 1

    signals = MemorySignal.objects.filter(memory=ignored)
    assert [(s.type, s.positive, s.actor) for s in signals] == [("usage", False, DEMOTION_ACTOR)] * 2
    ignored.refresh_from_db()
    assert ignored.impressions_unused == 1 and ignored.impression_count == 9
    assert ignored.confidence < confidences[ignored.id] - 0.01
    assert ignored.last_signal_at is not None
    for other in (used, rare):
        assert Memory.objects.get(pk=other.pk).confidence == pytest.approx(confidences[other.id], abs=1e-12)
        assert not MemorySignal.objects.filter(memory=other, positive=False).exists()
    assert memories_demote_ignored() == 0  # what was counted is spent


def test_an_archived_memory_is_not_demoted_and_zero_turns_demotion_off(settings, alice):
    settings.IMPRESSIONS_UNUSED_DEMOTE = 2
    archived = shown(record(alice), 3)
    Memory.objects.filter(pk=archived.pk).update(state=Memory.STATE_ARCHIVED)
    active = shown(record(alice, title="Active one"), 3)
    settings.IMPRESSIONS_UNUSED_DEMOTE = 0

    assert memories_demote_ignored() == 0

    settings.IMPRESSIONS_UNUSED_DEMOTE = 2
    assert memories_demote_ignored() == 1
    assert MemorySignal.objects.filter(memory=active).count() == 1
    assert not MemorySignal.objects.filter(memory=archived).exists()


def test_the_daily_rollup_runs_the_demotion(settings, alice):
    settings.IMPRESSIONS_UNUSED_DEMOTE = 2
    settings.CONFIDENCE_PRUNE_THRESHOLD = 0  # about demotion, not pruning
    shown(record(alice), 2)

    assert signals_rollup_daily()["demoted"] == 1


def test_feedback_and_an_outcome_are_uses_that_reset_the_impressions_since_the_last_use(alice):
    rated, succeeded = shown(record(alice), 4), shown(record(alice, title="Succeeded one"), 4)

    memory_feedback(principal=alice, memory=rated, helpful=False)
    memory_outcome(principal=alice, memory=succeeded, succeeded=True)

    assert [Memory.objects.get(pk=m.pk).impressions_unused for m in (rated, succeeded)] == [0, 0]
