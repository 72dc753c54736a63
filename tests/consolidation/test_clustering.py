"""Sparse-graph clustering: average linkage and duplicate groups (docs/consolidation.md#clustering-and-synthesis),
no database."""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from consolidation.clustering import (
    Cluster,
    average_linkage_clusters,
    connected_components,
    cosine_similarity,
    duplicate_groups,
)

Sims = dict[tuple[int, int], float]


def members(clusters: Sequence[Cluster[Any]]) -> list[tuple[Any, ...]]:
    return [cluster.member_ids for cluster in clusters]


def clique(ids: Sequence[int], similarity: float) -> list[tuple[int, int, float]]:
    return [(a, b, similarity) for a, b in combinations(ids, 2)]


# ---------------------------------------------------------------------------------------------
# Brute-force references: the textbook greedy agglomeration over a full matrix (missing = 0).
# Similarities in the property tests are multiples of 1/16, so every sum is exact in floating
# point and the reference and the sparse implementation compare ties bit-for-bit.
# ---------------------------------------------------------------------------------------------


def reference_agglomerate(ids: Sequence[int], sims: Sims, threshold: float, linkage: str) -> list[list[int]]:
    def sim(a: int, b: int) -> float:
        return sims.get((min(a, b), max(a, b)), 0.0)

    def link(first: list[int], second: list[int]) -> float:
        values = [sim(a, b) for a in first for b in second]
        if linkage == "average":
            return sum(values) / (len(first) * len(second))
        return min(values)

    clusters = [[i] for i in sorted(ids)]
    while True:
        best: tuple[float, int, int] | None = None
        # Clusters stay ordered by smallest member, so the first strictly-better pair found is
        # the one whose smallest ids sort first among equals -- the documented tie-break.
        for x in range(len(clusters)):
            for y in range(x + 1, len(clusters)):
                value = link(clusters[x], clusters[y])
                if best is None or value > best[0]:
                    best = (value, x, y)
        if best is None or best[0] < threshold - 1e-9:
            return clusters
        _, x, y = best
        clusters[x] = sorted(clusters[x] + clusters[y])
        del clusters[y]


def pair_stats(group: Sequence[int], sims: Sims) -> tuple[float, float]:
    values = [sims.get((a, b), 0.0) for a, b in combinations(sorted(group), 2)]
    return sum(values) / len(values), min(values)


GRID = [k / 16 for k in range(-4, 17)]


@st.composite
def sparse_graphs(draw: st.DrawFn) -> tuple[list[int], Sims, list[tuple[int, int, float]], float]:
    n = draw(st.integers(min_value=1, max_value=9))
    pairs = list(combinations(range(n), 2))
    # About half the pairs get an edge; the rest are "missing" (similarity 0).
    values = draw(st.lists(st.one_of(st.none(), st.sampled_from(GRID)), min_size=len(pairs), max_size=len(pairs)))
    sims: Sims = {pair: value for pair, value in zip(pairs, values, strict=True) if value is not None}
    threshold = draw(st.sampled_from([k / 16 for k in range(1, 17)]))
    # Present ids and edges in arbitrary order and direction: the result must not depend on it.
    seed = draw(st.integers(min_value=0, max_value=2**32))
    rng = random.Random(seed)
    ids = list(range(n))
    rng.shuffle(ids)
    edges = [(a, b, s) if rng.random() < 0.5 else (b, a, s) for (a, b), s in sims.items()]
    rng.shuffle(edges)
    return ids, sims, edges, threshold


