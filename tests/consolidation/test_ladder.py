"""The promotion ladder's criteria (consolidation.ladder; docs/consolidation.md#the-promotion-ladder),
without a database: each criterion at its exact boundary, strict where the documented criterion is
("above", "within") and inclusive where it is ("at least")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from consolidation.ladder import (
    Candidate,
    LadderCriteria,
    Tally,
    event_patterns,
    event_success,
    fact_patterns,
    fact_promotion_reason,
    facts_in_place,
    procedural_promotion_reason,
    success_tally,
)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
DEFAULTS = LadderCriteria()
HOUR, DAY, SECOND = timedelta(hours=1), timedelta(days=1), timedelta(seconds=1)


def fact(mid: str, *, age: timedelta = 3 * HOUR, confidence: float = 0.5) -> Candidate:
    return Candidate(mid, NOW - age, confidence)


def event(mid: str, outcome: str = "success", *, age: timedelta = DAY, pos: int = 0, neg: int = 0) -> Candidate:
    return Candidate(mid, NOW - age, 0.7, outcome, pos, neg)


def triangle(*ids: str, similarity: float = 0.9) -> list[tuple[str, str, float]]:
    """Every pair of ``ids`` joined at ``similarity``."""
    return [(a, b, similarity) for i, a in enumerate(ids) for b in ids[i + 1 :]]


def test_the_defaults_are_the_documented_criteria():
    assert (DEFAULTS.episodic_min_confidence, DEFAULTS.episodic_min_age) == (0.8, 2 * HOUR)
    assert (DEFAULTS.pattern_min_facts, DEFAULTS.pattern_window) == (3, 7 * DAY)
    assert (DEFAULTS.procedural_min_observations, DEFAULTS.procedural_window, DEFAULTS.procedural_min_success) == (
        3,
        30 * DAY,
        0.6,
    )
    assert DEFAULTS.similarity == 0.85


# --- semantic → episodic, one fact ----------------------------------------------------------------------


def test_a_fact_at_exactly_confidence_0_8_stays_semantic_and_one_just_above_is_promoted():
    assert fact_promotion_reason(fact("a", confidence=0.8), NOW, DEFAULTS) is None
    reason = fact_promotion_reason(fact("b", confidence=0.8000001), NOW, DEFAULTS)
    assert reason == "confidence 0.8000001 > 0.8 and age 3 h > 2 h"


def test_a_confident_fact_exactly_2_hours_old_waits_and_one_a_second_older_is_promoted():
    assert fact_promotion_reason(fact("a", confidence=0.95, age=2 * HOUR), NOW, DEFAULTS) is None
    reason = fact_promotion_reason(fact("b", confidence=0.95, age=2 * HOUR + SECOND), NOW, DEFAULTS)
    assert reason == "confidence 0.95 > 0.8 and age 7201 s > 2 h"


def test_facts_in_place_keeps_only_those_meeting_both_criteria_in_order():
    facts = [
        fact("old-sure", confidence=0.9, age=5 * DAY),
        fact("new-sure", confidence=0.9, age=HOUR),
        fact("old-unsure", confidence=0.7, age=5 * DAY),
        fact("also", confidence=0.99, age=4 * HOUR),
    ]

    promoted = facts_in_place(facts, NOW, DEFAULTS)

    assert [p.id for p in promoted] == ["old-sure", "also"]
    assert promoted[0].reason == "confidence 0.9 > 0.8 and age 5 days > 2 h"


# --- semantic → episodic, a pattern ------------------------------------------------------------------------


def test_three_similar_facts_within_7_days_are_a_pattern():
    facts = [fact("a", age=6 * DAY), fact("b", age=DAY), fact("c", age=HOUR)]

    (pattern,) = fact_patterns(facts, triangle("a", "b", "c"), NOW, DEFAULTS)

    assert pattern.member_ids == ("a", "b", "c")  # oldest first
    assert pattern.average_similarity == pytest.approx(0.9)
    assert pattern.reason == "3 similar semantic facts within 7 days (average similarity 0.900, threshold 0.85)"


def test_a_fact_8_days_old_or_exactly_7_days_old_does_not_count_toward_a_pattern():
    edges = triangle("a", "b", "c")

    assert fact_patterns([fact("a", age=8 * DAY), fact("b"), fact("c")], edges, NOW, DEFAULTS) == []
    assert fact_patterns([fact("a", age=7 * DAY), fact("b"), fact("c")], edges, NOW, DEFAULTS) == []
    assert len(fact_patterns([fact("a", age=7 * DAY - SECOND), fact("b"), fact("c")], edges, NOW, DEFAULTS)) == 1


def test_two_similar_facts_are_no_pattern_and_neither_are_three_below_the_similarity():
    assert fact_patterns([fact("a"), fact("b")], triangle("a", "b"), NOW, DEFAULTS) == []
    facts = [fact("a"), fact("b"), fact("c")]
    assert fact_patterns(facts, triangle("a", "b", "c", similarity=0.84), NOW, DEFAULTS) == []
    assert len(fact_patterns(facts, triangle("a", "b", "c", similarity=0.85), NOW, DEFAULTS)) == 1


def test_an_edge_to_a_memory_that_is_no_candidate_is_ignored():
    edges = [*triangle("a", "b"), ("a", "elsewhere", 0.99), ("b", "elsewhere", 0.99)]

    assert fact_patterns([fact("a"), fact("b")], edges, NOW, DEFAULTS) == []


# --- episodic → procedural --------------------------------------------------------------------------------


def test_an_events_success_is_the_mean_of_its_recorded_outcome_and_its_outcome_signals():
    assert event_success(event("a", "success")) == 1.0
    assert event_success(event("b", "mixed")) == 0.5
    assert event_success(event("c", "failure")) == 0.0
    assert event_success(event("d", "failure", pos=3)) == 0.75
    assert event_success(event("e", "success", neg=1)) == 0.5


def test_the_success_tally_rounds_half_away_from_zero_as_postgresql_does():
    assert success_tally([1.0, 1.0, 0.0]) == Tally(3, 2, 1, pytest.approx(2 / 3))
    assert success_tally([1.0, 0.0, 1.0, 0.0]) == Tally(4, 2, 2, 0.5)
    # 4 × 0.625 = 2.5 successes and 1.5 failures: ROUND gives 3 and 2 (Python's round would give 2 and 2)
    assert success_tally([1.0, 1.0, 0.5, 0.0]) == Tally(4, 3, 2, 0.625)
    assert success_tally([]) == Tally(0, 0, 0, 0.0)


def test_an_average_success_of_exactly_0_6_is_not_enough_and_just_above_is():
    assert procedural_promotion_reason(Tally(5, 3, 2, 0.6), DEFAULTS) is None
    reason = procedural_promotion_reason(Tally(5, 3, 2, 0.6000001), DEFAULTS)
    assert reason == "observed 5 times within 30 days: 3 successes > 2 failures, average success 0.6000001 > 0.6"


def test_as_many_successes_as_failures_is_not_enough_whatever_the_average():
    assert procedural_promotion_reason(Tally(4, 2, 2, 0.7), DEFAULTS) is None
    assert procedural_promotion_reason(Tally(4, 3, 1, 0.7), DEFAULTS) is not None


def test_two_observations_are_not_enough_and_three_are():
    assert procedural_promotion_reason(Tally(2, 2, 0, 1.0), DEFAULTS) is None
    assert procedural_promotion_reason(Tally(3, 3, 0, 1.0), DEFAULTS) is not None


def test_three_similar_successful_events_within_30_days_become_a_procedure():
    events = [event("a", age=29 * DAY), event("b", "failure", age=3 * DAY), event("c", pos=1)]

    (pattern,) = event_patterns(events, triangle("a", "b", "c"), NOW, DEFAULTS)

    assert pattern.member_ids == ("a", "b", "c")
    assert (pattern.successes, pattern.failures, pattern.average_success) == (2, 1, pytest.approx(2 / 3))
    assert pattern.reason == ("observed 3 times within 30 days: 2 successes > 1 failures, average success 0.667 > 0.6")


def test_an_event_exactly_30_days_old_is_outside_the_window():
    edges = triangle("a", "b", "c")

    assert event_patterns([event("a", age=30 * DAY), event("b"), event("c")], edges, NOW, DEFAULTS) == []
    assert len(event_patterns([event("a", age=30 * DAY - SECOND), event("b"), event("c")], edges, NOW, DEFAULTS)) == 1


def test_recurring_events_that_mostly_failed_are_no_procedure():
    events = [event("a"), event("b", "failure"), event("c", "mixed")]

    assert event_patterns(events, triangle("a", "b", "c"), NOW, DEFAULTS) == []


def test_other_criteria_come_from_the_settings_not_the_defaults():
    strict = LadderCriteria(procedural_min_observations=4, procedural_min_success=0.9, similarity=0.95)
    events = [event("a"), event("b"), event("c"), event("d")]

    assert event_patterns(events, triangle("a", "b", "c", "d", similarity=0.96), NOW, strict) != []
    assert event_patterns(events[:3], triangle("a", "b", "c", similarity=0.96), NOW, strict) == []
    assert event_patterns(events, triangle("a", "b", "c", "d", similarity=0.9), NOW, strict) == []
