"""The batched synthesis in a run (docs/consolidation.md#batched-synthesis): several clusters a call, each
answer bringing the cluster's memory and its summary — fewer calls for the same bank, every consolidated
memory and summary made from its own cluster's answer, and clusters a reply leaves out or mixes up asked
once more, then left for the next run, never merged from another cluster's answer."""

from __future__ import annotations

import json

from consolidation.models import ConsolidationRun
from memories.models import Memory, MemorySummary
from reasoningbank.ai.llm import LLMTransientError
from reasoningbank.models import LlmCall
from tests.consolidation.vectors import (
    cycle_llm,
    default_summary,
    default_synthesis,
    remember,
    run_cycle,
    spoke,
    synthesis_batch_from_single,
)
from tests.fakes import ScriptedLLM

TOPICS = [
    "database timeouts",
    "webhook deliveries",
    "cache invalidation",
    "feature flags",
    "log rotation",
    "schema changes",
]
BATCHED = "Consolidate each of these "  # how the batched synthesis prompt starts


def answered_as_usual(system: str, prompt: str) -> str:
    """What ``cycle_llm`` answers: the replies the tests here do not change."""
    route = cycle_llm().script[0]
    assert callable(route)
    return route(system, prompt)


def clusters_of(agent, topics: list[str]) -> list[list[Memory]]:
    """One cluster of three memories (cosine 0.87) per topic, each on its own hub."""
    return [
        [
            remember(agent, title, spoke(10 * t, 10 * t + n, 0.87), content=f"{title}: what we learned about {topic}.")
            for n, title in enumerate(
                (f"Handle {topic} with care", f"Careful {topic} handling", f"Practices for {topic}"), 1
            )
        ]
        for t, topic in enumerate(topics)
    ]


def calls_by_purpose(run: ConsolidationRun) -> dict[str, int]:
    purposes = LlmCall.objects.for_subject(run).values_list("purpose", flat=True)
    return {p: list(purposes).count(p) for p in set(purposes)}


def batched_prompts(llm: ScriptedLLM) -> list[str]:
    return [prompt for _, prompt in llm.calls if prompt.startswith(BATCHED)]


def sources_of(memory: Memory) -> set[str]:
    return set(memory.consolidated_sources.values_list("id", flat=True))


def test_six_clusters_take_two_synthesis_calls_with_their_summaries_instead_of_twelve_calls(cast, agent):
    clusters = clusters_of(agent, TOPICS)
    llm = cycle_llm()

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert run.counters["created"] == 6 and run.counters["summaries"] == 6
    calls = calls_by_purpose(run)
    assert calls.get("synthesize") == 2, "five clusters a call (the default), then the sixth"
    assert calls.get("summarize", 0) == 0, "every summary came with its cluster's memory"
    assert run.llm_calls == len(llm.calls) == sum(calls.values())
    assert sorted(p.count("Cluster C") for p in batched_prompts(llm)) == [1, 5]
    for cluster in clusters:
        (merged,) = {Memory.objects.get(pk=m.pk).consolidated_into for m in cluster}
        assert merged is not None and MemorySummary.objects.get(memory=merged).status == MemorySummary.STATUS_READY


def test_every_memory_and_summary_comes_from_its_own_clusters_answer_when_the_reply_reverses_their_order(cast, agent):
    clusters = clusters_of(agent, TOPICS[:3])
    answer_singly = synthesis_batch_from_single(default_synthesis, default_summary)

    def reversed_reply(system: str, prompt: str) -> str:
        if not prompt.startswith(BATCHED):
            return answered_as_usual(system, prompt)
        return json.dumps(list(reversed(json.loads(answer_singly(prompt)))))

    run = run_cycle(agent, cast.project_a, ScriptedLLM(script=[reversed_reply] * 10))

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert run.counters["created"] == 3
    for cluster in clusters:
        (merged,) = {Memory.objects.get(pk=m.pk).consolidated_into for m in cluster}
        assert sources_of(merged) == {m.id for m in cluster}
        # the synthesis names the cluster's first (oldest) source: its own cluster's topic
        assert merged.title == f"Consolidated: {cluster[0].title}"
        summary = MemorySummary.objects.get(memory=merged)
        assert summary.summary == "Summary of 3 memories."
        # the superseded fact's source, named by its short id in the reply, is a memory of this cluster
        assert summary.superseded_facts[0]["source_memory_id"] == cluster[0].id


