"""Seed 001's ranking formula with DESIGN §7's additions (no Django, no DB)."""

from __future__ import annotations

import pytest

from memories.ranking import (
    CONSOLIDATED_BOOST,
    SCOPE_WEIGHTS,
    ScoreBreakdown,
    estimate_tokens,
    recency_boost,
    score_memory,
)


def _score(**overrides: object) -> ScoreBreakdown:
    args: dict[str, object] = {
        "similarity": 0.9,
        "confidence": 0.8,
        "days_since_used": 0.0,
        "scope": "project",
        "consolidated": False,
    }
    args.update(overrides)
    return score_memory(**args)  # type: ignore[arg-type]


# --- recency boost --------------------------------------------------------------------------


def test_a_memory_used_today_gets_the_full_recency_boost() -> None:
    assert recency_boost(0) == pytest.approx(1.1)


def test_a_memory_unused_for_a_year_gets_no_recency_boost() -> None:
    assert recency_boost(365) == pytest.approx(1.0)


def test_very_old_memories_are_clamped_to_no_boost_instead_of_going_negative() -> None:
    assert recency_boost(10_000) == 1.0


def test_recency_boost_follows_the_seed_formula_inside_the_year() -> None:
    assert recency_boost(182.5) == pytest.approx(1.05)
    assert recency_boost(73) == pytest.approx(1.0 + 0.1 * (1 - 73 / 365))


def test_negative_days_from_clock_skew_are_treated_as_today() -> None:
    assert recency_boost(-5) == pytest.approx(1.1)


def test_recency_boost_never_increases_as_a_memory_ages() -> None:
    boosts = [recency_boost(d) for d in range(0, 1000, 7)]
    assert boosts == sorted(boosts, reverse=True)
    assert all(1.0 <= b <= 1.1 + 1e-12 for b in boosts)


# --- score ----------------------------------------------------------------------------------


def test_score_is_the_product_of_every_factor() -> None:
    result = _score(similarity=0.9, confidence=0.8, days_since_used=0.0, scope="team")
    assert result.score == pytest.approx(0.9 * 0.8 * 1.1 * 0.9)


def test_score_of_an_old_org_memory_uses_no_boost_and_org_weight() -> None:
    result = _score(similarity=0.5, confidence=0.6, days_since_used=400, scope="org")
    assert result.score == pytest.approx(0.5 * 0.6 * 1.0 * 0.8)


def test_the_breakdown_carries_every_factor() -> None:
    result = _score(similarity=0.7, confidence=0.6, days_since_used=365, scope="org")
    assert result.as_dict() == {
        "similarity": 0.7,
        "confidence": 0.6,
        "recency_boost": pytest.approx(1.0),
        "scope": "org",
        "scope_weight": 0.8,
        "consolidated_boost": 1.0,
        "score": pytest.approx(0.7 * 0.6 * 0.8),
    }


def test_scope_weights_match_the_seed_and_prefer_nearer_scopes() -> None:
    assert SCOPE_WEIGHTS == {"project": 1.0, "team": 0.9, "org": 0.8}
    project, team, org = (_score(scope=s).score for s in ("project", "team", "org"))
    assert project > team > org


def test_a_consolidated_memory_scores_exactly_1_2_times_higher() -> None:
    plain = _score(consolidated=False)
    consolidated = _score(consolidated=True)
    assert CONSOLIDATED_BOOST == 1.2
    assert consolidated.consolidated_boost == 1.2
    assert consolidated.score == pytest.approx(plain.score * 1.2)


def test_negative_similarity_is_clamped_to_zero() -> None:
    result = _score(similarity=-0.3)
    assert result.similarity == 0.0
    assert result.score == 0.0


def test_similarity_above_one_is_clamped_to_one() -> None:
    assert _score(similarity=1.7).similarity == 1.0
    assert _score(similarity=1.7).score == pytest.approx(_score(similarity=1.0).score)


def test_an_unknown_scope_is_rejected_with_the_valid_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown scope 'global'.*project, team, org"):
        _score(scope="global")


def test_nan_similarity_is_rejected_rather_than_clamped() -> None:
    with pytest.raises(ValueError, match="similarity"):
        _score(similarity=float("nan"))


# --- tokens ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100), ("x" * 401, 101)],
)
def test_estimate_tokens_is_a_quarter_of_the_characters_rounded_up(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens
