"""The neighbour stage's blend (``memories.search.neighbours``, docs/search.md#neighbours), pure: each
memory's relevance with its best linked memory's. The search that uses it: test_search_neighbours.py."""

from __future__ import annotations

import pytest

from memories.search.neighbours import NEIGHBOUR_WEIGHT, neighbour_links, relevance_with_neighbours


def test_a_memory_next_to_a_strong_match_overtakes_an_isolated_stronger_one():
    fused = {"match": 1.0, "reply": 0.3, "isolated": 0.5}
    scores = relevance_with_neighbours(fused, neighbour_links([("match", "reply")]))
    assert scores["reply"].relevance > scores["isolated"].relevance
    assert scores["reply"].neighbour == "match" and scores["reply"].neighbour_relevance == pytest.approx(1.0)
    assert scores["isolated"].neighbour is None and scores["isolated"].neighbour_relevance == 0.0


def test_the_best_blended_memory_scores_one_and_the_others_keep_their_proportions():
    fused = {"a": 0.8, "b": 0.6, "c": 0.2}
    scores = relevance_with_neighbours(fused, neighbour_links([("a", "b")]))
    best = 0.8 + NEIGHBOUR_WEIGHT * 0.6
    assert scores["a"].relevance == pytest.approx(1.0)
    assert scores["b"].relevance == pytest.approx((0.6 + NEIGHBOUR_WEIGHT * 0.8) / best)
    assert scores["c"].relevance == pytest.approx(0.2 / best)
    assert all(0.0 <= s.relevance <= 1.0 for s in scores.values())
    assert scores["c"].own == 0.2


def test_a_link_to_a_memory_the_filters_left_out_counts_for_nothing():
    scores = relevance_with_neighbours({"a": 0.5}, neighbour_links([("a", "archived")]))
    assert scores["a"].neighbour is None and scores["a"].relevance == pytest.approx(1.0)


def test_a_negative_weight_is_refused():
    with pytest.raises(ValueError, match="weight"):
        relevance_with_neighbours({"a": 1.0}, {}, weight=-0.1)
