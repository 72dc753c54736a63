"""Institutional promotion's criteria (consolidation/promotion/rules.py; docs/consolidation.md#institutional-promotion),
without a database: every condition at its boundary, and the weighted confidence with the consensus
bonus (docs/confidence.md#consolidated-memories)."""

from __future__ import annotations

import numpy as np
import pytest

from consolidation.promotion.rules import (
    Candidate,
    PromotionCriteria,
    promotion_centroid,
    promotion_confidence,
    promotion_groups,
    promotion_known,
    promotion_qualifies,
    promotion_representative,
    similar_pairs,
    source_set_key,
)
from tests.consolidation.vectors import cosine, spoke

CRITERIA = PromotionCriteria(similarity=0.8, min_places=2, min_confidence=0.8)


def twin(place: str, axis: int, *, similarity: float = 0.9, confidence: float = 0.9, usage: int = 0) -> Candidate:
    """A memory of ``place`` on hub 0: any two twins built with one ``similarity`` have exactly that cosine."""
    return Candidate(
        id=f"mem_{place}_{axis}",
        place=place,
        confidence=confidence,
        usage_count=usage,
        vector=spoke(0, axis, similarity),
    )


# --- the three conditions, at their boundaries -----------------------------------------------------------


@pytest.mark.parametrize(("places", "expected"), [(["a"], False), (["a", "a"], False), (["a", "b"], True)])
def test_a_group_needs_at_least_n_distinct_places(places, expected):
    assert (
        promotion_qualifies(places=places, confidences=[0.9] * len(places), average_similarity=0.9, criteria=CRITERIA)
        is expected
    )


def test_n_is_a_setting_three_places_are_needed_when_n_is_three():
    three = PromotionCriteria(similarity=0.8, min_places=3)
    assert not promotion_qualifies(places=["a", "b"], confidences=[0.9, 0.9], average_similarity=0.9, criteria=three)
    assert promotion_qualifies(places=["a", "b", "c"], confidences=[0.9] * 3, average_similarity=0.9, criteria=three)


@pytest.mark.parametrize(("lowest", "expected"), [(0.8, True), (0.7999, False)])
def test_every_member_needs_the_minimum_confidence_inclusive(lowest, expected):
    qualifies = promotion_qualifies(
        places=["a", "b"], confidences=[0.95, lowest], average_similarity=0.9, criteria=CRITERIA
    )
    assert qualifies is expected


@pytest.mark.parametrize(("similarity", "expected"), [(0.8, True), (0.7999, False)])
def test_the_members_need_the_similarity_threshold_inclusive(similarity, expected):
    qualifies = promotion_qualifies(
        places=["a", "b"], confidences=[0.9, 0.9], average_similarity=similarity, criteria=CRITERIA
    )
    assert qualifies is expected


def test_criteria_refuse_a_single_place_or_an_impossible_threshold():
    with pytest.raises(ValueError, match="min_places"):
        PromotionCriteria(similarity=0.8, min_places=1)
    with pytest.raises(ValueError, match="similarity"):
        PromotionCriteria(similarity=0.0)
    with pytest.raises(ValueError, match="min_confidence"):
        PromotionCriteria(similarity=0.8, min_confidence=1.5)


# --- grouping ------------------------------------------------------------------------------------------------


def test_twins_in_two_projects_form_one_group_naming_both_places():
    (group,) = promotion_groups([twin("api", 1), twin("web", 2)], CRITERIA)
    assert group.member_ids == ("mem_api_1", "mem_web_2")
    assert group.places == ("api", "web")
    assert group.average_similarity == pytest.approx(0.9, abs=1e-6)


def test_twins_in_one_project_only_are_no_group():
    assert promotion_groups([twin("api", 1), twin("api", 2)], CRITERIA) == []


def test_n_minus_one_places_are_not_enough_and_n_are():
    three = PromotionCriteria(similarity=0.8, min_places=3)
    assert promotion_groups([twin("api", 1), twin("web", 2)], three) == []
    (group,) = promotion_groups([twin("api", 1), twin("web", 2), twin("cli", 3)], three)
    assert group.places == ("api", "cli", "web")


def test_a_pair_exactly_at_the_threshold_groups_and_one_just_below_does_not():
    assert len(promotion_groups([twin("api", 1, similarity=0.8), twin("web", 2, similarity=0.8)], CRITERIA)) == 1
    assert promotion_groups([twin("api", 1, similarity=0.79), twin("web", 2, similarity=0.79)], CRITERIA) == []


def test_vectors_stored_as_float32_still_sit_on_the_threshold():
    """pgvector keeps float32 components: the cosine of the stored spokes is off by ~1e-8."""
    stored = [
        Candidate(f"m{n}", place, 0.9, 0, np.asarray(spoke(0, n, 0.58), dtype=np.float32))
        for n, place in ((1, "api"), (2, "web"))
    ]
    assert len(promotion_groups(stored, PromotionCriteria(similarity=0.58))) == 1


