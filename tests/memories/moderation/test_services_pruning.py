"""Pruning of low-confidence memories (docs/confidence.md#pruning): the daily rollup archives a memory
whose confidence stayed below 0.3 after enough signals, audited and restorable."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from memories.confidence.services import memory_feedback
from memories.models import Memory, MemorySignal, MemorySignalAggregate
from memories.moderation.services import memories_prune_low_confidence, memory_restore
from memories.tasks import signals_rollup_daily
from tests.factories import memory_recorder

record = memory_recorder(
    title="Disable the cache to fix stale pages",
    description="When pages show stale data after a deploy",
    content="Turn the page cache off entirely in production settings.",
)


@pytest.fixture(autouse=True)
def prune_settings(settings: Any) -> None:
    # the shipped defaults, pinned so the boundaries below stay what they say
    settings.CONFIDENCE_PRUNE_THRESHOLD = 0.3
    settings.CONFIDENCE_PRUNE_MIN_SIGNALS = 8
    settings.CONFIDENCE_PRUNE_RECENT_DAYS = 30


def doubted(principal: Any, *, confidence: float = 0.2, negative: int = 8, positive: int = 0, **fields: Any) -> Memory:
    """A memory whose rolled-up signals (folded today, so no decay applies) left it at ``confidence``."""
    memory = record(principal, title=f"Disable the cache, variant {confidence} {negative} {positive}", **fields)
    MemorySignalAggregate.objects.create(
        memory=memory, organization_id=memory.organization_id, explicit_neg=negative, usage_pos=positive
    )
    Memory.objects.filter(pk=memory.pk).update(confidence=confidence)
    return Memory.objects.get(pk=memory.pk)


def live_signal(memory: Memory, *, positive: bool, days_ago: float, kind: str = "usage") -> None:
    signal = MemorySignal.objects.create(
        organization_id=memory.organization_id,
        memory=memory,
        project_id=memory.project_id,
        type=kind,
        positive=positive,
    )
    MemorySignal.objects.filter(pk=signal.pk).update(created_at=timezone.now() - timedelta(days=days_ago))


def state(memory: Memory) -> tuple[str, str]:
    memory.refresh_from_db()
    return memory.state, memory.archived_reason


def test_a_memory_below_the_threshold_after_enough_signals_is_archived_as_low_confidence(agent):
    memory = doubted(agent, confidence=0.2, negative=8)

    assert memories_prune_low_confidence() == {"examined": 1, "pruned": 1}

    assert state(memory) == (Memory.STATE_ARCHIVED, Memory.ARCHIVED_LOW_CONFIDENCE)
    assert memory.tier == "archived" and memory.archived_at is not None


def test_the_audit_row_says_why_with_the_figures(agent):
    memory = doubted(agent, confidence=0.2, negative=7, positive=2)

    memories_prune_low_confidence()

    event = AuditEvent.objects.get(verb="memory.archive", target_id=memory.id)
    assert event.organization_id == memory.organization_id and event.actor == "system"
    assert event.data["reason"] == "low_confidence"
    assert {
        k: event.data[k] for k in ("confidence", "threshold", "signals", "positive", "negative", "min_signals")
    } == {
        "confidence": 0.2,
        "threshold": 0.3,
        "signals": 9,
        "positive": 2,
        "negative": 7,
        "min_signals": 8,
    }
    assert "below the prune threshold 0.3 after 9 signals" in event.data["why"]


def test_a_memory_at_exactly_the_threshold_is_kept(agent):
    memory = doubted(agent, confidence=0.3, negative=20)
    assert memories_prune_low_confidence()["pruned"] == 0
    assert state(memory) == (Memory.STATE_ACTIVE, "")


def test_a_memory_one_signal_short_of_the_minimum_is_kept(agent):
    memory = doubted(agent, confidence=0.1, negative=7)
    assert memories_prune_low_confidence() == {"examined": 1, "pruned": 0}
    assert state(memory) == (Memory.STATE_ACTIVE, "")
    live_signal(memory, positive=False, days_ago=2, kind="explicit")  # the eighth
    assert memories_prune_low_confidence()["pruned"] == 1


def test_a_recent_positive_signal_of_any_kind_protects_a_memory(agent):
    used = doubted(agent, confidence=0.1, negative=12)
    live_signal(used, positive=True, days_ago=29)
    praised = doubted(agent, confidence=0.1, negative=13)
    live_signal(praised, positive=True, days_ago=1, kind="explicit")

    assert memories_prune_low_confidence() == {"examined": 2, "pruned": 0}
    assert state(used)[0] == state(praised)[0] == Memory.STATE_ACTIVE


def test_a_positive_signal_older_than_the_recent_window_does_not_protect(agent):
    memory = doubted(agent, confidence=0.1, negative=12)
    live_signal(memory, positive=True, days_ago=31)  # still in the event log, but not recent
    live_signal(memory, positive=False, days_ago=3)
    assert memories_prune_low_confidence()["pruned"] == 1


def test_a_positive_signal_that_may_be_recent_in_the_aggregate_protects_under_a_longer_window(agent, settings):
    settings.CONFIDENCE_PRUNE_RECENT_DAYS = 60
    memory = doubted(agent, confidence=0.1, negative=12, positive=1)  # folded today: its events were 30+ days old
    assert memories_prune_low_confidence()["pruned"] == 0
    MemorySignalAggregate.objects.filter(memory=memory).update(last_rollup=timezone.now() - timedelta(days=40))
    assert memories_prune_low_confidence()["pruned"] == 1  # its positive is at least 70 days old now


def test_active_memories_above_the_threshold_and_archived_ones_are_not_touched(agent):
    fine = doubted(agent, confidence=0.6, negative=30)
    stale = doubted(agent, confidence=0.1, negative=30)
    Memory.objects.filter(pk=stale.pk).update(state="archived", archived_reason="stale", tier="archived")

    assert memories_prune_low_confidence() == {"examined": 0, "pruned": 0}
    assert state(fine) == (Memory.STATE_ACTIVE, "") and state(stale) == (Memory.STATE_ARCHIVED, "stale")
    assert not AuditEvent.objects.filter(verb="memory.archive").exists()


def test_a_pruned_memory_is_restorable_and_stays_until_new_evidence_condemns_it(cast, agent):
    memory = doubted(agent, confidence=0.2, negative=10)
    memories_prune_low_confidence()

    restored = memory_restore(principal=agent, memory=memory)
    assert (restored.state, restored.archived_reason) == (Memory.STATE_ACTIVE, "")
    assert AuditEvent.objects.get(verb="memory.restore", target_id=memory.id).data == {"was": "low_confidence"}

    assert memories_prune_low_confidence()["pruned"] == 0  # the person's restore overrules the same evidence
    assert state(memory) == (Memory.STATE_ACTIVE, "")

    memory_feedback(principal=agent, memory=memory, helpful=False)  # new evidence, still bad
    Memory.objects.filter(pk=memory.pk).update(confidence=0.2)
    assert memories_prune_low_confidence()["pruned"] == 1
    assert state(memory) == (Memory.STATE_ARCHIVED, Memory.ARCHIVED_LOW_CONFIDENCE)


def test_pruning_keeps_each_organization_to_itself_and_covers_every_batch(cast, agent, make_token):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    mine = [doubted(agent, confidence=0.1, negative=9 + i) for i in range(3)]
    theirs = doubted(charlie, confidence=0.1, negative=9)

    assert memories_prune_low_confidence(batch=1) == {"examined": 4, "pruned": 4}

    for memory, org in [*((m, cast.org_a) for m in mine), (theirs, cast.org_b)]:
        event = AuditEvent.objects.get(verb="memory.archive", target_id=memory.id)
        assert event.organization_id == org.id == memory.organization_id
    assert AuditEvent.objects.filter(verb="memory.archive", organization=cast.org_a).count() == 3


def test_a_threshold_of_zero_turns_pruning_off(agent, settings):
    settings.CONFIDENCE_PRUNE_THRESHOLD = 0
    memory = doubted(agent, confidence=0.01, negative=50)
    assert memories_prune_low_confidence() == {"examined": 0, "pruned": 0}
    assert state(memory)[0] == Memory.STATE_ACTIVE


def test_the_daily_rollup_prunes_a_memory_its_feedback_condemned(agent):
    memory = record(agent)
    for _ in range(16):
        memory_feedback(principal=agent, memory=memory, helpful=False)
    memory.refresh_from_db()
    assert memory.confidence < 0.3

    result = signals_rollup_daily()

    assert result["pruned"] == 1
    assert state(memory) == (Memory.STATE_ARCHIVED, Memory.ARCHIVED_LOW_CONFIDENCE)
    assert AuditEvent.objects.get(verb="memory.archive", target_id=memory.id).data["signals"] == 16


def test_the_daily_rollup_spares_a_condemned_memory_that_search_returned_lately(agent):
    memory = record(agent)
    for _ in range(16):
        memory_feedback(principal=agent, memory=memory, helpful=False)
    live_signal(memory, positive=True, days_ago=3)

    assert signals_rollup_daily()["pruned"] == 0
    assert state(memory)[0] == Memory.STATE_ACTIVE


def test_the_rollup_command_reports_what_it_pruned(agent):
    from io import StringIO

    from django.core.management import call_command

    doubted(agent, negative=12)  # the recompute takes it to 0.27: 1.6 / (2 + 12 × 0.32)
    out = StringIO()
    call_command("rollup_signals", stdout=out)
    assert out.getvalue().strip().endswith("pruned 1")
