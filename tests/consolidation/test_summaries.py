"""The summarize phase (docs/consolidation.md#summaries): every synthesised cluster also leaves a summary
beside its consolidated memory; malformed replies are kept as rejected, failed calls are caught up by a
later run, dry runs and runs without an LLM write none."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from consolidation.models import ConsolidationRun
from consolidation.prompts.summaries import SUMMARY_SYSTEM_PROMPT
from memories.models import Memory, MemoryLink, MemorySummary
from reasoningbank.ai.llm import LLMTransientError, NoLLM
from reasoningbank.models import LlmCall
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke, summary_source_ids

TITLES = ["Use context.WithTimeout for database calls", "Always set DB query timeouts", "Database timeout practices"]


@pytest.fixture
def cluster(agent):
    """Three memories that cluster (cosine 0.87), written a day apart, oldest first."""
    now = timezone.now()
    return [
        remember(agent, title, spoke(0, n, 0.87), created_at=now - timedelta(days=3 - n))
        for n, title in enumerate(TITLES, 1)
    ]


def summary_prompts(llm) -> list[str]:
    return [prompt for system, prompt in llm.calls if system == SUMMARY_SYSTEM_PROMPT]


def test_a_synthesised_cluster_leaves_a_summary_linked_to_its_consolidated_memory_and_sources(
    cast, agent, cluster, settings
):
    # a call per cluster and one per summary: the summary prompt's own path (the batched synthesis,
    # which answers the summary with the memory, is tests/consolidation/test_synthesis_batch.py's)
    settings.CONSOLIDATION_SYNTHESIS_BATCH_CLUSTERS = 1
    llm = cycle_llm()
    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    merged = Memory.objects.get(origin=Memory.ORIGIN_CONSOLIDATED)
    summary = MemorySummary.objects.get()
    assert summary.memory == merged and summary.status == MemorySummary.STATUS_READY
    assert sorted(summary.source_memory_ids) == sorted(m.id for m in cluster)
    assert summary.project == cast.project_a and summary.organization == cast.org_a
    assert summary.consolidation_run_id == run.id
    assert summary.summary == "Summary of 3 memories."
    assert summary.key_facts == [f"fact from {m.id}" for m in cluster]  # the prompt lists oldest first
    assert summary.decisions == [
        {
            "decision": "Keep the newest advice",
            "rationale": "it was measured",
            "outcome": "fewer incidents",
            "confidence": "high",
        }
    ]
    assert summary.superseded_facts == [
        {"original_fact": "the oldest advice", "superseded_by": "the newest advice", "source_memory_id": cluster[0].id}
    ]
    assert summary.temporal_start == min(m.created_at for m in cluster)
    assert summary.confidence == pytest.approx(merged.confidence)
    assert summary.embedding is not None and summary.embedding_model
    assert run.counters["summaries"] == 1
    (prompt,) = summary_prompts(llm)
    assert summary_source_ids(prompt) == [m.id for m in cluster]
    assert LlmCall.objects.for_subject(run).filter(purpose="summarize").count() == 1


def test_a_malformed_summary_reply_is_kept_as_rejected_and_the_merge_still_stands(cast, agent, cluster):
    run = run_cycle(agent, cast.project_a, cycle_llm(summary="Sure! These are about timeouts."))

    assert run.status == ConsolidationRun.STATUS_COMPLETED
    summary = MemorySummary.objects.get()
    assert summary.status == MemorySummary.STATUS_REJECTED
    assert "no JSON object" in summary.error
    assert summary.raw_reply == "Sure! These are about timeouts."
    assert summary.summary == "" and summary.embedding is None
    assert any("rejected" in w for w in run.warnings)
    assert Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED, state="active").count() == 1
    assert run.counters["summaries"] == 0


def test_a_failed_summary_call_writes_nothing_and_the_next_run_catches_it_up(cast, agent, cluster):
    first = run_cycle(agent, cast.project_a, cycle_llm(summary=_raise(LLMTransientError("rate limited"))))
    assert first.status == ConsolidationRun.STATUS_COMPLETED
    assert not MemorySummary.objects.exists()
    assert any("summary of" in w and "rate limited" in w for w in first.warnings)

    llm = cycle_llm()
    second = run_cycle(agent, cast.project_a, llm)

    summary = MemorySummary.objects.get()
    assert summary.consolidation_run_id == second.id
    assert sorted(summary.source_memory_ids) == sorted(m.id for m in cluster)
    assert second.counters["summaries"] == 1 and len(summary_prompts(llm)) == 1


def test_a_consolidated_memory_from_before_summaries_existed_is_summarised_once(cast, agent, cluster):
    run_cycle(agent, cast.project_a, cycle_llm())
    MemorySummary.objects.all().delete()  # as a bank consolidated before this phase existed

    llm = cycle_llm()
    run_cycle(agent, cast.project_a, llm)
    assert MemorySummary.objects.count() == 1 and len(summary_prompts(llm)) == 1

    again = cycle_llm()
    run_cycle(agent, cast.project_a, again)
    assert MemorySummary.objects.count() == 1 and summary_prompts(again) == []


def test_the_catch_up_can_be_turned_off(cast, agent, cluster, settings):
    run_cycle(agent, cast.project_a, cycle_llm())
    MemorySummary.objects.all().delete()
    settings.CONSOLIDATION_SUMMARY_CATCH_UP = 0

    llm = cycle_llm()
    run_cycle(agent, cast.project_a, llm)
    assert not MemorySummary.objects.exists() and summary_prompts(llm) == []


def test_a_rejected_summary_is_not_retried_by_the_catch_up(cast, agent, cluster):
    run_cycle(agent, cast.project_a, cycle_llm(summary="not json"))
    llm = cycle_llm()
    run_cycle(agent, cast.project_a, llm)
    assert summary_prompts(llm) == []
    assert MemorySummary.objects.get().status == MemorySummary.STATUS_REJECTED


def test_a_dry_run_lists_the_summaries_it_would_write_and_writes_none(cast, agent, cluster):
    llm = cycle_llm()
    run = run_cycle(agent, cast.project_a, llm, dry_run=True)

    assert not MemorySummary.objects.exists() and summary_prompts(llm) == []
    (proposed,) = run.preview["summaries"]
    assert sorted(proposed["sources"]) == sorted(m.id for m in cluster)


def test_without_an_llm_no_summary_is_written_and_the_run_says_they_wait(cast, agent, cluster):
    run_cycle(agent, cast.project_a, cycle_llm())
    MemorySummary.objects.all().delete()

    run = run_cycle(agent, cast.project_a, NoLLM())

    assert not MemorySummary.objects.exists()
    assert any("summaries wait for an LLM" in w for w in run.warnings)


def test_the_summary_sources_come_from_the_lineage_links(cast, agent, cluster):
    run_cycle(agent, cast.project_a, cycle_llm())
    merged = Memory.objects.get(origin=Memory.ORIGIN_CONSOLIDATED)
    linked = set(
        MemoryLink.objects.filter(source=merged, kind=MemoryLink.KIND_CONSOLIDATES).values_list("target_id", flat=True)
    )
    assert set(MemorySummary.objects.get().source_memory_ids) == linked


def _raise(exc: Exception):
    def reply(prompt: str) -> str:
        raise exc

    return reply
