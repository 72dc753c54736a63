"""The sparse neighbour graph from pgvector, sequential and in parallel sessions."""

import pytest

from consolidation import selectors
from tests.consolidation.vectors import remember, spoke


@pytest.mark.django_db(transaction=True)  # parallel sessions only see committed rows
def test_parallel_chunks_find_the_same_edges_as_one_sequential_pass(cast, make_token, monkeypatch):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memories = [remember(principal, f"Timeouts {i}", spoke(0, 10 + i, 0.9)) for i in range(5)]
    memories.append(remember(principal, "Unrelated", spoke(1, 30, 0.9)))
    ids = [m.id for m in memories]

    def edges() -> list[tuple[str, str, float]]:
        found = selectors.neighbour_edges(
            organization_id=cast.org_a.id, project_id=cast.project_a.id, ids=ids, min_similarity=0.8
        )
        return sorted((a, b, round(s, 6)) for a, b, s in found)

    sequential = edges()
    monkeypatch.setattr(selectors, "NEIGHBOUR_CHUNK", 2)
    parallel = edges()
    assert parallel == sequential
    assert len(sequential) == 10  # every pair of the five spokes (cosine 0.9), none with the unrelated one
    assert all(s == pytest.approx(0.9, abs=1e-4) for _, _, s in sequential)


@pytest.mark.parametrize(
    ("count", "size"),
    [(100_000, 2000), (10_000, 1250), (952, 250), (6, 250)],
)
def test_the_k_nn_pass_is_cut_into_enough_chunks_to_keep_every_session_busy(count, size):
    assert selectors.neighbour_chunk_size(count) == size
