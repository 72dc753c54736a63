"""Time decay in the daily rollup (``memories.confidence.services.signals_decay``;
docs/confidence.md#time-decay): the Beta evidence of a memory without signals shrinks toward its prior —
stored, so that a later signal adds to what is left — bounded, monotone, once per UTC day, missed days
caught up."""

from __future__ import annotations

import dataclasses
import importlib
from datetime import UTC, datetime, time, timedelta
from itertools import count, pairwise
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memories.confidence import bayes as conf
from memories.confidence.services import memories_mark_used, memory_feedback, memory_outcome, memory_stability
from memories.models import Memory, MemorySignal, MemorySignalAggregate, ProjectSignalWeights
from memories.tasks import signals_rollup_daily
from tests.factories import memory_recorder

record = memory_recorder(
    title="Retry webhooks with backoff",
    description="When a webhook receiver is briefly down",
    content="Retry with exponential backoff and jitter, at most five times.",
)
DAY = timedelta(days=1)
PER_DAY = 0.984
_titles = count(1)
WEIGHTS = [f.name for f in dataclasses.fields(conf.ProjectWeights)]


@pytest.fixture(autouse=True)
def decay_settings(settings: Any) -> None:
    settings.CONFIDENCE_DECAY_GRACE_DAYS = 30
    settings.CONFIDENCE_DECAY_PER_DAY = PER_DAY
    settings.CONFIDENCE_PRUNE_THRESHOLD = 0  # these memories are about decay, not pruning


@pytest.fixture
def morning() -> datetime:
    """01:00 UTC today: the daily rollup's hour, with the rest of the UTC day after it."""
    return datetime.combine(timezone.now().astimezone(UTC).date(), time(1), tzinfo=UTC)


def silent(principal: Any, *, days: int, at: datetime, **counts: int) -> Memory:
    """A recorded memory (prior 0.8) whose last signal was ``days`` before ``at``, all of its evidence
    rolled up (by default 6 helpful and 10 uses) and none since."""
    memory = record(principal, title=f"Retry webhooks with backoff, case {next(_titles)}")
    last = at - timedelta(days=days)
    Memory.objects.filter(pk=memory.pk).update(last_signal_at=last)
    MemorySignalAggregate.objects.create(
        memory=memory,
        organization_id=memory.organization_id,
        last_rollup=last + timedelta(days=conf.SIGNAL_EVENT_RETENTION_DAYS),
        **(counts or {"explicit_pos": 6, "usage_pos": 10}),
    )
    memory.refresh_from_db()
    return memory


def confidence(memory: Memory) -> float:
    return Memory.objects.get(pk=memory.pk).confidence


def aggregate(memory: Memory) -> MemorySignalAggregate:
    return MemorySignalAggregate.objects.get(memory=memory)


def expected(memory: Memory, counts: conf.SignalCounts) -> float:
    """The confidence formula over ``counts`` with the memory's project's current weights (by hand)."""
    memory.refresh_from_db()
    row = ProjectSignalWeights.objects.filter(
        organization_id=memory.organization_id,
        project_id=memory.project_id,  # type: ignore[misc]  # None selects the org-wide row (IS NULL)
    ).first()
    learned = conf.ProjectWeights(**{name: getattr(row, name) for name in WEIGHTS}) if row else conf.ProjectWeights()
    return conf.confidence_compute(memory.prior_alpha, memory.prior_beta, counts, [], learned.compute_weights()).score


def scaled(share: float, **counts: float) -> conf.SignalCounts:
    return conf.SignalCounts(**{name: n * share for name, n in counts.items()})


def test_a_memory_silent_past_the_grace_period_drifts_toward_its_prior_in_the_daily_rollup(agent, morning):
    memory = silent(agent, days=90, at=morning)  # 60 days past the 30 days of grace
    full = expected(memory, scaled(1.0, explicit_pos=6, usage_pos=10))
    assert full > 0.9

    result = signals_rollup_daily(now=morning)

    assert result["decayed"] == 1
    agg = aggregate(memory)
    assert (agg.explicit_pos, agg.usage_pos) == (6, 10)  # the counts stay whole: decay is on the evidence
    assert agg.explicit_pos_kept == pytest.approx(6 * PER_DAY**60)
    assert agg.usage_pos_kept == pytest.approx(10 * PER_DAY**60)
    assert agg.explicit_neg_kept == 0 and agg.decayed_at == morning
    memory.refresh_from_db()
    assert memory.confidence == pytest.approx(expected(memory, scaled(PER_DAY**60, explicit_pos=6, usage_pos=10)))
    assert 0.8 < memory.confidence < full  # toward the prior 0.8, not past it
    assert memory.beta == pytest.approx(memory.prior_beta)  # no negative evidence: beta stays the prior's


