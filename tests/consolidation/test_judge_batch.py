"""The batched judge (docs/consolidation.md#the-judge): several pairs in one call, every verdict tied to
its pair by ids — a reply with pairs swapped, missing or extra never assigns a verdict to the wrong pair —
fewer calls for the same bank, and verdicts reused by later runs instead of asked again."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from consolidation.models import ConsolidationRun, ReviewItem
from consolidation.prompts.judge_batch import (
    JUDGE_BATCH_SYSTEM_PROMPT,
    BatchMemory,
    BatchPair,
    build_judge_batch_prompt,
    parse_judge_batch,
)
from consolidation.prompts.reply import PromptParseError
from memories.models import MemoryLink
from tests.consolidation.vectors import (
    contradiction_reply,
    cycle_llm,
    remember,
    run_cycle,
    spoke,
    supersession_reply,
)
from tests.fakes import ScriptedLLM

MONDAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TUESDAY = datetime(2026, 3, 3, 9, 0, tzinfo=UTC)
PAIRS = [BatchPair("P1", "M1", "M2"), BatchPair("P2", "M1", "M3"), BatchPair("P3", "M2", "M3")]


def item(pair: str, older: str, newer: str, verdict: str, confidence: float = 0.9) -> dict[str, object]:
    return {
        "pair": pair,
        "older": older,
        "newer": newer,
        "reasoning": "compared",
        "verdict": verdict,
        "confidence": confidence,
        "explanation": f"{pair} is {verdict}",
    }


# --- the prompt and its parser ------------------------------------------------------------------------


def test_the_prompt_lists_each_memory_once_and_names_every_pair_by_its_memories():
    memories = [
        BatchMemory("M1", "Retry webhooks", "Retry failed webhooks three times.", MONDAY),
        BatchMemory("M2", "Never retry webhooks", "Never retry webhooks: receivers are not idempotent.", TUESDAY),
        BatchMemory("M3", "Webhook retries", "Retry webhooks with backoff.", TUESDAY),
    ]

    prompt = build_judge_batch_prompt(memories, PAIRS)

    assert prompt.count("Retry failed webhooks three times.") == 1, "a memory in two pairs is listed once"
    assert "P1: M1 → M2\nP2: M1 → M3\nP3: M2 → M3" in prompt
    assert '"pair": "P1", "older": "M1", "newer": "M2"' in prompt, "the reply must name the pair and its memories"


def test_a_pair_whose_older_memory_is_newer_is_refused_rather_than_asked_backwards():
    memories = [BatchMemory("M1", "a", "a", TUESDAY), BatchMemory("M2", "b", "b", MONDAY)]

    with pytest.raises(ValueError, match="older"):
        build_judge_batch_prompt(memories, [BatchPair("P1", "M1", "M2")])


def test_verdicts_are_read_by_pair_id_whatever_order_the_reply_gives_them_in():
    reply = json.dumps(
        [
            item("P3", "M2", "M3", "compatible"),
            item("P1", "M1", "M2", "contradicts"),
            item("P2", "M1", "M3", "supersedes"),
        ]
    )

    verdicts = parse_judge_batch(reply, PAIRS)

    assert {label: v.verdict for label, v in verdicts.items()} == {
        "P1": "contradicts",
        "P2": "supersedes",
        "P3": "compatible",
    }


def test_an_answer_whose_memories_do_not_match_its_pair_is_dropped_not_given_to_either_pair():
    # P1 and P2 swapped: each id carries the other pair's memories
    reply = json.dumps(
        [
            item("P1", "M1", "M3", "contradicts"),
            item("P2", "M1", "M2", "compatible"),
            item("P3", "M2", "M3", "compatible"),
        ]
    )

    verdicts = parse_judge_batch(reply, PAIRS)

    assert set(verdicts) == {"P3"}


def test_a_pair_the_reply_leaves_out_has_no_verdict_and_an_extra_pair_is_ignored():
    reply = json.dumps([item("P1", "M1", "M2", "compatible"), item("P9", "M1", "M2", "contradicts")])

    verdicts = parse_judge_batch(reply, PAIRS)

    assert set(verdicts) == {"P1"} and verdicts["P1"].verdict == "compatible"


def test_a_pair_answered_twice_with_different_verdicts_stays_undecided():
    reply = json.dumps(
        [
            item("P1", "M1", "M2", "compatible"),
            item("P1", "M1", "M2", "contradicts"),
            item("P2", "M1", "M3", "compatible"),
        ]
    )

    assert set(parse_judge_batch(reply, PAIRS)) == {"P2"}


def test_an_unreadable_verdict_or_confidence_leaves_that_pair_undecided():
    reply = json.dumps(
        [
            item("P1", "M1", "M2", "maybe"),
            item("P2", "M1", "M3", "contradicts", confidence=1.5),
            item("P3", "M2", "M3", "compatible"),
        ]
    )

    assert set(parse_judge_batch(reply, PAIRS)) == {"P3"}


def test_a_reply_without_a_verdict_naming_a_pair_is_a_parse_error():
    with pytest.raises(PromptParseError):
        parse_judge_batch('{"contradicts": false}', PAIRS)


def test_a_reply_cut_off_by_the_token_limit_keeps_the_verdicts_it_completed():
    whole = json.dumps([item("P1", "M1", "M2", "compatible"), item("P2", "M1", "M3", "contradicts")])
    cut = whole[: whole.index('"P2"') + 30]

    assert set(parse_judge_batch(cut, PAIRS)) == {"P1"}


# --- the judge phase ----------------------------------------------------------------------------------------


def close_pairs(agent, hubs: int = 3, spokes: int = 4, cosine: float = 0.75) -> list:
    """``hubs`` groups of ``spokes`` memories, every two of a group at ``cosine`` (in the judge's band,
    below the cluster threshold: judged, never synthesised), groups orthogonal to each other."""
    memories = []
    for hub in range(hubs):
        for n in range(spokes):
            axis = 10 + hub * 10 + n
            memories.append(
                remember(
                    agent,
                    f"Topic {hub} rule {n}",
                    spoke(hub, axis, cosine),
                    content=f"For topic {hub}, follow rule number {n} when deploying.",
                )
            )
    return memories


def test_a_bank_of_eighteen_close_pairs_is_judged_in_one_call_instead_of_thirty_six(cast, agent, settings):
    close_pairs(agent)  # 3 groups × C(4, 2) = 18 pairs
    batched = cycle_llm()

    run = run_cycle(agent, cast.project_a, batched)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert [system for system, _ in batched.calls] == [JUDGE_BATCH_SYSTEM_PROMPT]
    assert ReviewItem.objects.filter(status=ReviewItem.STATUS_COMPATIBLE).count() == 18
    assert run.llm_calls == 1


def test_the_same_bank_judged_one_pair_at_a_time_takes_two_calls_a_pair(cast, agent, settings):
    settings.CONSOLIDATION_JUDGE_BATCH_PAIRS = 1
    close_pairs(agent)
    single = cycle_llm()

    run = run_cycle(agent, cast.project_a, single)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert len(single.calls) == 36 and run.llm_calls == 36


def test_batches_hold_at_most_the_configured_number_of_pairs(cast, agent, settings):
    settings.CONSOLIDATION_JUDGE_BATCH_PAIRS = 5
    close_pairs(agent)
    llm = cycle_llm()

    run_cycle(agent, cast.project_a, llm)

    sizes = [prompt.count(" → M") for _, prompt in llm.calls]
    assert sum(sizes) == 18 and max(sizes) <= 5 and len(sizes) == 4


def test_a_second_run_asks_the_judge_nothing_about_pairs_it_already_judged(cast, agent):
    close_pairs(agent)
    run_cycle(agent, cast.project_a, cycle_llm())
    again = ScriptedLLM(script=[])  # any call would fail the test: nothing is left to ask

    run = run_cycle(agent, cast.project_a, again)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert again.calls == [] and run.llm_calls == 0


def test_pairs_a_reply_leaves_out_are_asked_once_more_then_left_undecided_for_the_next_run(cast, agent):
    close_pairs(agent, hubs=1, spokes=3)  # 3 pairs

    def first_only(system: str, prompt: str) -> str:
        # answers only the batch's first pair, compatible
        older, newer = prompt.split("P1: ", 1)[1].split("\n", 1)[0].split(" → ")
        return json.dumps([item("P1", older, newer, "compatible")])

    llm = ScriptedLLM(script=[first_only, first_only])

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    first, second = (prompt for _, prompt in llm.calls)
    assert first.count(" → M") == 3 and second.count(" → M") == 2, "the two unanswered pairs asked again"
    assert ReviewItem.objects.filter(status=ReviewItem.STATUS_COMPATIBLE).count() == 2
    assert any("unanswered" in w for w in run.warnings)

    later = cycle_llm()
    run_cycle(agent, cast.project_a, later)
    ((_, asked),) = later.calls
    assert asked.count(" → M") == 1, "the pair still undecided is asked by the next run, the others are not"


def test_a_swapped_reply_assigns_no_verdict_so_a_contradicting_pair_is_never_cleared(cast, agent):
    older = remember(agent, "Deploy on Fridays", spoke(0, 1, 0.75), content="Deploy to production on Fridays.")
    newer = remember(
        agent, "Never deploy on Fridays", spoke(0, 2, 0.75), content="Never deploy to production on Fridays."
    )

    def swapped(system: str, prompt: str) -> str:
        # the right verdict for the pair, but naming its memories the other way round
        return json.dumps([item("P1", "M2", "M1", "compatible")])

    llm = ScriptedLLM(script=[swapped, swapped])

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert len(llm.calls) == 2, "asked, then asked once more"
    assert not ReviewItem.objects.filter(status=ReviewItem.STATUS_COMPATIBLE).exists()
    assert {m.state for m in (older, newer)} == {"active"}


def test_a_confident_contradiction_and_supersession_in_one_batch_act_on_their_own_pairs(cast, agent):
    base = remember(agent, "Database", spoke(0, 1, 0.75), content="The project's database is PostgreSQL 14.")
    other = remember(agent, "Database engine", spoke(0, 2, 0.75), content="The project's database is MySQL.")
    llm = cycle_llm(
        supersession=lambda p: supersession_reply("MySQL" in p.split("NEWER", 1)[1]),
        contradiction=contradiction_reply(False),
    )

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    (link,) = MemoryLink.objects.filter(kind=MemoryLink.KIND_SUPERSEDES)
    assert (link.source_id, link.target_id) == (other.id, base.id)
    assert run.counters["supersessions"] == 1


GOLDEN_BATCH_PROMPT = """Judge each of these 1 pairs of memories.

