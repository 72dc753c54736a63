"""Pairs a cue decides without the judge (docs/consolidation.md#pairs-decided-without-the-judge): the same
content word for word is compatible without a call, counted in the run's ``cue_decided``; anything short
of that — a word changed, a title with a conflict cue — still goes to the judge."""

from __future__ import annotations

import pytest

from consolidation.cues import same_words
from consolidation.models import ConsolidationRun, ReviewItem
from reasoningbank.models import LlmCall
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke

ADVICE = "Wrap every database query in a context with a deadline and retry once on timeout."


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (ADVICE, "wrap every database query in a context, with a deadline; and retry once on timeout", True),
        (ADVICE, ADVICE.replace("once", "twice"), False),
        (ADVICE, ADVICE + " Not any more: we use the pool's timeout.", False),
        ("Fixed it.", "fixed it", False),  # too short to say anything
    ],
    ids=["case and punctuation aside", "a word changed", "a sentence added", "too short"],
)
def test_only_the_same_words_in_the_same_order_count_as_the_same_content(a, b, same):
    assert same_words(a, b) is same
    assert same_words(b, a) is same


def judge_calls(run: ConsolidationRun) -> int:
    return LlmCall.objects.for_subject(run).filter(purpose="judge").count()


def test_a_pair_with_the_same_content_is_compatible_without_a_judge_call_and_counted(cast, agent):
    older = remember(agent, "Database deadlines", spoke(0, 1, 0.87), content=ADVICE)
    newer = remember(agent, "Deadlines for database queries", spoke(0, 2, 0.87), content=ADVICE.lower())

    run = run_cycle(agent, cast.project_a, cycle_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert judge_calls(run) == 0 and run.counters["cue_decided"] == 1
    item = ReviewItem.objects.get()
    assert {item.first_id, item.second_id} == {older.id, newer.id}
    assert item.status == ReviewItem.STATUS_COMPATIBLE and item.decided_by == "cue"
    assert run.counters["created"] == 1, "compatible, the pair merges as any judged-compatible pair"


def test_a_pair_whose_content_differs_by_a_word_still_goes_to_the_judge(cast, agent):
    remember(agent, "Database deadlines", spoke(0, 1, 0.87), content=ADVICE)
    remember(
        agent, "Deadlines for database queries", spoke(0, 2, 0.87), content=ADVICE.replace("a deadline", "a limit")
    )

    run = run_cycle(agent, cast.project_a, cycle_llm())

    assert judge_calls(run) == 1 and run.counters["cue_decided"] == 0


def test_the_same_content_under_titles_with_a_conflict_cue_still_goes_to_the_judge(cast, agent):
    remember(agent, "Use PUT for partial updates", spoke(0, 1, 0.87), content=ADVICE)
    remember(agent, "Use PATCH for partial updates", spoke(0, 2, 0.87), content=ADVICE)

    run = run_cycle(agent, cast.project_a, cycle_llm())

    assert judge_calls(run) == 1 and run.counters["cue_decided"] == 0