def test_one_new_signal_after_three_silent_months_adds_to_the_decayed_evidence(agent, morning):
    memory = silent(agent, days=120, at=morning)  # three months past the grace
    signals_rollup_daily(now=morning)
    decayed = confidence(memory)
    kept = PER_DAY**90

    result = memory_feedback(principal=agent, memory=memory, helpful=True)

    signal_at = MemorySignal.objects.get(memory=memory).created_at
    assert Memory.objects.get(pk=memory.pk).last_signal_at == signal_at
    undecayed = expected(memory, conf.SignalCounts(explicit_pos=7, usage_pos=10))
    assert result.previous_confidence == pytest.approx(decayed)
    assert result.new_confidence == pytest.approx(expected(memory, conf.SignalCounts(6 * kept + 1, 0, 10 * kept)))
    assert decayed < result.new_confidence < undecayed - 0.05  # the old evidence does not come back

    # the rollup that folds the signal 30 days later adds it to the decayed counts at full weight, and only
    # the whole days past its own grace (none, or one when that day began after midnight UTC) decay
    later = signal_at + timedelta(days=30, minutes=1)
    signals_rollup_daily(now=later)

    owed = max(0, (later.date() - signal_at.astimezone(UTC).date()).days - 30)
    agg = aggregate(memory)
    assert not MemorySignal.objects.filter(memory=memory).exists() and agg.explicit_pos == 7
    assert agg.explicit_pos_kept == pytest.approx((6 * kept + 1) * PER_DAY**owed)
    assert confidence(memory) == pytest.approx(
        expected(memory, scaled(PER_DAY**owed, explicit_pos=6 * kept + 1, usage_pos=10 * kept))
    )


def test_decay_is_monotone_in_silence_and_never_crosses_the_prior(agent, morning):
    memory = silent(agent, days=0, at=morning)
    seen = []
    for days in (0, 15, 30, 31, 45, 90, 365, 3650):
        signals_rollup_daily(now=morning + days * DAY)
        memory.refresh_from_db()
        seen.append(memory.confidence)
        # the decay across skipped days comes to confidence.evidence_kept of the whole silence
        share = conf.evidence_kept(days, per_day=PER_DAY, grace_days=30)
        assert memory.confidence == pytest.approx(expected(memory, scaled(share, explicit_pos=6, usage_pos=10)))
        assert memory.alpha >= memory.prior_alpha and memory.beta >= memory.prior_beta
        assert memory.confidence >= 0.8
    assert seen[0] == seen[1] == seen[2] > seen[3]  # nothing in the grace, then a day's decay
    assert all(later < earlier for earlier, later in pairwise(seen[2:]))
    assert seen[-1] == pytest.approx(0.8, abs=1e-6)  # at the prior, never below it


def test_a_doubted_memory_decays_up_toward_its_prior_and_never_past_it(agent, morning):
    memory = silent(agent, days=0, at=morning, explicit_neg=8)
    signals_rollup_daily(now=morning)
    fresh = confidence(memory)
    signals_rollup_daily(now=morning + 120 * DAY)
    later = confidence(memory)
    signals_rollup_daily(now=morning + 3650 * DAY)
    assert fresh < later < confidence(memory) <= 0.8


def test_a_typical_memory_loses_about_005_in_its_first_month_past_the_grace(agent, morning):
    # the worked example of docs/confidence.md#signals: one usage, one outcome, one helpful signal over
    # the Beta(1, 1) prior
    memory = silent(agent, days=30, at=morning, usage_pos=1, outcome_pos=1, explicit_pos=1)
    Memory.objects.filter(pk=memory.pk).update(prior_alpha=1.0, prior_beta=1.0)
    signals_rollup_daily(now=morning)
    start = confidence(memory)
    signals_rollup_daily(now=morning + 30 * DAY)
    assert start - confidence(memory) == pytest.approx(0.05, abs=0.01)


def test_the_rollup_run_twice_in_a_day_decays_once(agent, morning):
    memory = silent(agent, days=50, at=morning)
    signals_rollup_daily(now=morning)
    first, kept = confidence(memory), aggregate(memory).usage_pos_kept
    assert kept == pytest.approx(10 * PER_DAY**20)

    assert signals_rollup_daily(now=morning + timedelta(hours=21))["decayed"] == 0  # 22:00, the same UTC day

    assert (confidence(memory), aggregate(memory).usage_pos_kept) == (first, kept)
    signals_rollup_daily(now=morning + DAY)
    assert aggregate(memory).usage_pos_kept == pytest.approx(kept * PER_DAY)  # the next day decays one day more
    assert confidence(memory) < first