class TestCosineSimilarity:
    def test_identical_vectors_score_one(self) -> None:
        assert cosine_similarity([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)

    def test_orthogonal_vectors_score_zero(self) -> None:
        assert cosine_similarity([1, 0], [0, 5]) == 0.0

    def test_opposite_vectors_score_minus_one(self) -> None:
        assert cosine_similarity([1, 1], [-2, -2]) == pytest.approx(-1.0)

    def test_a_zero_vector_matches_nothing(self) -> None:
        assert cosine_similarity([0, 0], [1, 1]) == 0.0

    def test_vectors_of_different_length_are_rejected(self) -> None:
        with pytest.raises(ValueError, match="length"):
            cosine_similarity([1, 2], [1, 2, 3])


class TestConnectedComponents:
    def test_a_count_means_ids_zero_to_n_minus_one(self) -> None:
        assert connected_components(5, [(0, 1, 0.9), (3, 4, 0.8)]) == [(0, 1), (2,), (3, 4)]

    def test_chains_join_into_one_component(self) -> None:
        edges = [("c", "d", 0.9), ("a", "b", 0.9), ("b", "c", 0.9)]
        assert connected_components(["d", "c", "b", "a", "e"], edges) == [("a", "b", "c", "d"), ("e",)]

    def test_edges_to_unknown_ids_are_ignored(self) -> None:
        assert connected_components([1, 2], [(1, 99, 0.9), (2, 2, 1.0)]) == [(1,), (2,)]

    def test_min_similarity_drops_weak_edges(self) -> None:
        edges = [(0, 1, 0.95), (1, 2, 0.5)]
        assert connected_components(3, edges, min_similarity=0.8) == [(0, 1), (2,)]

    def test_duplicate_ids_are_rejected(self) -> None:
        with pytest.raises(ValueError, match="unique"):
            connected_components([1, 1], [])

    def test_no_items_gives_no_components(self) -> None:
        assert connected_components(0, []) == []

    def test_a_long_chain_does_not_recurse_too_deep(self) -> None:
        n = 50_000
        edges = [(i, i + 1, 0.9) for i in range(n - 1)]
        assert len(connected_components(n, edges)[0]) == n


class TestAverageLinkage:
    def test_three_close_memories_form_one_cluster_with_its_stats(self) -> None:
        edges = [("m1", "m2", 0.87), ("m1", "m3", 0.84), ("m2", "m3", 0.89)]
        [cluster] = average_linkage_clusters(["m1", "m2", "m3"], edges, 0.8)
        assert cluster.member_ids == ("m1", "m2", "m3")
        assert cluster.average_similarity == pytest.approx(0.8667, abs=1e-4)
        assert cluster.min_similarity == pytest.approx(0.84)
        assert cluster.size == 3

    def test_a_pair_exactly_at_the_threshold_clusters(self) -> None:
        assert members(average_linkage_clusters([1, 2], [(1, 2, 0.8)], 0.8)) == [(1, 2)]

    def test_a_pair_just_below_the_threshold_does_not(self) -> None:
        assert average_linkage_clusters([1, 2], [(1, 2, 0.8 - 1e-6)], 0.8) == []

    def test_float_noise_at_the_threshold_still_clusters(self) -> None:
        noisy = 0.7 + 0.1  # 0.7999999999999999
        assert members(average_linkage_clusters([1, 2], [(1, 2, noisy)], 0.8)) == [(1, 2)]

    def test_a_chain_does_not_drag_in_the_far_end(self) -> None:
        # a~b and b~c but a, c unrelated: {a,b} vs c averages (0 + 0.9) / 2 = 0.45 < 0.8.
        edges = [("a", "b", 0.9), ("b", "c", 0.9)]
        assert members(average_linkage_clusters(["a", "b", "c"], edges, 0.8)) == [("a", "b")]

    def test_a_chain_whose_ends_are_also_similar_forms_one_cluster(self) -> None:
        edges = [("a", "b", 0.95), ("b", "c", 0.9), ("a", "c", 0.85)]
        assert members(average_linkage_clusters(["a", "b", "c"], edges, 0.8)) == [("a", "b", "c")]

    def test_the_strongest_pair_merges_first(self) -> None:
        # c is closer to b than a is; {b,c} forms and a (0.85 to b only) averages 0.425 to it.
        edges = [("a", "b", 0.85), ("b", "c", 0.95)]
        assert members(average_linkage_clusters(["a", "b", "c"], edges, 0.8)) == [("b", "c")]

    def test_missing_pairs_count_as_zero_in_the_stats(self) -> None:
        edges = [(1, 2, 1.0), (1, 3, 1.0), (1, 4, 1.0), (2, 3, 1.0), (2, 4, 1.0)]
        # {1,2,3} forms first; 4 joins at (1 + 1 + 0) / 3 = 0.67, so cut at 0.6.
        [cluster] = average_linkage_clusters([1, 2, 3, 4], edges, 0.6)
        assert cluster.member_ids == (1, 2, 3, 4)
        assert cluster.average_similarity == pytest.approx(5 / 6)
        assert cluster.min_similarity == 0.0

    def test_singletons_are_dropped_by_the_default_min_size(self) -> None:
        assert average_linkage_clusters([1, 2, 3], [], 0.8) == []

    def test_min_size_drops_small_clusters(self) -> None:
        edges = [*clique([1, 2, 3], 0.9), (10, 11, 0.9)]
        found = average_linkage_clusters([1, 2, 3, 10, 11], edges, 0.8, min_size=3)
        assert members(found) == [(1, 2, 3)]

    def test_max_size_drops_over_broad_clusters(self) -> None:
        big, exact = list(range(100, 125)), list(range(20))
        edges = clique(big, 0.9) + clique(exact, 0.9)
        found = average_linkage_clusters(big + exact, edges, 0.8, max_size=20)
        assert members(found) == [tuple(exact)]

    def test_min_size_one_keeps_singletons_with_perfect_stats(self) -> None:
        [single] = average_linkage_clusters([7], [], 0.8, min_size=1)
        assert (single.member_ids, single.average_similarity, single.min_similarity) == (
            (7,),
            1.0,
            1.0,
        )

    def test_output_is_ordered_by_smallest_member(self) -> None:
        edges = [(9, 8, 0.9), (5, 1, 0.9), (3, 4, 0.9)]
        found = average_linkage_clusters([9, 8, 5, 4, 3, 1], edges, 0.8)
        assert members(found) == [(1, 5), (3, 4), (8, 9)]

    def test_both_directions_of_an_edge_count_once(self) -> None:
        edges = [(1, 2, 0.9), (2, 1, 0.9), (2, 3, 0.9), (3, 2, 0.9)]
        # Double counting would make {1,2} vs 3 average 0.9 and pull 3 in.
        assert members(average_linkage_clusters([1, 2, 3], edges, 0.8)) == [(1, 2)]

    def test_a_pair_listed_twice_keeps_its_larger_similarity(self) -> None:
        edges = [(1, 2, 0.79), (2, 1, 0.8)]
        found = average_linkage_clusters([1, 2], edges, 0.8)
        assert members(found) == [(1, 2)]
        assert found[0].average_similarity == pytest.approx(0.8)

    def test_edges_to_ids_outside_the_candidate_set_are_ignored(self) -> None:
        edges = [(1, 2, 0.9), (2, 99, 0.99)]  # 99: e.g. an archived memory the index returned
        assert members(average_linkage_clusters([1, 2], edges, 0.8)) == [(1, 2)]

    def test_ties_break_towards_the_smallest_ids_whatever_the_input_order(self) -> None:
        edges = [("a", "b", 0.9), ("b", "c", 0.9)]
        for order in (["a", "b", "c"], ["c", "b", "a"], ["b", "c", "a"]):
            for edge_order in (edges, edges[::-1]):
                found = average_linkage_clusters(order, edge_order, 0.8)
                assert members(found) == [("a", "b")]

    def test_many_disjoint_groups_are_all_found(self) -> None:
        rng = random.Random(7)
        ids = list(range(3000))
        edges = []
        for start in range(0, 3000, 3):
            edges += clique([start, start + 1, start + 2], 0.9)
        edges += [(rng.randrange(3000), rng.randrange(3000), 0.3) for _ in range(3000)]
        found = average_linkage_clusters(ids, edges, 0.8, min_size=3)
        assert members(found) == [(s, s + 1, s + 2) for s in range(0, 3000, 3)]

    @pytest.mark.parametrize("threshold", [0.0, -0.5, 1.5])
    def test_thresholds_outside_zero_to_one_are_rejected(self, threshold: float) -> None:
        with pytest.raises(ValueError, match="threshold"):
            average_linkage_clusters([1, 2], [(1, 2, 0.9)], threshold)

    def test_nan_similarities_are_rejected(self) -> None:
        with pytest.raises(ValueError, match="NaN"):
            average_linkage_clusters([1, 2], [(1, 2, float("nan"))], 0.8)

    def test_max_size_below_min_size_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="max_size"):
            average_linkage_clusters([1, 2], [], 0.8, min_size=3, max_size=2)

    @settings(max_examples=200, deadline=None)
    @given(sparse_graphs())
    def test_matches_brute_force_average_linkage_on_small_inputs(
        self, graph: tuple[list[int], Sims, list[tuple[int, int, float]], float]
    ) -> None:
        ids, sims, edges, threshold = graph
        expected = [group for group in reference_agglomerate(ids, sims, threshold, "average") if 2 <= len(group) <= 20]
        found = average_linkage_clusters(ids, edges, threshold)
        assert [list(c.member_ids) for c in found] == expected
        for cluster in found:
            average, minimum = pair_stats(cluster.member_ids, sims)
            assert cluster.average_similarity == pytest.approx(average)
            assert cluster.min_similarity == pytest.approx(minimum)  # missing pairs count as 0


