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


def test_a_small_project_is_probed_exactly_not_through_the_shared_hnsw_index(cast, agent):
    """The HNSW index is every organization's, and its scan gives up after hnsw.max_scan_tuples entries, dead
    ones and other projects' included: a full test run once left both probes of a near-duplicate pair empty
    (20,000 rows rolled back around the same point) and the pair unmerged. A project of at most
    EXACT_NEIGHBOURS_MAX memories is probed by distance over its own rows instead."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from consolidation.models import ConsolidationRun
    from memories.models import Memory
    from tests.consolidation.vectors import run_cycle
    from tests.fakes import ScriptedLLM

    kept = remember(agent, "The API is RESTful", spoke(0, 2, 0.97), content="The API is all RESTful", confidence=0.9)
    dropped = remember(agent, "API uses REST", spoke(0, 1, 0.97), content="API uses REST and JSON", confidence=0.6)
    remember(agent, "Unrelated", spoke(1, 30, 0.9))
    exact = selectors.neighbour_edges(
        organization_id=cast.org_a.id, project_id=cast.project_a.id, ids=[kept.id, dropped.id], min_similarity=0.9,
        exact=True,
    )  # fmt: skip
    assert [(a, b) for a, b, _ in exact] == [tuple(sorted((kept.id, dropped.id)))]
    assert exact[0][2] == pytest.approx(0.97, abs=1e-4)

    with CaptureQueriesContext(connection) as captured:
        run = run_cycle(agent, cast.project_a, ScriptedLLM())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert Memory.objects.get(pk=dropped.pk).archived_reason == Memory.ARCHIVED_DUPLICATE
    assert Memory.objects.get(pk=kept.pk).state == "active"
    probes = [q["sql"] for q in captured.captured_queries if "CROSS JOIN LATERAL" in q["sql"]]
    assert probes and all("(b.embedding <=> a.embedding) + 0" in sql for sql in probes)