def test_a_missed_week_is_caught_up_exactly(agent, morning):
    daily = silent(agent, days=40, at=morning)
    for day in range(8):
        signals_rollup_daily(now=morning + day * DAY)
    # a second memory just as silent whose decay starts only now: a week of rollups missed
    missed = silent(agent, days=40, at=morning)

    signals_rollup_daily(now=morning + 7 * DAY + timedelta(hours=3))

    share = conf.evidence_kept(47, per_day=PER_DAY, grace_days=30)  # 17 days past the grace
    assert aggregate(missed).usage_pos_kept == pytest.approx(10 * share, rel=1e-12)
    assert aggregate(daily).usage_pos_kept == pytest.approx(10 * share, rel=1e-12)
    assert confidence(missed) == pytest.approx(confidence(daily), rel=1e-12)


def test_a_memory_with_a_recent_signal_does_not_decay(agent, morning):
    memory = silent(agent, days=300, at=morning)  # rolled up long ago ...
    signal = MemorySignal.objects.create(
        organization_id=memory.organization_id, memory=memory, project_id=memory.project_id, type="outcome",
        positive=True, created_at=morning - 20 * DAY,
    )  # fmt: skip
    Memory.objects.filter(pk=memory.pk).update(last_signal_at=signal.created_at)  # ... but used 20 days ago
    within_grace = silent(agent, days=30, at=morning)
    past_grace = silent(agent, days=31, at=morning)

    signals_rollup_daily(now=morning)

    agg = aggregate(memory)
    assert (agg.usage_pos_kept, agg.decayed_at) == (None, None)
    assert confidence(memory) == pytest.approx(expected(memory, conf.SignalCounts(explicit_pos=6, usage_pos=10,
                                                                                   outcome_pos=1)))  # fmt: skip
    assert aggregate(within_grace).usage_pos_kept is None
    assert aggregate(past_grace).usage_pos_kept == pytest.approx(10 * PER_DAY)


def test_every_kind_of_signal_stamps_when_the_memory_last_had_one(agent):
    before = timezone.now()
    feedback, outcome, stability, used = (record(agent, title=f"Lesson {n}") for n in range(4))
    memory_feedback(principal=agent, memory=feedback, helpful=False)
    memory_outcome(principal=agent, memory=outcome, succeeded=True)
    memory_stability(principal=agent, memory=stability, kept=True, session_id="claude-7")
    memories_mark_used(principal=agent, memories=[used], project=None)

    for memory in (feedback, outcome, stability, used):
        stamped = Memory.objects.get(pk=memory.pk).last_signal_at
        assert stamped is not None and stamped >= before
        assert stamped == MemorySignal.objects.get(memory=memory).created_at


def test_a_memory_without_signals_keeps_its_initial_confidence(agent, morning):
    memory = record(agent)
    signals_rollup_daily(now=morning + 2000 * DAY)
    assert confidence(memory) == pytest.approx(0.8)


def test_an_aggregate_without_a_last_signal_time_counts_its_silence_from_its_last_rollup(agent, morning):
    memory = silent(agent, days=130, at=morning)  # rolled up 100 days ago: its signals are 130 days old or more
    Memory.objects.filter(pk=memory.pk).update(last_signal_at=None)  # written before the column existed

    signals_rollup_daily(now=morning)

    assert aggregate(memory).usage_pos_kept == pytest.approx(10 * PER_DAY**100)


def test_decay_turned_off_changes_nothing(agent, morning, settings):
    settings.CONFIDENCE_DECAY_PER_DAY = 1.0
    memory = silent(agent, days=400, at=morning)
    assert signals_rollup_daily(now=morning)["decayed"] == 0
    assert aggregate(memory).usage_pos_kept is None
    assert confidence(memory) == pytest.approx(expected(memory, conf.SignalCounts(explicit_pos=6, usage_pos=10)))


def test_the_migration_backfills_the_last_signal_from_the_log_or_the_rollup(agent, morning):
    migration = importlib.import_module("memories.migrations.0014_memory_promotion_provenance")
    both = silent(agent, days=200, at=morning)
    MemorySignal.objects.create(
        organization_id=both.organization_id, memory=both, type="usage", positive=True, created_at=morning - 3 * DAY
    )
    rolled = silent(agent, days=200, at=morning)
    untouched = record(agent, title="Never signalled")
    Memory.objects.filter(pk__in=[both.pk, rolled.pk]).update(last_signal_at=None)

    with connection.cursor() as cursor:
        cursor.execute(migration.LAST_SIGNAL_BACKFILL)

    assert Memory.objects.get(pk=both.pk).last_signal_at == morning - 3 * DAY
    assert Memory.objects.get(pk=rolled.pk).last_signal_at == morning - 200 * DAY
    assert Memory.objects.get(pk=untouched.pk).last_signal_at is None