def test_clusters_a_reply_swaps_are_asked_once_more_then_left_untouched_for_the_next_run(cast, agent):
    clusters = clusters_of(agent, TOPICS[:2])
    answer_singly = synthesis_batch_from_single(default_synthesis, default_summary)

    def swapped(system: str, prompt: str) -> str:
        if not prompt.startswith(BATCHED):
            return answered_as_usual(system, prompt)
        first, second = json.loads(answer_singly(prompt))
        first["members"], second["members"] = second["members"], first["members"]
        return json.dumps([first, second])

    llm = ScriptedLLM(script=[swapped] * 10)

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert len(batched_prompts(llm)) == 2, "asked, then asked once more"
    assert run.counters["created"] == 0 and not Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED).exists()
    assert all(Memory.objects.get(pk=m.pk).state == Memory.STATE_ACTIVE for c in clusters for m in c)
    assert any("left unanswered" in w for w in run.warnings)

    later = run_cycle(agent, cast.project_a, cycle_llm())
    assert later.counters["created"] == 2, "the next run synthesises them"


def test_a_cluster_the_reply_leaves_out_is_asked_again_alone_and_then_merged(cast, agent):
    clusters = clusters_of(agent, TOPICS[:3])
    answer_singly = synthesis_batch_from_single(default_synthesis, default_summary)

    def all_but_the_first(system: str, prompt: str) -> str:
        if not prompt.startswith(BATCHED):
            return answered_as_usual(system, prompt)
        answers = json.loads(answer_singly(prompt))
        return json.dumps(answers[1:] if len(answers) > 1 else answers)

    llm = ScriptedLLM(script=[all_but_the_first] * 10)

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    first, again = batched_prompts(llm)
    assert first.count("Cluster C") == 3 and again.count("Cluster C") == 1
    assert run.counters["created"] == 3
    for cluster in clusters:
        (merged,) = {Memory.objects.get(pk=m.pk).consolidated_into for m in cluster}
        assert sources_of(merged) == {m.id for m in cluster}


def test_a_cluster_answered_without_its_summary_is_summarised_by_a_call_of_its_own(cast, agent):
    clusters_of(agent, TOPICS[:2])
    llm = cycle_llm(
        summary=lambda prompt: "no summary here" if "Handle database" in prompt else default_summary(prompt)
    )

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert run.counters["created"] == 2
    assert calls_by_purpose(run).get("summarize") == 1, "only the cluster whose answer had no summary"
    assert MemorySummary.objects.filter(status=MemorySummary.STATUS_READY).count() == 1


def test_a_failed_batched_call_is_a_run_error_and_leaves_its_clusters_untouched(cast, agent):
    clusters = clusters_of(agent, TOPICS[:2])

    def failing(system: str, prompt: str) -> str:
        if prompt.startswith(BATCHED):
            raise LLMTransientError("rate limited (429) after 3 attempts", provider="fake", attempts=3)
        return answered_as_usual(system, prompt)

    run = run_cycle(agent, cast.project_a, ScriptedLLM(script=[failing] * 10))

    assert run.status == ConsolidationRun.STATUS_COMPLETED
    assert len(run.errors) == 2 and all("rate limited (429)" in e for e in run.errors)
    assert all(Memory.objects.get(pk=m.pk).state == Memory.STATE_ACTIVE for c in clusters for m in c)
    assert run.result["skipped_count"] == 6