class TestDuplicateGroups:
    def test_a_pair_exactly_at_095_is_a_duplicate(self) -> None:
        assert members(duplicate_groups([1, 2], [(1, 2, 0.95)])) == [(1, 2)]

    def test_a_pair_just_below_095_is_not(self) -> None:
        assert duplicate_groups([1, 2], [(1, 2, 0.9499)]) == []

    def test_a_chain_never_links_its_unrelated_ends(self) -> None:
        # A~B and B~C are duplicates, A and C only 0.9 apart: A and C must not end up together.
        edges = [("A", "B", 0.97), ("B", "C", 0.97), ("A", "C", 0.9)]
        assert members(duplicate_groups(["A", "B", "C"], edges)) == [("A", "B")]

    def test_a_chain_with_a_missing_pair_never_links_its_ends(self) -> None:
        edges = [("A", "B", 0.99), ("B", "C", 0.98)]
        assert members(duplicate_groups(["A", "B", "C"], edges)) == [("A", "B")]

    def test_a_full_clique_of_duplicates_is_one_group(self) -> None:
        [group] = duplicate_groups([1, 2, 3], clique([1, 2, 3], 0.97))
        assert group.member_ids == (1, 2, 3)
        assert group.min_similarity == pytest.approx(0.97)
        assert group.average_similarity == pytest.approx(0.97)

    def test_duplicate_groups_have_no_size_cap(self) -> None:
        ids = list(range(30))
        assert members(duplicate_groups(ids, clique(ids, 0.99))) == [tuple(ids)]

    def test_the_threshold_is_configurable(self) -> None:
        assert members(duplicate_groups([1, 2], [(1, 2, 0.9)], threshold=0.9)) == [(1, 2)]

    @settings(max_examples=200, deadline=None)
    @given(sparse_graphs())
    def test_matches_brute_force_complete_linkage_on_small_inputs(
        self, graph: tuple[list[int], Sims, list[tuple[int, int, float]], float]
    ) -> None:
        ids, sims, edges, threshold = graph
        expected = [group for group in reference_agglomerate(ids, sims, threshold, "complete") if len(group) >= 2]
        found = duplicate_groups(ids, edges, threshold)
        assert [list(c.member_ids) for c in found] == expected
        for group in found:
            # Complete linkage: every pair inside a group is a real edge at or above threshold.
            for pair in combinations(group.member_ids, 2):
                assert sims.get(pair, 0.0) >= threshold - 1e-9
            assert group.min_similarity == pytest.approx(pair_stats(group.member_ids, sims)[1])
