"""Bayesian confidence (docs/confidence.md), as pure math (no Django, no DB)."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memories.confidence.bayes import (
    DECAY_GRACE_DAYS,
    DECAY_PER_SILENT_DAY,
    INITIAL_DEFAULT,
    INITIAL_EXPLICIT,
    INITIAL_FAILURE,
    INITIAL_SUCCESS,
    SIGNAL_EVENT_RETENTION_DAYS,
    ConfidenceState,
    ProjectWeights,
    Signal,
    SignalCounts,
    SignalType,
    Weights,
    confidence_apply,
    confidence_compute,
    confidence_prior,
    confidence_prunable,
    evidence_kept,
    initial_confidence_for_outcome,
)

USAGE_POS = Signal(SignalType.USAGE, positive=True)
USAGE_NEG = Signal(SignalType.USAGE, positive=False)
OUTCOME_POS = Signal(SignalType.OUTCOME, positive=True)
OUTCOME_NEG = Signal(SignalType.OUTCOME, positive=False)
EXPLICIT_POS = Signal(SignalType.EXPLICIT, positive=True)
EXPLICIT_NEG = Signal(SignalType.EXPLICIT, positive=False)
STABILITY_POS = Signal(SignalType.STABILITY, positive=True)  # the session's code was kept for 7 days
STABILITY_NEG = Signal(SignalType.STABILITY, positive=False)  # it was reverted

DEFAULT_WEIGHTS = ProjectWeights().compute_weights()


# --- the worked example (docs/confidence.md#signals) ----------------------------------------


def test_the_worked_example_is_reproduced_step_by_step() -> None:
    # The example's weights (0.40 / 0.33 / 0.33) are illustrative, not computed.
    weights = Weights(explicit=0.40, usage=0.33, outcome=0.33)
    alpha, beta = confidence_prior(INITIAL_DEFAULT)
    assert (alpha, beta) == (1.0, 1.0)
    assert alpha / (alpha + beta) == pytest.approx(0.50, abs=0.005)

    day1 = confidence_apply(alpha, beta, USAGE_POS, weights)
    assert day1.alpha == pytest.approx(1.33, abs=0.005)  # the docs give two decimals
    assert day1.score == pytest.approx(0.57, abs=0.005)

    day2 = confidence_apply(day1.alpha, day1.beta, OUTCOME_POS, weights)
    assert day2.alpha == pytest.approx(1.66, abs=0.005)
    assert day2.score == pytest.approx(0.62, abs=0.005)

    day5 = confidence_apply(day2.alpha, day2.beta, EXPLICIT_POS, weights)
    assert day5.alpha == pytest.approx(2.06, abs=0.005)
    assert day5.score == pytest.approx(0.67, abs=0.005)
    assert day5.beta == 1.0


# --- project weights ------------------------------------------------------------------------


def test_new_project_weights_start_from_the_documented_priors() -> None:
    pw = ProjectWeights()
    assert (pw.explicit_alpha, pw.explicit_beta) == (7.0, 3.0)
    assert (pw.usage_alpha, pw.usage_beta) == (5.0, 5.0)
    assert (pw.outcome_alpha, pw.outcome_beta) == (5.0, 5.0)
    assert (pw.stability_alpha, pw.stability_beta) == (5.0, 5.0)  # the fourth type, prior 5:5


def test_initial_weights_are_the_prior_means_normalised_to_sum_one() -> None:
    # four types, stability the fourth: 0.7 + 0.5 + 0.5 + 0.5 = 2.2 (docs/confidence.md#learned-weights)
    weights = ProjectWeights().compute_weights()
    assert weights.explicit == pytest.approx(0.7 / 2.2)
    assert weights.usage == pytest.approx(0.5 / 2.2)
    assert weights.outcome == pytest.approx(0.5 / 2.2)
    assert weights.stability == pytest.approx(0.5 / 2.2)
    assert weights.explicit + weights.usage + weights.outcome + weights.stability == pytest.approx(1.0)


def test_weight_for_returns_the_weight_of_each_signal_type() -> None:
    weights = Weights(explicit=0.4, usage=0.3, outcome=0.2, stability=0.1)
    assert weights.weight_for(SignalType.EXPLICIT) == 0.4
    assert weights.weight_for(SignalType.USAGE) == 0.3
    assert weights.weight_for(SignalType.OUTCOME) == 0.2
    assert weights.weight_for(SignalType.STABILITY) == 0.1
    assert weights.weight_for("usage") == 0.3  # type: ignore[arg-type]  # str values from the DB
    assert weights.weight_for("stability") == 0.1  # type: ignore[arg-type]


def test_hand_written_weights_of_three_types_give_stability_no_weight() -> None:
    assert Weights(explicit=0.40, usage=0.33, outcome=0.33).weight_for(SignalType.STABILITY) == 0.0


def test_learning_raises_usage_alpha_when_usage_predicted_helpful_feedback() -> None:
    learned = ProjectWeights().learn_from_feedback(True, [USAGE_POS])
    assert (learned.usage_alpha, learned.usage_beta) == (6.0, 5.0)


def test_learning_raises_usage_beta_when_usage_did_not_predict_the_feedback() -> None:
    # Retrieved (positive usage) yet rated unhelpful: usage was wrong.
    assert ProjectWeights().learn_from_feedback(False, [USAGE_POS]).usage_beta == 6.0
    # Never retrieved yet rated helpful: usage was wrong too.
    assert ProjectWeights().learn_from_feedback(True, []).usage_beta == 6.0


def test_learning_credits_usage_when_no_usage_matched_unhelpful_feedback() -> None:
    learned = ProjectWeights().learn_from_feedback(False, [USAGE_NEG])
    assert (learned.usage_alpha, learned.usage_beta) == (6.0, 5.0)


def test_learning_raises_outcome_alpha_when_outcome_predicted_helpful_feedback() -> None:
    learned = ProjectWeights().learn_from_feedback(True, [OUTCOME_POS])
    assert (learned.outcome_alpha, learned.outcome_beta) == (6.0, 5.0)


def test_learning_raises_outcome_beta_when_outcome_did_not_predict_the_feedback() -> None:
    learned = ProjectWeights().learn_from_feedback(False, [OUTCOME_POS])
    assert (learned.outcome_alpha, learned.outcome_beta) == (5.0, 6.0)


def test_learning_judges_usage_and_outcome_independently() -> None:
    learned = ProjectWeights().learn_from_feedback(True, [USAGE_POS, OUTCOME_NEG])
    assert (learned.usage_alpha, learned.usage_beta) == (6.0, 5.0)
    assert (learned.outcome_alpha, learned.outcome_beta) == (5.0, 6.0)


def test_learning_raises_stability_alpha_when_kept_code_predicted_helpful_feedback() -> None:
    learned = ProjectWeights().learn_from_feedback(True, [STABILITY_POS])
    assert (learned.stability_alpha, learned.stability_beta) == (6.0, 5.0)


def test_learning_raises_stability_beta_when_kept_code_preceded_unhelpful_feedback() -> None:
    learned = ProjectWeights().learn_from_feedback(False, [STABILITY_POS])
    assert (learned.stability_alpha, learned.stability_beta) == (5.0, 6.0)


def test_learning_credits_stability_when_reverted_code_preceded_unhelpful_feedback() -> None:
    learned = ProjectWeights().learn_from_feedback(False, [STABILITY_NEG])
    assert (learned.stability_alpha, learned.stability_beta) == (6.0, 5.0)


def test_learning_judges_all_three_learned_types_independently() -> None:
    learned = ProjectWeights().learn_from_feedback(True, [USAGE_POS, OUTCOME_NEG, STABILITY_POS])
    assert (learned.usage_alpha, learned.usage_beta) == (6.0, 5.0)
    assert (learned.outcome_alpha, learned.outcome_beta) == (5.0, 6.0)
    assert (learned.stability_alpha, learned.stability_beta) == (6.0, 5.0)


def test_a_stability_record_that_keeps_predicting_feedback_outweighs_the_others() -> None:
    pw = ProjectWeights()
    for _ in range(20):
        pw = pw.learn_from_feedback(True, [STABILITY_POS])
    weights = pw.compute_weights()
    assert weights.stability > DEFAULT_WEIGHTS.stability
    assert weights.stability > weights.usage and weights.stability > weights.outcome
    assert weights.explicit + weights.usage + weights.outcome + weights.stability == pytest.approx(1.0)


def test_learning_never_changes_the_explicit_parameters() -> None:
    pw = ProjectWeights()
    for helpful in (True, False):
        learned = pw.learn_from_feedback(helpful, [EXPLICIT_POS, USAGE_POS, OUTCOME_NEG])
        assert (learned.explicit_alpha, learned.explicit_beta) == (7.0, 3.0)


def test_learning_returns_a_new_instance_and_leaves_the_original_alone() -> None:
    pw = ProjectWeights()
    learned = pw.learn_from_feedback(True, [USAGE_POS])
    assert learned is not pw
    assert pw == ProjectWeights()


def test_a_signal_type_that_keeps_predicting_feedback_gains_weight() -> None:
    pw = ProjectWeights()
    for _ in range(10):
        pw = pw.learn_from_feedback(True, [USAGE_POS])
    weights = pw.compute_weights()
    assert weights.usage > DEFAULT_WEIGHTS.usage
    assert weights.outcome < DEFAULT_WEIGHTS.outcome


# --- priors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("initial", [INITIAL_EXPLICIT, INITIAL_SUCCESS, INITIAL_FAILURE, 0.5])
def test_the_prior_encodes_the_initial_confidence_when_there_are_no_signals(
    initial: float,
) -> None:
    alpha, beta = confidence_prior(initial)
    state = confidence_compute(alpha, beta, SignalCounts(), [], DEFAULT_WEIGHTS)
    assert state.score == pytest.approx(initial)


def test_a_recorded_memory_starts_at_confidence_0_8() -> None:
    alpha, beta = confidence_prior(INITIAL_EXPLICIT)
    assert (alpha, beta) == pytest.approx((1.6, 0.4))
    assert confidence_compute(alpha, beta, SignalCounts(), [], DEFAULT_WEIGHTS).score == (pytest.approx(0.8))


def test_prior_strength_sets_the_total_pseudo_count() -> None:
    assert confidence_prior(0.7, strength=10.0) == pytest.approx((7.0, 3.0))


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_an_initial_confidence_outside_the_open_unit_interval_is_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="initial_confidence"):
        confidence_prior(bad)


@pytest.mark.parametrize("bad", [0.0, -1.0])
def test_a_non_positive_prior_strength_is_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="strength"):
        confidence_prior(0.5, strength=bad)


def test_the_initial_confidences_and_the_event_retention_are_the_documented_ones() -> None:
    assert INITIAL_EXPLICIT == 0.8
    assert INITIAL_SUCCESS == 0.7
    assert INITIAL_FAILURE == 0.6
    assert INITIAL_DEFAULT == 0.5
    assert SIGNAL_EVENT_RETENTION_DAYS == 30


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [("success", 0.7), ("failure", 0.6), ("mixed", 0.5), ("", 0.5)],
)
def test_initial_confidence_depends_on_the_session_outcome(outcome: str, expected: float) -> None:
    assert initial_confidence_for_outcome(outcome) == expected


# --- computing confidence -------------------------------------------------------------------


def test_negative_signals_lower_confidence() -> None:
    alpha, beta = confidence_prior(INITIAL_EXPLICIT)
    after = confidence_apply(alpha, beta, EXPLICIT_NEG, DEFAULT_WEIGHTS)
    assert after.score < INITIAL_EXPLICIT
    assert after.alpha == alpha
    assert after.beta == pytest.approx(beta + DEFAULT_WEIGHTS.explicit)


def test_positive_signals_raise_confidence() -> None:
    alpha, beta = confidence_prior(INITIAL_FAILURE)
    assert confidence_apply(alpha, beta, OUTCOME_POS, DEFAULT_WEIGHTS).score > INITIAL_FAILURE


def test_aggregate_plus_recent_equals_applying_the_same_signals_one_by_one() -> None:
    old = [EXPLICIT_POS, USAGE_POS, USAGE_POS, OUTCOME_NEG, USAGE_NEG]
    recent = [OUTCOME_POS, EXPLICIT_NEG, USAGE_POS]
    alpha, beta = confidence_prior(INITIAL_SUCCESS)

    computed = confidence_compute(alpha, beta, SignalCounts.from_signals(old), recent, DEFAULT_WEIGHTS)

    state = ConfidenceState(alpha=alpha, beta=beta, score=INITIAL_SUCCESS)
    for signal in old + recent:
        state = confidence_apply(state.alpha, state.beta, signal, DEFAULT_WEIGHTS)

    assert computed.alpha == pytest.approx(state.alpha)
    assert computed.beta == pytest.approx(state.beta)
    assert computed.score == pytest.approx(state.score)


def test_a_kept_change_raises_confidence_and_a_revert_lowers_it_by_the_stability_weight() -> None:
    alpha, beta = confidence_prior(INITIAL_EXPLICIT)
    kept = confidence_apply(alpha, beta, STABILITY_POS, DEFAULT_WEIGHTS)
    reverted = confidence_apply(alpha, beta, STABILITY_NEG, DEFAULT_WEIGHTS)
    assert kept.alpha == pytest.approx(alpha + 0.5 / 2.2) and kept.score > INITIAL_EXPLICIT
    assert reverted.beta == pytest.approx(beta + 0.5 / 2.2) and reverted.score < INITIAL_EXPLICIT


def test_rolled_up_stability_counts_weigh_like_recent_stability_signals() -> None:
    alpha, beta = confidence_prior(INITIAL_SUCCESS)
    history = [STABILITY_POS, STABILITY_POS, STABILITY_NEG, EXPLICIT_POS]
    rolled = confidence_compute(alpha, beta, SignalCounts.from_signals(history), [], DEFAULT_WEIGHTS)
    recent = confidence_compute(alpha, beta, SignalCounts(), history, DEFAULT_WEIGHTS)
    assert SignalCounts.from_signals(history) == SignalCounts(explicit_pos=1, stability_pos=2, stability_neg=1)
    assert (rolled.alpha, rolled.beta) == pytest.approx((recent.alpha, recent.beta))


def test_signal_counts_fold_in_signals_and_add_up() -> None:
    counts = SignalCounts().with_signal(USAGE_POS).with_signal(USAGE_POS).with_signal(OUTCOME_NEG)
    assert counts == SignalCounts(usage_pos=2, outcome_neg=1)
    assert counts + SignalCounts(explicit_neg=1, usage_pos=1) == SignalCounts(
        explicit_neg=1, usage_pos=3, outcome_neg=1
    )


def test_compute_and_apply_reject_a_non_positive_beta_distribution() -> None:
    with pytest.raises(ValueError, match="prior_alpha"):
        confidence_compute(0.0, 1.0, SignalCounts(), [], DEFAULT_WEIGHTS)
    with pytest.raises(ValueError, match="alpha and beta"):
        confidence_apply(1.0, 0.0, USAGE_POS, DEFAULT_WEIGHTS)


# --- properties -----------------------------------------------------------------------------

signals = st.builds(Signal, st.sampled_from(list(SignalType)), st.booleans())
initial_confidences = st.floats(min_value=0.01, max_value=0.99)
strengths = st.floats(min_value=0.5, max_value=50.0)
# Project weights after up to 50 rounds of learning, so weights stay realistic.
project_weights = st.builds(
    ProjectWeights,
    usage_alpha=st.integers(5, 55).map(float),
    usage_beta=st.integers(5, 55).map(float),
    outcome_alpha=st.integers(5, 55).map(float),
    outcome_beta=st.integers(5, 55).map(float),
    stability_alpha=st.integers(5, 55).map(float),
    stability_beta=st.integers(5, 55).map(float),
)


@given(initial_confidences, strengths, st.lists(signals, max_size=50), project_weights)
def test_confidence_always_stays_strictly_between_zero_and_one(
    initial: float, strength: float, history: list[Signal], pw: ProjectWeights
) -> None:
    alpha, beta = confidence_prior(initial, strength)
    state = confidence_compute(alpha, beta, SignalCounts(), history, pw.compute_weights())
    assert 0.0 < state.score < 1.0


@given(initial_confidences, strengths, st.lists(signals, max_size=50), project_weights, signals)
def test_a_positive_signal_never_lowers_confidence_and_a_negative_never_raises_it(
    initial: float, strength: float, history: list[Signal], pw: ProjectWeights, signal: Signal
) -> None:
    weights = pw.compute_weights()
    alpha, beta = confidence_prior(initial, strength)
    before = confidence_compute(alpha, beta, SignalCounts(), history, weights)
    after = confidence_apply(before.alpha, before.beta, signal, weights)
    if signal.positive:
        assert after.score >= before.score
    else:
        assert after.score <= before.score


# --- time decay (docs/confidence.md#time-decay): the Beta evidence shrinks toward the prior -----------

# the worked example after its last step: Beta(2.06, 1) over the Beta(1, 1) prior, confidence 0.67
EXAMPLE_EVIDENCE = SignalCounts(usage_pos=1, outcome_pos=1, explicit_pos=1)
EXAMPLE_WEIGHTS = Weights(explicit=0.40, usage=0.33, outcome=0.33)


def decayed(
    silent_days: int,
    prior: tuple[float, float] = (1.0, 1.0),
    counts: SignalCounts = EXAMPLE_EVIDENCE,
    weights: Weights = EXAMPLE_WEIGHTS,
) -> ConfidenceState:
    return confidence_compute(*prior, counts, [], weights, evidence_factor=evidence_kept(silent_days))


def test_the_worked_example_memory_loses_about_005_in_its_first_month_of_decay() -> None:
    fresh = decayed(0)
    assert fresh.score == pytest.approx(0.673, abs=5e-4)
    month = decayed(DECAY_GRACE_DAYS + 30)
    assert fresh.score - month.score == pytest.approx(0.05, abs=0.002)  # about -0.05 in the first month


def test_the_months_steps_shrink_as_the_memory_nears_its_prior() -> None:
    scores = [decayed(DECAY_GRACE_DAYS + 30 * month).score for month in range(7)]
    steps = [a - b for a, b in pairwise(scores)]
    assert all(later < earlier for earlier, later in pairwise(steps))
    assert scores[-1] > 0.5  # never reaches, let alone crosses, the prior


def test_silence_within_the_grace_period_keeps_every_bit_of_evidence() -> None:
    assert evidence_kept(0) == evidence_kept(DECAY_GRACE_DAYS) == 1.0
    assert evidence_kept(DECAY_GRACE_DAYS + 1) == pytest.approx(DECAY_PER_SILENT_DAY)
    assert decayed(DECAY_GRACE_DAYS).score == decayed(0).score


def test_decay_moves_a_low_memory_up_toward_its_prior_and_leaves_a_memory_at_its_prior_alone() -> None:
    doubted = SignalCounts(explicit_neg=10)
    weights = ProjectWeights().compute_weights()
    prior = confidence_prior(INITIAL_EXPLICIT)
    fresh, old = decayed(0, prior, doubted, weights), decayed(DECAY_GRACE_DAYS + 90, prior, doubted, weights)
    assert fresh.score < old.score < INITIAL_EXPLICIT
    untouched = decayed(400, prior, SignalCounts(), weights)
    assert untouched.score == pytest.approx(INITIAL_EXPLICIT)


def test_decay_never_lowers_alpha_or_beta_below_the_priors_pseudo_counts() -> None:
    state = confidence_compute(
        1.6, 0.4, SignalCounts(usage_pos=3, explicit_neg=2), [], DEFAULT_WEIGHTS, evidence_factor=0.0
    )
    assert (state.alpha, state.beta, state.score) == (1.6, 0.4, pytest.approx(0.8))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"silent_days": 40, "per_day": 0.0}, "per_day"),
        ({"silent_days": 40, "per_day": 1.5}, "per_day"),
        ({"silent_days": 40, "grace_days": -1}, "grace_days"),
    ],
)
def test_nonsense_decay_parameters_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evidence_kept(**kwargs)


def test_an_evidence_factor_outside_zero_to_one_is_rejected() -> None:
    with pytest.raises(ValueError, match="evidence_factor"):
        confidence_compute(1.0, 1.0, SignalCounts(), [], DEFAULT_WEIGHTS, evidence_factor=1.2)


@given(
    initial_confidences,
    strengths,
    st.lists(signals, max_size=50),
    project_weights,
    st.integers(0, 2000),
    st.integers(0, 2000),
)
def test_decay_is_monotone_in_silence_and_stays_between_the_evidence_and_the_prior(
    initial: float, strength: float, history: list[Signal], pw: ProjectWeights, days_a: int, days_b: int
) -> None:
    weights = pw.compute_weights()
    alpha, beta = confidence_prior(initial, strength)
    shorter, longer = sorted((days_a, days_b))
    full = confidence_compute(alpha, beta, SignalCounts(), history, weights).score
    first = confidence_compute(alpha, beta, SignalCounts(), history, weights, evidence_factor=evidence_kept(shorter))
    then = confidence_compute(alpha, beta, SignalCounts(), history, weights, evidence_factor=evidence_kept(longer))
    prior = alpha / (alpha + beta)
    low, high = sorted((full, prior))
    tolerance = 1e-12
    assert low - tolerance <= then.score <= high + tolerance
    # further from the evidence, closer to the prior: never overshoots it
    assert abs(then.score - prior) <= abs(first.score - prior) + tolerance
    assert then.alpha >= alpha and then.beta >= beta


# --- pruning (docs/confidence.md#pruning) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "signals", "recent_positive", "prunable"),
    [
        (0.29, 8, False, True),
        (0.30, 8, False, False),  # strictly below the threshold
        (0.29, 7, False, False),  # one signal short of the minimum
        (0.29, 8, True, False),  # something found it useful lately
        (0.05, 50, False, True),
    ],
)
def test_a_memory_is_prunable_only_below_the_threshold_after_enough_signals_and_no_recent_praise(
    confidence: float, signals: int, recent_positive: bool, prunable: bool
) -> None:
    assert (
        confidence_prunable(
            confidence=confidence, signals=signals, recent_positive=recent_positive, threshold=0.3, min_signals=8
        )
        is prunable
    )
