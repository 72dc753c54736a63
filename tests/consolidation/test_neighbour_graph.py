"""The stored neighbour graph: the first run probes the pgvector index for every memory, later
runs only for memories created or changed since, and reuse the stored edges for the rest."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from consolidation import services
from consolidation.models import ConsolidationRun, NeighbourEdge, NeighbourGraph
from memories.models import Memory
from reasoningbank.ai.llm import NoLLM
from tests.consolidation.vectors import remember, run_cycle, spoke, vec

DAY = timedelta(days=1)


@pytest.fixture
def agent(cast, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    return principal


@pytest.fixture
def probes(monkeypatch) -> list[list[str]]:
    """The ids each run asked the index about, one list per neighbour_edges call."""
    calls: list[list[str]] = []
    real = services.neighbour_edges

    def spy(**kwargs: Any) -> Any:
        calls.append(sorted(kwargs["ids"]))
        return real(**kwargs)

    monkeypatch.setattr(services, "neighbour_edges", spy)
    return calls


def old(agent, title: str, vector: list[float]) -> Memory:
    """A memory recorded (and last changed) well before any run of the test."""
    long_ago = timezone.now() - 3 * DAY
    return remember(agent, title, vector, created_at=long_ago, updated_at=long_ago)


def cluster_members(run: ConsolidationRun) -> list[set[str]]:
    return [set(c["members"]) for c in run.preview.get("clusters", [])]


def test_a_later_run_probes_only_new_memories_and_still_clusters_them_with_old_ones(cast, agent, probes):
    first, second = old(agent, "Retry webhooks", spoke(0, 10, 0.9)), old(agent, "Webhook retries", spoke(0, 11, 0.9))
    loner = old(agent, "Pin the base image", spoke(1, 20, 0.9))

    run = run_cycle(agent, cast.project_a, NoLLM(), force=True)
    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert probes == [sorted([first.id, second.id, loner.id])]
    assert run.counters["neighbour_probes"] == 3
    graph = NeighbourGraph.objects.get(project=cast.project_a)
    assert graph.edge_count == 1 and NeighbourEdge.objects.filter(project=cast.project_a).count() == 1

    newcomer = remember(agent, "Back off webhook retries", spoke(0, 12, 0.9))
    preview = run_cycle(agent, cast.project_a, NoLLM(), force=True, dry_run=True)

    assert probes[1] == [newcomer.id]  # the old memories' neighbours came from the stored graph
    assert preview.counters["neighbour_probes"] == 1
    assert cluster_members(preview) == [{first.id, second.id, newcomer.id}]


def test_a_memory_changed_since_the_last_run_is_probed_again_and_its_stale_edges_are_forgotten(cast, agent, probes):
    first, second = old(agent, "Retry webhooks", spoke(0, 10, 0.9)), old(agent, "Webhook retries", spoke(0, 11, 0.9))
    third = old(agent, "Back off webhook retries", spoke(0, 12, 0.9))
    run_cycle(agent, cast.project_a, NoLLM(), force=True)
    assert NeighbourEdge.objects.filter(project=cast.project_a).count() == 3

    # an edit re-embeds the memory (memory_update bumps updated_at): now about something else
    Memory.objects.filter(pk=third.pk).update(embedding=vec({40: 1.0}), updated_at=timezone.now())
    run = run_cycle(agent, cast.project_a, NoLLM(), force=True)

    assert probes[1] == [third.id]
    assert run.counters["clusters"] == 1
    stored = set(NeighbourEdge.objects.filter(project=cast.project_a).values_list("source", "target"))
    assert stored == {tuple(sorted((first.id, second.id)))}


def test_archived_memories_drop_out_of_the_stored_graph(cast, agent, probes):
    keep, twin = old(agent, "Retry webhooks", spoke(0, 10, 0.99)), old(agent, "Retry webhooks!", spoke(0, 11, 0.99))
    run_cycle(agent, cast.project_a, NoLLM(), force=True)  # a duplicate pair: one of them is archived
    assert Memory.objects.filter(pk__in=[keep.pk, twin.pk], state=Memory.STATE_ARCHIVED).count() == 1

    run_cycle(agent, cast.project_a, NoLLM(), force=True)

    assert probes[1:] == []  # nothing new: the index was not asked at all
    assert not NeighbourEdge.objects.filter(project=cast.project_a).exists()


def test_a_lower_similarity_floor_than_the_stored_graph_probes_every_memory_again(cast, agent, probes):
    memories = [old(agent, f"Cache keys {i}", spoke(0, 10 + i, 0.9)) for i in range(3)]
    run_cycle(agent, cast.project_a, NoLLM(), force=True, similarity_threshold=0.9)
    run_cycle(agent, cast.project_a, NoLLM(), force=True, similarity_threshold=0.6)

    assert probes[1] == sorted(m.id for m in memories)
    assert NeighbourGraph.objects.get(project=cast.project_a).min_similarity == pytest.approx(0.6)


def test_a_graph_whose_last_full_pass_is_over_a_week_old_is_rebuilt_from_every_memory(cast, agent, probes):
    memories = [old(agent, f"Cache keys {i}", spoke(0, 10 + i, 0.9)) for i in range(2)]
    run_cycle(agent, cast.project_a, NoLLM(), force=True)
    run_cycle(agent, cast.project_a, NoLLM(), force=True)
    assert probes[1:] == []  # nothing new: nothing probed
    NeighbourGraph.objects.filter(project=cast.project_a).update(
        rebuilt_at=timezone.now() - services.GRAPH_REBUILD_AFTER - DAY
    )

    run_cycle(agent, cast.project_a, NoLLM(), force=True)

    assert probes[1:] == [sorted(m.id for m in memories)]
    assert NeighbourGraph.objects.get(project=cast.project_a).rebuilt_at > timezone.now() - DAY


def test_a_dry_run_stores_no_neighbour_graph(cast, agent, probes):
    old(agent, "Retry webhooks", spoke(0, 10, 0.9))
    old(agent, "Webhook retries", spoke(0, 11, 0.9))

    run_cycle(agent, cast.project_a, NoLLM(), force=True, dry_run=True)

    assert not NeighbourGraph.objects.exists() and not NeighbourEdge.objects.exists()
