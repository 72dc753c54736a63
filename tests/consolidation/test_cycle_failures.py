"""The cycle when things go wrong: LLM errors, a crashing merge, bad replies, no LLM, timeouts,
dead workers, concurrent requests and the 24 h window. Committed work is kept, nothing is
half-stored, one cluster's failure never stops the others."""

from __future__ import annotations

import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.utils import timezone

from consolidation import run_state, runs
from consolidation.models import ConsolidationRun
from consolidation.phases import clusters
from consolidation.runs import consolidation_request, run_options_validate, runs_recover_stale
from memories.models import Memory, MemoryLink
from reasoningbank.ai.llm import LLMTransientError, NoLLM
from reasoningbank.errors import Conflict
from reasoningbank.models import LlmCall
from tests.consolidation.vectors import (
    SYNTHESIS_PREFIX,
    cycle_llm,
    default_synthesis,
    prompts_of,
    remember,
    run_cycle,
    spoke,
    synthesis_reply,
    vec,
)
from tests.factories import ConsolidationRunFactory

TIMEOUT_TITLES = ["Timeout rule A", "Timeout rule B", "Timeout rule C"]
RETRY_TITLES = ["Retry rule A", "Retry rule B"]


@pytest.fixture
def two_clusters(agent):
    """A 3-member cluster (synthesized first: biggest first) and a 2-member one, cosine 0.87."""
    first = [remember(agent, t, spoke(0, n, 0.87)) for n, t in enumerate(TIMEOUT_TITLES, 1)]
    second = [remember(agent, t, spoke(20, 20 + n, 0.87)) for n, t in enumerate(RETRY_TITLES, 1)]
    return first, second


def refreshed(memories: list[Memory]) -> list[Memory]:
    return [Memory.objects.get(pk=m.pk) for m in memories]


def consolidated() -> list[Memory]:
    return list(Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED))


def assert_untouched(memories: list[Memory]) -> None:
    for memory in refreshed(memories):
        assert (memory.state, memory.archived_reason, memory.consolidated_into_id) == ("active", "", None)
    assert not MemoryLink.objects.filter(target__in=memories, kind=MemoryLink.KIND_CONSOLIDATES).exists()


def assert_merged(memories: list[Memory]) -> Memory:
    (merged,) = {m.consolidated_into for m in refreshed(memories)}
    assert merged is not None and merged.origin == Memory.ORIGIN_CONSOLIDATED
    assert sorted(merged.consolidated_sources.values_list("id", flat=True)) == sorted(m.id for m in memories)
    assert all(m.state == "archived" and m.archived_reason == "consolidated" for m in refreshed(memories))
    return merged


def test_an_llm_error_on_the_first_cluster_is_recorded_and_the_second_cluster_still_merges(
    cast, agent, two_clusters, settings
):
    settings.CONSOLIDATION_SYNTHESIS_BATCH_CLUSTERS = 1  # a call per cluster (batched: test_synthesis_batch.py)
    first, second = two_clusters

    def synthesis(prompt: str) -> str:
        if "Timeout rule" in prompt:
            raise LLMTransientError("rate limited (429) after 3 attempts", provider="fake", attempts=3)
        return default_synthesis(prompt)

    llm = cycle_llm(synthesis=synthesis)

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED
    assert "Timeout rule" in prompts_of(llm, SYNTHESIS_PREFIX)[0], "the failing cluster was the first one"
    (error,) = run.errors
    assert "rate limited (429)" in error
    assert_untouched(first)
    merged = assert_merged(second)
    assert run.result["created_memories"] == [merged.id]
    assert run.result["skipped_count"] == 3
    failed_call = LlmCall.objects.for_subject(run).get(outcome=LlmCall.OUTCOME_ERROR)
    assert failed_call.purpose == "synthesize" and "rate limited" in failed_call.error