Memories:
[M1] recorded 2026-03-02 09:00:00+00:00
Title: Deploys run on Jenkins
Content: The deploy pipeline runs on Jenkins.

[M2] recorded 2026-03-03 09:00:00+00:00
Title: Deploys moved
Content: Jenkins is retired; deploys run on GitHub Actions.

Pairs (OLDER → NEWER):
P1: M1 → M2

For each pair, decide one verdict:
- "supersedes": the NEWER memory replaces the OLDER one (a decision changed, an updated version of the same \
information, or the older is obsolete). Be conservative: only with clear evidence.
- "contradicts": both cannot be true at the same time about the same subject, and neither clearly replaces the \
other.
- "compatible": they can both be true: the same advice, one more specific than the other, or different subjects.

Think about each pair before you decide: write its reasoning first, then its verdict.

Respond with a JSON array only, one object per pair, every pair answered once, with the keys in this order:
[{"pair": "P1", "older": "M1", "newer": "M2", "reasoning": "...", "verdict": "supersedes|contradicts|compatible", \
"confidence": 0.0-1.0, "explanation": "one line"}]"""


def test_the_batched_prompt_is_pinned_word_for_word():
    """Rewording it changes every model's verdicts on every bank: a decision with this test to update."""
    memories = [
        BatchMemory("M1", "Deploys run on Jenkins", "The deploy pipeline runs on Jenkins.", MONDAY),
        BatchMemory("M2", "Deploys moved", "Jenkins is retired; deploys run on GitHub Actions.", TUESDAY),
    ]

    assert build_judge_batch_prompt(memories, [BatchPair("P1", "M1", "M2")]) == GOLDEN_BATCH_PROMPT
    assert JUDGE_BATCH_SYSTEM_PROMPT == (
        "You are a careful reviewer of an engineering team's knowledge base. You compare pairs of memories "
        "and answer with JSON only."
    )
