"""Memories that disagree are never merged on similarity alone
(docs/decisions.md#never-merge-what-may-disagree, docs/consolidation.md#conflict-cues): a close pair with
conflict cues is kept out of the duplicate merge and the cluster synthesis and goes to the judge; with no LLM
it waits in the review queue; a judge's "compatible" lets it merge in a later run; a dry run proposes exactly
what the run does."""

from __future__ import annotations

import pytest

from consolidation.models import ConsolidationRun, ReviewItem
from memories.models import Memory, MemoryLink
from reasoningbank.ai.llm import NoLLM
from tests.consolidation.vectors import contradiction_reply, cycle_llm, remember, run_cycle, spoke

ALWAYS = "Always retry failed payment webhooks immediately."
NEVER = "Never retry failed payment webhooks immediately."


@pytest.fixture
def opposite_twins(agent):
    """Two memories 0.97 alike (above the duplicate threshold) that say opposite things."""
    first = remember(agent, "Payment webhook retries", spoke(0, 1, 0.97), content=ALWAYS)
    second = remember(agent, "Retrying payment webhooks", spoke(0, 2, 0.97), content=NEVER)
    return first, second


def states(*memories: Memory) -> list[str]:
    return [Memory.objects.get(pk=m.pk).state for m in memories]


def test_opposite_twins_are_not_merged_as_duplicates_and_the_judge_links_them(cast, agent, opposite_twins):
    run = run_cycle(agent, cast.project_a, cycle_llm(contradiction=contradiction_reply(True)))

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert states(*opposite_twins) == ["active", "active"]
    assert run.counters["duplicates_merged"] == 0 and run.counters["conflicts"] == 1
    assert MemoryLink.objects.filter(kind=MemoryLink.KIND_CONTRADICTS).count() == 1
    item = ReviewItem.objects.get()
    assert (item.status, item.decided_by) == (ReviewItem.STATUS_CONTRADICTS, "judge")
    assert item.first == opposite_twins[0] and any("negation" in cue for cue in item.cues)


def test_without_an_llm_opposite_twins_wait_for_review_and_are_never_merged(cast, agent, opposite_twins):
    run = run_cycle(agent, cast.project_a, NoLLM())

    assert states(*opposite_twins) == ["active", "active"]
    item = ReviewItem.objects.get()
    assert item.status == ReviewItem.STATUS_PENDING and item.run == run
    assert any("need review" in warning for warning in run.warnings)

    again = run_cycle(agent, cast.project_a, NoLLM())
    assert states(*opposite_twins) == ["active", "active"] and ReviewItem.objects.count() == 1
    assert ReviewItem.objects.get().run == again


def test_a_judge_that_finds_them_compatible_clears_the_pair_for_the_next_run(cast, agent, opposite_twins):
    run_cycle(agent, cast.project_a, cycle_llm(contradiction=contradiction_reply(False)))
    assert states(*opposite_twins) == ["active", "active"]  # never merged in the run that judged them
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_COMPATIBLE

    second = run_cycle(agent, cast.project_a, cycle_llm())
    assert second.counters["duplicates_merged"] == 1 and second.counters["conflicts"] == 0
    assert sorted(states(*opposite_twins)) == ["active", "archived"]


def test_an_unsure_judge_leaves_the_pair_waiting(cast, agent, opposite_twins):
    run_cycle(agent, cast.project_a, cycle_llm(contradiction=contradiction_reply(True, confidence=0.5)))
    assert ReviewItem.objects.get().status == ReviewItem.STATUS_PENDING
    assert states(*opposite_twins) == ["active", "active"]


def test_a_cluster_never_synthesises_two_memories_that_disagree(cast, agent):
    a = remember(agent, "HTTP client timeouts", spoke(0, 1, 0.87), content="Set the HTTP client timeout to 5 seconds.")
    b = remember(
        agent, "Client timeouts", spoke(0, 2, 0.87), content="Set the HTTP client timeout to 5 seconds always."
    )
    c = remember(agent, "Slow APIs", spoke(0, 3, 0.87), content="Set the HTTP client timeout to 60 seconds.")
    d = remember(agent, "Timeouts matter", spoke(0, 4, 0.87), content="Every HTTP client needs a timeout of 5 seconds.")

    # an unsure judge: c's pairs stay in review (a confident one would dispute all four memories)
    judge = cycle_llm(contradiction=lambda prompt: contradiction_reply("60 seconds" in prompt, confidence=0.5))
    run = run_cycle(agent, cast.project_a, judge)

    merged = Memory.objects.get(origin=Memory.ORIGIN_CONSOLIDATED)
    sources = set(merged.consolidated_sources.values_list("id", flat=True))
    assert sources == {a.id, b.id, d.id} and states(c) == ["active"]
    assert run.counters["conflicts"] == 3  # c against each of the others
    assert ReviewItem.objects.filter(status=ReviewItem.STATUS_PENDING).count() == 3


@pytest.mark.parametrize("llm_factory", [NoLLM, cycle_llm], ids=["no-llm", "llm"])
def test_a_dry_run_proposes_exactly_what_the_run_then_does(cast, agent, opposite_twins, llm_factory):
    cluster = [
        remember(agent, title, spoke(10, n, 0.87))
        for n, title in enumerate(["Use connection pools", "Pool database connections", "Reuse DB connections"], 11)
    ]
    dry = run_cycle(agent, cast.project_a, llm_factory(), dry_run=True)
    real = run_cycle(agent, cast.project_a, llm_factory())

    assert sorted(dry.result["archived_memories"]) == sorted(real.result["archived_memories"])
    if llm_factory is NoLLM:
        assert dry.result["archived_memories"] == [] and states(*cluster) == ["active"] * 3
        assert all(c["then"].startswith("waits for an LLM") for c in dry.preview["clusters"])
    else:
        assert sorted(dry.result["archived_memories"]) == sorted(m.id for m in cluster)
    (pair,) = [p for p in dry.preview["judge_pairs"] if p.get("cues")]
    assert {pair["older"], pair["newer"]} == {m.id for m in opposite_twins}
    if llm_factory is NoLLM:
        assert pair["then"] == "needs review (no LLM)"
    else:  # the dry run asked the judge, as the run does
        assert pair["verdict"] == "compatible"


def test_a_compatible_verdict_in_another_org_clears_nothing_here(cast, agent, make_token, opposite_twins):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    theirs = [
        remember(charlie, "Webhook retries", spoke(0, 5, 0.97), content=ALWAYS, project="billing"),
        remember(charlie, "Retrying webhooks", spoke(0, 6, 0.97), content=NEVER, project="billing"),
    ]
    run_cycle(charlie, cast.project_b, cycle_llm(contradiction=contradiction_reply(False)))
    assert ReviewItem.objects.get(organization=cast.org_b).status == ReviewItem.STATUS_COMPATIBLE

    run_cycle(agent, cast.project_a, NoLLM())
    assert states(*opposite_twins) == ["active", "active"]
    assert ReviewItem.objects.get(organization=cast.org_a).status == ReviewItem.STATUS_PENDING
    assert states(*theirs) == ["active", "active"]
