"""The ranking formula and what it stands on (docs/search.md): BM25, the fusion of the two legs into one
relevance, and the score built on it (no Django, no DB)."""

from __future__ import annotations

import math

import pytest

from memories.search.ranking import (
    CONSOLIDATED_BOOST,
    SCOPE_WEIGHTS,
    LegScores,
    ScoreBreakdown,
    bm25_idf,
    code_changed_apply,
    estimate_tokens,
    leg_ranks,
    recency_boost,
    relevance_fuse,
    score_memory,
)


def _score(**overrides: object) -> ScoreBreakdown:
    args: dict[str, object] = {
        "legs": LegScores(similarity=0.7, lexical=3.0, vector_rank=1, lexical_rank=2),
        "relevance": 0.9,
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


def test_recency_boost_follows_the_documented_formula_inside_the_year() -> None:
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
    result = _score(relevance=0.9, confidence=0.8, days_since_used=0.0, scope="team")
    assert result.score == pytest.approx(0.9 * 0.8 * 1.1 * 0.9)


def test_score_of_an_old_org_memory_uses_no_boost_and_org_weight() -> None:
    result = _score(relevance=0.5, confidence=0.6, days_since_used=400, scope="org")
    assert result.score == pytest.approx(0.5 * 0.6 * 1.0 * 0.8)


def test_the_breakdown_carries_every_factor() -> None:
    result = _score(relevance=0.7, confidence=0.6, days_since_used=365, scope="org")
    assert result.as_dict() == {
        "relevance": 0.7,
        "similarity": 0.7,
        "lexical": 3.0,
        "vector_rank": 1,
        "lexical_rank": 2,
        "confidence": 0.6,
        "recency_boost": pytest.approx(1.0),
        "scope": "org",
        "scope_weight": 0.8,
        "consolidated_boost": 1.0,
        "score": pytest.approx(0.7 * 0.6 * 0.8),
        "fused": 0.7,  # no time cue: the relevance is the legs' fusion
        "time_expression": 0.0,
        "time_period": 0.0,
        "own_relevance": None,  # set by the neighbour stage only (memories.search.neighbours)
        "neighbour": None,
        "neighbour_relevance": 0.0,
        "path_boost": 1.0,  # set by search when it names paths (memories.code.paths)
        "code_changed_factor": 1.0,  # nothing it is anchored to changed (code_changed_apply)
    }


def test_a_memory_whose_code_changed_scores_the_factor_times_less_and_the_breakdown_says_so() -> None:
    plain = _score(relevance=0.7, confidence=0.6, days_since_used=0.0, scope="project")
    flagged = code_changed_apply(plain, 0.7)
    assert flagged.code_changed_factor == 0.7
    assert flagged.score == pytest.approx(plain.score * 0.7)
    assert flagged.relevance == plain.relevance and flagged.confidence == plain.confidence
    assert code_changed_apply(flagged, 0.7).score == pytest.approx(plain.score * 0.7)  # applied once, not twice
    with pytest.raises(ValueError):
        code_changed_apply(plain, 0.0)


def test_scope_weights_are_the_documented_ones_and_prefer_nearer_scopes() -> None:
    assert SCOPE_WEIGHTS == {"project": 1.0, "team": 0.9, "org": 0.8}
    project, team, org = (_score(scope=s).score for s in ("project", "team", "org"))
    assert project > team > org


def test_a_consolidated_memory_scores_exactly_1_2_times_higher() -> None:
    plain = _score(consolidated=False)
    consolidated = _score(consolidated=True)
    assert CONSOLIDATED_BOOST == 1.2
    assert consolidated.consolidated_boost == 1.2
    assert consolidated.score == pytest.approx(plain.score * 1.2)


def test_negative_relevance_and_similarity_are_clamped_to_zero() -> None:
    result = _score(relevance=-0.3, legs=LegScores(similarity=-0.2, lexical=0.0))
    assert (result.relevance, result.similarity) == (0.0, 0.0)
    assert result.score == 0.0


def test_relevance_above_one_is_clamped_to_one() -> None:
    assert _score(relevance=1.7).relevance == 1.0
    assert _score(relevance=1.7).score == pytest.approx(_score(relevance=1.0).score)


def test_an_unknown_scope_is_rejected_with_the_valid_choices() -> None:
    with pytest.raises(ValueError, match=r"unknown scope 'global'.*project, team, org"):
        _score(scope="global")


def test_nan_relevance_is_rejected_rather_than_clamped() -> None:
    with pytest.raises(ValueError, match="relevance"):
        _score(relevance=float("nan"))


# --- BM25 and fusion ------------------------------------------------------------------------


def test_a_rare_term_weighs_more_than_a_common_one_and_none_weighs_less_than_nothing() -> None:
    assert bm25_idf(1, 1000) > bm25_idf(100, 1000) > bm25_idf(1000, 1000) > 0
    assert bm25_idf(1, 1000) == pytest.approx(math.log(1 + 999.5 / 1.5))


def test_idf_counts_never_below_their_own_document_frequency() -> None:
    # capped counts: a term counted up to the cap in a collection counted up to a smaller cap
    assert bm25_idf(500, 100) == pytest.approx(bm25_idf(500, 500))


def test_leg_ranks_rank_each_leg_apart_and_leave_out_what_a_leg_did_not_score() -> None:
    ranks = leg_ranks([0.2, None, 0.9, 0.5], [0.0, 4.0, 1.0, 2.5])
    assert ranks == [(3, None), (None, 1), (1, 3), (2, 2)]


def test_convex_fusion_weighs_the_normalised_scores_of_both_legs() -> None:
    legs = [LegScores(0.9, 0.0), LegScores(0.5, 8.0), LegScores(0.7, 4.0)]
    fused = relevance_fuse(legs, lexical_weight=0.6)
    # vector min-max: 1, 0, 0.5; lexical / max: 0, 1, 0.5
    assert fused == pytest.approx([0.4 * 1.0, 0.6 * 1.0, 0.6 * 0.5 + 0.4 * 0.5])


def test_a_memory_strong_in_both_legs_beats_one_strong_in_only_one() -> None:
    legs = [LegScores(0.95, 0.0), LegScores(0.2, 9.0), LegScores(0.85, 7.0)]
    fused = relevance_fuse(legs, lexical_weight=0.5)
    assert fused.index(max(fused)) == 2


def test_fusion_with_one_candidate_or_no_lexical_match_stays_in_range() -> None:
    assert relevance_fuse([LegScores(0.4, 0.0)], lexical_weight=0.5) == [0.5]
    assert relevance_fuse([LegScores(None, 2.0)], lexical_weight=0.5) == [0.5]
    assert relevance_fuse([], lexical_weight=0.5) == []


def test_reciprocal_rank_fusion_gives_one_to_the_first_of_both_legs() -> None:
    legs = [LegScores(0.9, 5.0, vector_rank=1, lexical_rank=1), LegScores(0.3, 0.0, vector_rank=2)]
    fused = relevance_fuse(legs, lexical_weight=0.5, fusion="rrf")
    assert fused[0] == pytest.approx(1.0)
    assert fused[1] == pytest.approx((1 / 62) / (2 / 61))


def test_an_unknown_fusion_or_a_weight_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="fusion"):
        relevance_fuse([], lexical_weight=0.5, fusion="max")
    with pytest.raises(ValueError, match="lexical_weight"):
        relevance_fuse([], lexical_weight=1.5)


# --- tokens ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100), ("x" * 401, 101)],
)
def test_estimate_tokens_is_a_quarter_of_the_characters_rounded_up(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens
