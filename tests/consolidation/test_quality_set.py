"""The quality targets of docs/consolidation.md#thresholds on a fixed fifth of the labelled set (the full
figures: bench/consolidation_quality.py): with the product's thresholds for the embedder, a truthful
judge or none, no pair that disagrees ends in one memory, and duplicate merges stay precise; the dry run
proposes the duplicates the run merges."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memories.core.services import memory_record_or_duplicate
from memories.models import Memory
from reasoningbank.ai.llm import NoLLM
from reasoningbank.errors import ServiceError
from tests.consolidation.vectors import run_cycle

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))  # the bench's scripts import each other by module name

# by module name, as the bench's scripts import each other (one copy of each module)
from _quality_judge import LabelJudge  # noqa: E402
from _quality_outcome import Bank, outcome_from_db, score  # noqa: E402
from _quality_set import DATASET, dataset_load  # noqa: E402

SAMPLE = 5  # every 5th item: 80 items, ~160 memories


@pytest.fixture
def calibrated(settings):
    """The product's thresholds for the test embedder (conftest pins an uncalibrated embedder's otherwise)."""
    (
        settings.CONSOLIDATION_DUPLICATE_THRESHOLD,
        settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD,
        settings.CONSOLIDATION_JUDGE_MIN_SIMILARITY,
    ) = settings.CONSOLIDATION_CALIBRATED_THRESHOLDS[settings.EMBEDDER]


@pytest.fixture
def bank(cast, agent, calibrated):
    ds = dataset_load(DATASET, sample=SAMPLE)
    ids: dict[str, str] = {}
    refused: dict[str, str] = {}
    for m in ds.memories:
        try:
            result = memory_record_or_duplicate(
                principal=agent, title=m.title, description=m.description, content=m.content, outcome=m.outcome
            )
        except ServiceError as exc:  # the write gate may refuse a near-copy: reported, left out
            refused[m.ref] = str(exc)
            continue
        if not result.duplicate:
            ids[m.ref] = result.memory.id
    assert len(ids) > 100, refused
    return ds, Bank(cast.org_a, cast.project_a, agent, ids, refused, 0.0)


@pytest.mark.parametrize("judge", ["truthful", "none"])
def test_no_pair_that_disagrees_ends_in_one_memory_and_duplicate_merges_stay_precise(bank, judge):
    ds, b = bank
    llm = LabelJudge(ds, {m.content: m.ref for m in ds.memories}) if judge == "truthful" else NoLLM()

    run = run_cycle(b.principal, b.project, llm)

    figures = score(ds, outcome_from_db(b), set(b.ids))
    assert figures["disagreeing_merged"]["contradiction"] == 0, figures["disagreeing_merged"]
    assert figures["disagreeing_merged"]["supersession"] == 0, figures["disagreeing_merged"]
    precision = figures["duplicate_merge"]["precision"]
    assert precision is None or precision >= 0.99, figures["duplicate_merge"]
    if judge == "truthful":
        assert figures["contradiction_link"]["precision"] == 1.0 and figures["contradiction_link"]["recall"] > 0.5
        assert run.counters["created"] > 0  # it still synthesises what agrees


def test_the_dry_run_proposes_what_the_run_then_merges_and_synthesises(bank):
    ds, b = bank
    judge = LabelJudge(ds, {m.content: m.ref for m in ds.memories})

    dry = run_cycle(b.principal, b.project, judge, dry_run=True)
    run_cycle(b.principal, b.project, judge)

    proposed = sorted(i for d in dry.preview.get("duplicates", []) for i in d["archive"])
    merged = Memory.objects.filter(organization=b.org, archived_reason=Memory.ARCHIVED_DUPLICATE)
    assert proposed == sorted(merged.values_list("id", flat=True))
    synthesised = {
        frozenset(m.consolidated_sources.values_list("id", flat=True))
        for m in Memory.objects.filter(organization=b.org, origin=Memory.ORIGIN_CONSOLIDATED)
    }
    assert synthesised and synthesised <= {frozenset(c["members"]) for c in dry.preview["clusters"]}
