"""The stored neighbour graph: the first run probes the pgvector index for every memory, later
runs only for memories created or changed since and for the slice due for another probe, and
reuse the stored edges for the rest."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from consolidation import graph, run_state
from consolidation.graph_slices import SLICES, slice_of
from consolidation.models import ConsolidationRun, NeighbourEdge, NeighbourGraph
from memories.models import Memory
from reasoningbank.ai.llm import NoLLM
from tests.consolidation.vectors import remember, run_cycle, spoke, vec

DAY = timedelta(days=1)


@pytest.fixture
def probes(monkeypatch) -> list[list[str]]:
    """The ids each run asked the index about, one list per neighbour_edges call."""
    calls: list[list[str]] = []
    real = graph.neighbour_edges

    def spy(**kwargs: Any) -> Any:
        calls.append(sorted(kwargs["ids"]))
        return real(**kwargs)

    monkeypatch.setattr(graph, "neighbour_edges", spy)
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

    run = run_cycle(agent, cast.project_a, NoLLM())
    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert probes == [sorted([first.id, second.id, loner.id])]
    assert run.counters["neighbour_probes"] == 3
    graph = NeighbourGraph.objects.get(project=cast.project_a)
    assert graph.edge_count == 1 and NeighbourEdge.objects.filter(project=cast.project_a).count() == 1

    newcomer = remember(agent, "Back off webhook retries", spoke(0, 12, 0.9))
    preview = run_cycle(agent, cast.project_a, NoLLM(), dry_run=True)

    assert probes[1] == [newcomer.id]  # the old memories' neighbours came from the stored graph
    assert preview.counters["neighbour_probes"] == 1
    assert cluster_members(preview) == [{first.id, second.id, newcomer.id}]


def test_a_memory_changed_since_the_last_run_is_probed_again_and_its_stale_edges_are_forgotten(cast, agent, probes):
    first, second = old(agent, "Retry webhooks", spoke(0, 10, 0.9)), old(agent, "Webhook retries", spoke(0, 11, 0.9))
    third = old(agent, "Back off webhook retries", spoke(0, 12, 0.9))
    run_cycle(agent, cast.project_a, NoLLM())
    assert NeighbourEdge.objects.filter(project=cast.project_a).count() == 3

    # an edit re-embeds the memory (memory_update bumps updated_at): now about something else
    Memory.objects.filter(pk=third.pk).update(embedding=vec({40: 1.0}), updated_at=timezone.now())
    run = run_cycle(agent, cast.project_a, NoLLM())

    assert probes[1] == [third.id]
    assert run.counters["clusters"] == 1
    stored = set(NeighbourEdge.objects.filter(project=cast.project_a).values_list("source", "target"))
    assert stored == {tuple(sorted((first.id, second.id)))}


def test_archived_memories_drop_out_of_the_stored_graph(cast, agent, probes):
    keep, twin = old(agent, "Retry webhooks", spoke(0, 10, 0.99)), old(agent, "Retry webhooks!", spoke(0, 11, 0.99))
    run_cycle(agent, cast.project_a, NoLLM())  # a duplicate pair: one of them is archived
    assert Memory.objects.filter(pk__in=[keep.pk, twin.pk], state=Memory.STATE_ARCHIVED).count() == 1

    run_cycle(agent, cast.project_a, NoLLM())

    assert probes[1:] == []  # nothing new: the index was not asked at all
    assert not NeighbourEdge.objects.filter(project=cast.project_a).exists()


def test_a_lower_similarity_floor_than_the_stored_graph_probes_every_memory_again(cast, agent, probes):
    memories = [old(agent, f"Cache keys {i}", spoke(0, 10 + i, 0.9)) for i in range(3)]
    run_cycle(agent, cast.project_a, NoLLM(), similarity_threshold=0.9)
    run_cycle(agent, cast.project_a, NoLLM(), similarity_threshold=0.6)

    assert probes[1] == sorted(m.id for m in memories)
    assert NeighbourGraph.objects.get(project=cast.project_a).min_similarity == pytest.approx(0.6)


def during(run: ConsolidationRun, at: datetime) -> bool:
    return run.started_at <= at <= run.finished_at


def stamps(project) -> list[datetime]:
    return [datetime.fromisoformat(at) for at in NeighbourGraph.objects.get(project=project).slices_probed_at]


def set_stamps(project, due: set[int]) -> None:
    """Every slice probed an hour ago, except those in ``due``: a week and a day ago."""
    now = timezone.now()
    at = [now - run_state.GRAPH_REPROBE_AFTER - DAY if i in due else now - timedelta(hours=1) for i in range(SLICES)]
    NeighbourGraph.objects.filter(project=project).update(slices_probed_at=[a.isoformat() for a in at])


def test_a_full_pass_stamps_the_slices_a_day_apart_so_one_falls_due_each_day(cast, agent, probes):
    old(agent, "Cache keys", spoke(0, 10, 0.9))
    run = run_cycle(agent, cast.project_a, NoLLM())

    probed = stamps(cast.project_a)
    assert len(probed) == SLICES and during(run, probed[0])
    assert [probed[i] - probed[i + 1] for i in range(SLICES - 1)] == [run_state.GRAPH_REPROBE_AFTER / SLICES] * (
        SLICES - 1
    )


def test_only_the_memories_of_a_slice_due_again_are_probed_and_their_stored_edges_are_kept(
    cast, agent, probes, monkeypatch
):
    memories = [old(agent, f"Retry webhooks {i}", spoke(0, 10 + i, 0.9)) for i in range(6)]
    run_cycle(agent, cast.project_a, NoLLM())
    edges_before = set(NeighbourEdge.objects.filter(project=cast.project_a).values_list("source", "target"))
    assert len(edges_before) == 15
    due = slice_of(memories[0].id)
    set_stamps(cast.project_a, {due})
    before = stamps(cast.project_a)
    # this time the index finds nothing: what the earlier probes found must survive a re-probe
    monkeypatch.setattr(graph, "neighbour_edges", lambda **kwargs: probes.append(sorted(kwargs["ids"])) or [])

    run = run_cycle(agent, cast.project_a, NoLLM())

    assert probes[1] == sorted(m.id for m in memories if slice_of(m.id) == due)
    assert run.counters["clusters"] == 1
    assert set(NeighbourEdge.objects.filter(project=cast.project_a).values_list("source", "target")) == edges_before
    after = stamps(cast.project_a)
    assert during(run, after[due])
    assert [at for i, at in enumerate(after) if i != due] == [at for i, at in enumerate(before) if i != due]


def test_when_every_slice_is_due_every_memory_is_probed_again(cast, agent, probes):
    memories = [old(agent, f"Cache keys {i}", spoke(0, 10 + i, 0.9)) for i in range(2)]
    run_cycle(agent, cast.project_a, NoLLM())
    run_cycle(agent, cast.project_a, NoLLM())
    assert probes[1:] == []  # nothing new, nothing due: nothing probed
    set_stamps(cast.project_a, set(range(SLICES)))

    run = run_cycle(agent, cast.project_a, NoLLM())

    assert probes[1:] == [sorted(m.id for m in memories)]
    assert during(run, NeighbourGraph.objects.get(project=cast.project_a).rebuilt_at)


def test_a_dry_run_stores_no_neighbour_graph(cast, agent, probes):
    old(agent, "Retry webhooks", spoke(0, 10, 0.9))
    old(agent, "Webhook retries", spoke(0, 11, 0.9))

    run_cycle(agent, cast.project_a, NoLLM(), dry_run=True)

    assert not NeighbourGraph.objects.exists() and not NeighbourEdge.objects.exists()
