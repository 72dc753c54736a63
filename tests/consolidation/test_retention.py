"""Retention score, tiers and stale archival (docs/memory-model.md#tiers-and-retention) -- pure functions,
no database."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consolidation.retention import (
    DEFAULT_IMPORTANCE,
    KIND_IMPORTANCE,
    RetentionConfig,
    RetentionScore,
    compute_retention_score,
    importance_for_kind,
    is_stale,
    retention_scores,
    should_archive_stale,
    tier_for,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def score(
    *,
    created_days_ago: float = 0,
    used_days_ago: float | None = None,
    activation_count: int = 0,
    importance: float = 0.5,
    superseded: bool = False,
    config: RetentionConfig | None = None,
) -> RetentionScore:
    return compute_retention_score(
        created_at=days_ago(created_days_ago),
        last_used_at=None if used_days_ago is None else days_ago(used_days_ago),
        activation_count=activation_count,
        importance=importance,
        superseded=superseded,
        now=NOW,
        config=config or RetentionConfig(),
    )


class TestRecency:
    def test_a_memory_created_just_now_has_full_recency(self) -> None:
        assert score().recency == pytest.approx(1.0)

    def test_recency_halves_after_one_half_life(self) -> None:
        assert score(created_days_ago=30).recency == pytest.approx(0.5)

    def test_recency_quarters_after_two_half_lives(self) -> None:
        assert score(created_days_ago=60).recency == pytest.approx(0.25)

    def test_half_life_is_configurable(self) -> None:
        config = RetentionConfig(half_life_days=10)
        assert score(created_days_ago=10, config=config).recency == pytest.approx(0.5)

    def test_a_recent_use_resets_the_clock_of_an_old_memory(self) -> None:
        assert score(created_days_ago=90, used_days_ago=0).recency == pytest.approx(1.0)

    def test_the_younger_of_creation_and_last_use_counts(self) -> None:
        # A last_used_at older than created_at (bad data) must not age the memory further.
        assert score(created_days_ago=30, used_days_ago=60).recency == pytest.approx(0.5)

    def test_never_used_memories_age_from_creation(self) -> None:
        assert score(created_days_ago=30, used_days_ago=None).recency == pytest.approx(0.5)

    def test_timestamps_in_the_future_count_as_brand_new(self) -> None:
        assert score(created_days_ago=-2).recency == pytest.approx(1.0)


class TestActivation:
    def test_an_unused_memory_has_no_activation(self) -> None:
        assert score(activation_count=0).activation == 0.0

    def test_activation_follows_the_log_curve(self) -> None:
        assert score(activation_count=5).activation == pytest.approx(math.log1p(5) / math.log1p(20))

    def test_activation_saturates_at_twenty_retrievals(self) -> None:
        assert score(activation_count=20).activation == pytest.approx(1.0)
        assert score(activation_count=500).activation == 1.0

    def test_negative_activation_counts_are_rejected(self) -> None:
        with pytest.raises(ValueError, match="activation_count"):
            score(activation_count=-1)


class TestOverall:
    def test_overall_is_the_weighted_sum_of_the_factors(self) -> None:
        result = score(created_days_ago=30, activation_count=20, importance=0.9)
        assert result.overall == pytest.approx(0.5 * 0.5 + 0.3 * 1.0 + 0.2 * 0.9)
        assert result.importance == 0.9

    def test_a_superseded_memory_keeps_a_fifth_of_its_score(self) -> None:
        plain = score(activation_count=3, importance=0.85)
        superseded = score(activation_count=3, importance=0.85, superseded=True)
        assert superseded.overall == pytest.approx(plain.overall * 0.2)

    def test_overall_is_clamped_to_one_when_weights_sum_above_one(self) -> None:
        config = RetentionConfig(recency_weight=1, activation_weight=1, importance_weight=1)
        assert score(activation_count=20, importance=1.0, config=config).overall == 1.0

    def test_importance_outside_zero_to_one_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="importance"):
            score(importance=1.5)

    @given(
        created=st.floats(min_value=-5, max_value=5000),
        used=st.one_of(st.none(), st.floats(min_value=-5, max_value=5000)),
        activation=st.integers(min_value=0, max_value=10_000),
        importance=st.floats(min_value=0, max_value=1),
        superseded=st.booleans(),
        weights=st.tuples(*[st.floats(min_value=0, max_value=3)] * 3),
    )
    def test_every_score_stays_between_zero_and_one(
        self,
        created: float,
        used: float | None,
        activation: int,
        importance: float,
        superseded: bool,
        weights: tuple[float, float, float],
    ) -> None:
        config = RetentionConfig(recency_weight=weights[0], activation_weight=weights[1], importance_weight=weights[2])
        result = score(
            created_days_ago=created,
            used_days_ago=used,
            activation_count=activation,
            importance=importance,
            superseded=superseded,
            config=config,
        )
        assert 0.0 <= result.overall <= 1.0
        assert 0.0 <= result.recency <= 1.0
        assert 0.0 <= result.activation <= 1.0


class TestConfig:
    def test_defaults_are_the_documented_half_life_weights_and_thresholds(self) -> None:
        config = RetentionConfig()
        assert config.half_life_days == 30.0
        assert (config.hot_threshold, config.warm_threshold) == (0.6, 0.3)
        assert (config.recency_weight, config.activation_weight, config.importance_weight) == (
            0.5,
            0.3,
            0.2,
        )

    def test_a_non_positive_half_life_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="half_life_days"):
            RetentionConfig(half_life_days=0)

    def test_negative_weights_are_rejected(self) -> None:
        with pytest.raises(ValueError, match="activation_weight"):
            RetentionConfig(activation_weight=-0.1)

    def test_warm_threshold_above_hot_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="thresholds"):
            RetentionConfig(hot_threshold=0.3, warm_threshold=0.6)


class TestTiers:
    @pytest.mark.parametrize(
        ("value", "tier"),
        [
            (1.0, "hot"),
            (0.6, "hot"),
            (0.5999, "warm"),
            (0.3, "warm"),
            (0.2999, "cold"),
            (0.0, "cold"),
        ],
    )
    def test_thresholds_are_inclusive(self, value: float, tier: str) -> None:
        assert tier_for(value, archived=False) == tier

    def test_archived_wins_over_any_score(self) -> None:
        assert tier_for(0.95, archived=True) == "archived"

    def test_a_retention_score_object_is_accepted(self) -> None:
        assert tier_for(RetentionScore(0.7, 1.0, 0.0, 0.9), archived=False) == "hot"

    def test_thresholds_come_from_the_config(self) -> None:
        config = RetentionConfig(hot_threshold=0.9, warm_threshold=0.5)
        assert tier_for(0.6, archived=False, config=config) == "warm"

    def test_a_new_procedural_memory_starts_hot_and_cools_when_unused(self) -> None:
        importance = KIND_IMPORTANCE["procedural"]
        assert tier_for(score(importance=importance), archived=False) == "hot"
        assert tier_for(score(created_days_ago=30, importance=importance), archived=False) == "warm"
        assert tier_for(score(created_days_ago=90, importance=importance), archived=False) == "cold"


class TestKindImportance:
    def test_each_kind_has_its_importance(self) -> None:
        assert dict(KIND_IMPORTANCE) == {
            "procedural": 0.85,
            "semantic": 0.9,
            "episodic": 0.5,
            "working": 0.3,
        }

    def test_unknown_kinds_fall_back_to_one_half(self) -> None:
        assert importance_for_kind("mystery") == DEFAULT_IMPORTANCE == 0.5
        assert importance_for_kind("semantic") == 0.9

    def test_the_table_cannot_be_modified(self) -> None:
        with pytest.raises(TypeError):
            KIND_IMPORTANCE["working"] = 1.0  # type: ignore[index]


class TestStaleArchival:
    def test_a_low_salience_memory_unused_for_a_month_is_archived(self) -> None:
        assert should_archive_stale(0.05, days_ago(30), NOW, threshold=0.1) is True

    def test_a_recently_used_low_score_memory_is_kept(self) -> None:
        assert should_archive_stale(0.05, days_ago(29), NOW) is False

    def test_a_long_idle_memory_above_the_threshold_is_kept(self) -> None:
        assert should_archive_stale(0.2, days_ago(365), NOW) is False

    def test_retention_exactly_at_the_threshold_is_kept(self) -> None:
        assert should_archive_stale(0.1, days_ago(365), NOW) is False

    def test_idle_period_is_configurable(self) -> None:
        assert should_archive_stale(0.05, days_ago(8), NOW, max_idle_days=7) is True


class TestBatch:
    """The consolidation run scores a whole project at once: it must agree with the scalar formula."""

    @given(
        st.lists(
            st.tuples(
                st.floats(min_value=-1, max_value=2000),  # age in days (slightly negative: clock skew)
                st.one_of(st.none(), st.floats(min_value=-1, max_value=2000)),  # days since last use
                st.integers(min_value=0, max_value=500),
                st.floats(min_value=-0.5, max_value=1.5),  # importance, clamped by both
                st.booleans(),
            ),
            min_size=1,
            max_size=30,
        )
    )
    def test_batch_scores_and_tiers_equal_the_scalar_formula_for_every_memory(self, cases) -> None:
        batch = retention_scores(
            age_days=[age for age, *_ in cases],
            access_age_days=[age if used is None else used for age, used, *_ in cases],
            activation_counts=[count for *_, count, _, _ in cases],
            importances=[importance for *_, importance, _ in cases],
            superseded=[superseded for *_, superseded in cases],
        )
        for i, (age, used, count, importance, superseded) in enumerate(cases):
            expected = compute_retention_score(
                created_at=days_ago(age),
                last_used_at=None if used is None else days_ago(used),
                activation_count=count,
                importance=min(1.0, max(0.0, importance)),
                superseded=superseded,
                now=NOW,
            )
            assert batch.overall[i] == pytest.approx(expected.overall, abs=1e-9)
            assert batch.recency[i] == pytest.approx(expected.recency, abs=1e-9)
            assert batch.activation[i] == pytest.approx(expected.activation, abs=1e-9)
            if abs(expected.overall - 0.6) > 1e-9 and abs(expected.overall - 0.3) > 1e-9:
                assert batch.tiers[i] == tier_for(expected, archived=False)

    def test_a_negative_activation_count_is_refused_like_the_scalar_formula(self) -> None:
        with pytest.raises(ValueError):
            retention_scores(
                age_days=[1], access_age_days=[1], activation_counts=[-1], importances=[0.5], superseded=[False]
            )

    def test_idle_seconds_staleness_matches_the_datetime_rule_at_the_30_day_boundary(self) -> None:
        for idle in (timedelta(days=30) - timedelta(microseconds=1), timedelta(days=30), timedelta(days=31)):
            assert is_stale(0.05, idle_seconds=idle.total_seconds()) == should_archive_stale(0.05, NOW - idle, NOW)