def test_an_exception_inside_one_clusters_merge_rolls_that_cluster_back_while_the_others_merge(
    cast, agent, two_clusters, monkeypatch
):
    first, second = two_clusters
    first_ids = {m.id for m in first}
    real_link = clusters.link_add
    linked: list[str] = []

    def link_failing_on_the_third_source(state, source, target, kind, weight, reason):
        if kind == MemoryLink.KIND_CONSOLIDATES and target in first_ids:
            linked.append(target)
            if len(linked) == 3:  # two sources already archived and linked inside this transaction
                raise RuntimeError("disk full while linking")
        return real_link(state, source, target, kind, weight, reason)

    monkeypatch.setattr(clusters, "link_add", link_failing_on_the_third_source)

    run = run_cycle(agent, cast.project_a, cycle_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED
    assert len(linked) == 3
    (error,) = run.errors
    assert "disk full while linking" in error
    assert_untouched(first)
    merged = assert_merged(second)
    assert consolidated() == [merged], "the failed cluster's new memory was rolled back too"
    assert run.result["created_memories"] == [merged.id]
    assert not set(run.result["archived_memories"]) & first_ids


def test_an_unparseable_synthesis_reply_is_recorded_and_nothing_is_half_stored(cast, agent, two_clusters, settings):
    settings.CONSOLIDATION_SYNTHESIS_BATCH_CLUSTERS = 1  # a call per cluster (batched: test_synthesis_batch.py)
    first, second = two_clusters
    memories_before, links_before = Memory.objects.count(), MemoryLink.objects.count()
    llm = cycle_llm(synthesis="Sure! These memories are all about resilience. Hope that helps.")

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED
    assert len(run.errors) == 2 and all("no TITLE" in e for e in run.errors)
    assert_untouched(first + second)
    assert Memory.objects.count() == memories_before
    assert MemoryLink.objects.filter(kind=MemoryLink.KIND_CONSOLIDATES).count() == 0
    assert MemoryLink.objects.count() == links_before
    assert run.result["created_memories"] == [] and run.result["archived_memories"] == []


def test_a_synthesis_with_mixed_case_and_over_long_tags_still_merges_with_clean_tags(cast, agent, two_clusters):
    first, second = two_clusters
    long_tag = "database-connection-pool-timeout-handling-best-practices-for-go"  # 63 characters
    reply = synthesis_reply("Timeouts everywhere", tags=f"Go, DATABASE, {long_tag}")

    run = run_cycle(agent, cast.project_a, cycle_llm(synthesis=reply))

    assert run.errors == [], "a good synthesis must not be lost to the shape of its tags"
    for merged in (assert_merged(first), assert_merged(second)):
        # tags are normalised like memory_record's (lower case, at most 50 characters), so tag filters find them
        assert merged.tags and all(tag == tag.lower() and len(tag) <= 50 for tag in merged.tags), merged.tags
        assert {"go", "database"} <= set(merged.tags)


def test_without_an_llm_duplicates_and_tiers_are_applied_and_clusters_wait(cast, agent, two_clusters):
    first, second = two_clusters
    keep = remember(agent, "API uses REST", spoke(40, 41, 0.97), confidence=0.9)
    duplicate = remember(agent, "The API is RESTful", spoke(40, 42, 0.97), confidence=0.6)
    aging = remember(agent, "Month-old lesson", vec({50: 1.0}), created_at=timezone.now() - timedelta(days=40))

    run = run_cycle(agent, cast.project_a, NoLLM())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert any("clusters wait for an LLM" in w for w in run.warnings), run.warnings
    assert consolidated() == []
    assert_untouched(first + second)
    duplicate.refresh_from_db()
    assert (duplicate.state, duplicate.archived_reason) == ("archived", Memory.ARCHIVED_DUPLICATE)
    assert MemoryLink.objects.filter(source=keep, target=duplicate, kind=MemoryLink.KIND_DUPLICATES).exists()
    aging.refresh_from_db()
    assert aging.tier == "warm"
    assert run.result["created_memories"] == []
    assert run.result["skipped_count"] == 7  # both clusters wait, plus the kept duplicate and the lesson
    assert not LlmCall.objects.exists()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def monotonic(self) -> float:
        return self.now


def test_a_run_that_exceeds_its_time_limit_fails_with_a_timeout_and_keeps_committed_work(
    cast, agent, two_clusters, monkeypatch
):
    first, second = two_clusters
    keep = remember(agent, "API uses REST", spoke(40, 41, 0.97), confidence=0.9)
    duplicate = remember(agent, "The API is RESTful", spoke(40, 42, 0.97), confidence=0.6)
    clock = FakeClock()
    fake_time = SimpleNamespace(monotonic=clock.monotonic, perf_counter=time.perf_counter)
    monkeypatch.setattr(run_state, "time", fake_time)
    monkeypatch.setattr(runs, "time", fake_time)

    def slow_synthesis(prompt: str) -> str:
        clock.now += settings.CONSOLIDATION_RUN_TIMEOUT + 1  # this LLM call outlasted the whole run's budget
        return default_synthesis(prompt)

    run = run_cycle(agent, cast.project_a, cycle_llm(synthesis=slow_synthesis))

    assert run.status == ConsolidationRun.STATUS_FAILED
    (error,) = run.errors
    assert "exceeded" in error and f"{settings.CONSOLIDATION_RUN_TIMEOUT / 60:.0f}-minute limit" in error
    assert run.finished_at is not None
    assert consolidated() == []
    assert_untouched(first + second)
    duplicate.refresh_from_db()
    assert duplicate.archived_reason == Memory.ARCHIVED_DUPLICATE, "work committed before the timeout stays"
    assert Memory.objects.get(pk=keep.pk).state == Memory.STATE_ACTIVE


def test_a_running_run_whose_worker_stopped_heartbeating_is_marked_failed(cast):
    now = timezone.now()
    stuck = ConsolidationRunFactory(
        project=cast.project_a,
        status=ConsolidationRun.STATUS_RUNNING,
        started_at=now - timedelta(hours=1),
        heartbeat_at=now - timedelta(hours=1),
    )
    alive = ConsolidationRunFactory(
        project=cast.project_b,
        status=ConsolidationRun.STATUS_RUNNING,
        started_at=now - timedelta(minutes=2),
        heartbeat_at=now - timedelta(seconds=5),
    )

    assert runs_recover_stale() == 1

    stuck.refresh_from_db()
    alive.refresh_from_db()
    assert stuck.status == ConsolidationRun.STATUS_FAILED and stuck.finished_at is not None
    assert "stopped" in stuck.errors[0]
    assert alive.status == ConsolidationRun.STATUS_RUNNING


def test_a_second_request_for_a_project_with_a_queued_run_is_a_conflict(cast, agent):
    options = run_options_validate()
    queued = consolidation_request(principal=agent, project=cast.project_a, options=options)

    with pytest.raises(Conflict) as raised:
        consolidation_request(principal=agent, project=cast.project_a, options=options)

    assert queued.id in str(raised.value) and "queued" in str(raised.value)
    assert ConsolidationRun.objects.filter(project=cast.project_a).count() == 1
    ConsolidationRun.objects.filter(pk=queued.pk).update(status=ConsolidationRun.STATUS_FAILED)
    assert consolidation_request(principal=agent, project=cast.project_a, options=options).status == "queued"


def test_an_explicit_run_seconds_after_an_automatic_one_runs_instead_of_being_skipped(cast, agent, two_clusters):
    # how often automatic runs come is the scheduler's rule; someone who asks means now
    # (docs/consolidation.md#what-starts-a-run)
    ConsolidationRunFactory(
        project=cast.project_a,
        trigger=ConsolidationRun.TRIGGER_SCHEDULED,
        status=ConsolidationRun.STATUS_COMPLETED,
        started_at=timezone.now() - timedelta(seconds=5),
        finished_at=timezone.now() - timedelta(seconds=2),
    )

    run = run_cycle(agent, cast.project_a, cycle_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.warnings + run.errors
    assert run.warnings == []
    assert len(run.result["created_memories"]) == 2


def test_a_run_queued_before_an_upgrade_with_force_in_its_options_still_runs(cast, agent, two_clusters):
    queued = ConsolidationRunFactory(
        project=cast.project_a, options={**run_options_validate().as_dict(), "force": True}
    )

    run = runs.consolidation_execute(queued.id, llm=cycle_llm())

    assert run is not None and run.status == ConsolidationRun.STATUS_COMPLETED, run and run.errors
    assert len(run.result["created_memories"]) == 2