def test_a_twin_below_the_confidence_bar_neither_counts_nor_joins():
    weak = twin("web", 2, confidence=0.79)
    assert promotion_groups([twin("api", 1), weak], CRITERIA) == []
    (group,) = promotion_groups([twin("api", 1), weak, twin("cli", 3)], CRITERIA)
    assert "mem_web_2" not in group.member_ids and group.places == ("api", "cli")


def test_unrelated_memories_of_two_projects_are_no_group():
    other = Candidate("mem_other", "web", 0.95, 3, spoke(50, 51, 0.9))
    assert promotion_groups([twin("api", 1), other], CRITERIA) == []


def test_groups_are_independent_of_input_order_and_the_widest_comes_first():
    wide = [twin("api", 1), twin("web", 2), twin("cli", 3)]
    narrow = [Candidate(f"mem_n{n}", p, 0.9, 0, spoke(40, 40 + n, 0.9)) for n, p in ((1, "api"), (2, "web"))]
    forward = promotion_groups([*wide, *narrow], CRITERIA)
    backward = promotion_groups([*reversed(narrow), *reversed(wide)], CRITERIA)
    assert forward == backward
    assert [len(g.places) for g in forward] == [3, 2]


def test_similar_pairs_are_all_pairs_at_or_above_the_threshold_once_each_across_blocks():
    ids = [f"m{n}" for n in range(1, 8)]
    vectors = [spoke(0, n, 0.9) for n in range(1, 8)]
    edges = similar_pairs(ids, vectors, 0.8, block=3)
    assert len(edges) == 21 and len({(a, b) for a, b, _ in edges}) == 21
    assert all(a < b and s == pytest.approx(0.9, abs=1e-6) for a, b, s in edges)
    assert similar_pairs(ids, vectors, 0.95) == []


def test_a_zero_vector_is_similar_to_nothing():
    assert similar_pairs(["a", "b"], [[0.0, 0.0], [1.0, 0.0]], 0.1) == []


# --- the proposal's parts ------------------------------------------------------------------------------


def test_the_confidence_is_the_usage_weighted_mean_plus_the_consensus_bonus():
    # the documented example: (0.75, 10), (0.82, 8), (0.70, 15) weigh 0.745
    result = promotion_confidence([(0.75, 10), (0.82, 8), (0.70, 15)])
    assert result.weighted == pytest.approx(0.745, abs=5e-4)
    # spread 0.0492 of at most 0.2: bonus 0.1 * (1 - 0.0492 / 0.2)
    assert result.bonus == pytest.approx(0.1 * (1 - float(np.std([0.75, 0.82, 0.70])) / 0.2))
    assert result.final == pytest.approx(result.weighted + result.bonus)


def test_agreeing_sources_earn_the_whole_bonus_capped_at_0_99():
    assert promotion_confidence([(0.85, 0), (0.85, 4)]).bonus == pytest.approx(0.1)
    assert promotion_confidence([(0.85, 0), (0.85, 4)]).final == pytest.approx(0.95)
    assert promotion_confidence([(0.95, 0), (0.95, 0)]).final == 0.99


def test_the_bonus_needs_the_consensus_threshold_of_sources():
    assert promotion_confidence([(0.9, 1), (0.9, 1)], consensus_threshold=3).bonus == 0.0
    assert promotion_confidence([(0.9, 1), (0.9, 1), (0.9, 1)], consensus_threshold=3).bonus == pytest.approx(0.1)


def test_the_representative_is_the_most_trusted_then_the_most_used_member():
    members = [twin("api", 1, confidence=0.9, usage=1), twin("web", 2, confidence=0.95), twin("cli", 3, usage=9)]
    assert promotion_representative(members).id == "mem_web_2"
    tied = [twin("api", 1, usage=2), twin("web", 2, usage=5)]
    assert promotion_representative(tied).id == "mem_web_2"


def test_the_centroid_is_a_unit_vector_as_close_to_each_member():
    vectors = [spoke(0, 1, 0.8), spoke(0, 2, 0.8)]
    centre = promotion_centroid(vectors)
    assert float(np.linalg.norm(centre)) == pytest.approx(1.0)
    assert cosine(centre, vectors[0]) == pytest.approx(cosine(centre, vectors[1]))
    assert cosine(centre, vectors[0]) > 0.8
    assert promotion_known(centre, [vectors[0]], 0.8)
    assert not promotion_known(centre, [spoke(9, 10, 0.9)], 0.8) and not promotion_known(centre, [], 0.8)


def test_the_source_set_key_ignores_order_and_repeats():
    assert source_set_key(["b", "a"]) == source_set_key(["a", "b", "a"]) != source_set_key(["a", "c"])
