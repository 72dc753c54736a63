"""A dry run says so everywhere (docs/consolidation.md#dry-runs): its result carries ``dry_run``,
``/metrics`` does not count its proposals as merges or archives, the log says "would archive"; and its
preview tells near-identical sources apart by id, creation date and project."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import REGISTRY

from consolidation.models import ConsolidationRun
from memories.models import Memory
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke

TITLE = "Set database query timeouts"


@pytest.fixture
def twins(agent):
    """Three memories with the same title (cosine 0.87: one cluster, below the duplicate line)
    and a near-identical pair (0.97: a duplicate group)."""
    # distinct contents: an identical record would return the first memory
    # (docs/memory-model.md#how-a-memory-enters-the-bank)
    cluster = [remember(agent, TITLE, spoke(0, n, 0.87), content=f"{TITLE}, variant {n}.") for n in (1, 2, 3)]
    pair = [
        remember(agent, "The API is RESTful", spoke(10, n, 0.97), content=f"The API is RESTful, note {n}.")
        for n in (11, 12)
    ]
    return cluster, pair


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(f"reasoningbank_{name}", labels) or 0.0


def test_the_result_of_a_dry_run_says_dry_run_and_a_real_runs_says_it_is_not(cast, agent, twins):
    dry = run_cycle(agent, cast.project_a, cycle_llm(), dry_run=True)
    real = run_cycle(agent, cast.project_a, cycle_llm())

    assert dry.result["dry_run"] is True and len(dry.result["archived_memories"]) == 4
    assert ConsolidationRun.objects.get(pk=dry.pk).result["dry_run"] is True
    assert real.result["dry_run"] is False


def test_metrics_count_a_dry_runs_proposals_apart_from_real_merges_and_archives(cast, agent, twins):
    real, dry = {"dry_run": "false"}, {"dry_run": "true"}
    archived_before = counter("consolidation_memories_archived_total", **real)
    merged_before = counter("consolidation_duplicates_merged_total", **real)
    proposed_before = counter("consolidation_memories_archived_total", **dry)
    proposed_merges_before = counter("consolidation_duplicates_merged_total", **dry)
    dry_runs_before = counter("consolidation_runs_total", status="completed", trigger="manual", dry_run="true")
    dry_durations_before = counter("consolidation_run_duration_seconds_count", **dry)

    run_cycle(agent, cast.project_a, cycle_llm(), dry_run=True)

    assert counter("consolidation_memories_archived_total", **real) == archived_before
    assert counter("consolidation_duplicates_merged_total", **real) == merged_before
    assert counter("consolidation_memories_archived_total", **dry) == proposed_before + 4
    assert counter("consolidation_duplicates_merged_total", **dry) == proposed_merges_before + 1
    assert (
        counter("consolidation_runs_total", status="completed", trigger="manual", dry_run="true") == dry_runs_before + 1
    )
    assert counter("consolidation_run_duration_seconds_count", **dry) == dry_durations_before + 1

    run_cycle(agent, cast.project_a, cycle_llm())

    assert counter("consolidation_memories_archived_total", **real) == archived_before + 4
    assert counter("consolidation_duplicates_merged_total", **real) == merged_before + 1
    assert counter("consolidation_memories_archived_total", **dry) == proposed_before + 4


def test_the_log_says_a_dry_run_would_archive_and_never_that_it_archived(cast, agent, twins, caplog):
    with caplog.at_level(logging.INFO, logger="consolidation"):
        run = run_cycle(agent, cast.project_a, cycle_llm(), dry_run=True)

    lines = [record.getMessage() for record in caplog.records]
    # the run's summary line (the ladder's events name the run too, and say "would promote")
    summary = [line for line in lines if run.id in line and line.startswith("Consolidation")]
    assert summary and summary[0].startswith("Consolidation dry run completed")
    assert "would archive=4" in summary[0]
    assert not any("archived=" in line or " archived in " in line for line in lines), lines


def test_the_preview_lists_each_proposed_source_with_its_id_creation_date_and_project(cast, agent, twins):
    cluster, pair = twins

    run = run_cycle(agent, cast.project_a, cycle_llm(), dry_run=True)

    (previewed,) = run.preview["clusters"]
    sources = {source["id"]: source for source in previewed["sources"]}
    assert set(sources) == {m.id for m in cluster}
    for memory in cluster:
        assert sources[memory.id] == {
            "id": memory.id,
            "title": TITLE,
            "created_at": memory.created_at.isoformat(),
            "project": "web-app",
        }
    (duplicate,) = run.preview["duplicates"]
    assert [s["id"] for s in duplicate["sources"]] == [duplicate["keep"], *duplicate["archive"]]
    assert {s["id"] for s in duplicate["sources"]} == {m.id for m in pair}
    assert all(s["project"] == "web-app" and s["created_at"] for s in duplicate["sources"])
    assert Memory.objects.filter(state=Memory.STATE_ACTIVE).count() == 5
