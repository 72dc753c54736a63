"""memory_ask's prompt, reply parser and date check (memories/ask/reasoning.py;
docs/search.md#asking-the-bank-memory_ask). Pure: no database, no LLM."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memories.ask.reasoning import (
    REASONING_SYSTEM_PROMPT,
    LLMResolution,
    ReasoningMemory,
    ReasoningParseError,
    build_reasoning_prompt,
    parse_reasoned_answer,
    resolutions_check,
)

# The reasoning prompt, written out in full on purpose: any drift shows up as a diff.
GOLDEN_PROMPT = """You are a memory reasoning assistant. Answer questions by reasoning over retrieved memories.

CRITICAL: Pay attention to TIMESTAMPS. When memories contain relative temporal references like "yesterday", "last week", resolve them relative to the memory's recorded timestamp.

Example:
- Memory recorded: 2023-05-08 14:30:00
- Memory content: "Caroline said she went to the support group yesterday"
- Resolved: "yesterday" relative to 2023-05-08 = 2023-05-07

Output JSON:
{
  "answer": "Direct answer",
  "confidence": 0.0-1.0,
  "reasoning": "Step-by-step explanation",
  "temporal_resolutions": [{"original_text": "...", "memory_timestamp": "...", "resolved_date": "...", "confidence": 0.0-1.0}],
  "source_memory_indices": [1, 3],
  "requires_inference": true
}
"""  # noqa: E501

RECORDED = datetime(2023, 5, 8, 14, 30, tzinfo=UTC)
ASKED = datetime(2023, 6, 1, 9, 0, tzinfo=UTC)
CAROLINE = ReasoningMemory(
    id="mem_caroline",
    title="Caroline's support group",
    description="What Caroline told us",
    content="Caroline said she went to the support group yesterday",
    recorded_at=RECORDED,
)
MELANIE = ReasoningMemory(
    id="mem_melanie",
    title="Melanie's race",
    description="",
    content="Melanie ran a charity race two days ago, and painted last Friday",
    recorded_at=datetime(2023, 5, 25, 8, 0, tzinfo=UTC),
)
MEMORIES = [CAROLINE, MELANIE]


def reply(**fields: Any) -> str:
    body = {
        "answer": "Caroline went to the support group on 2023-05-07.",
        "confidence": 0.9,
        "reasoning": "Memory 1 was recorded on 2023-05-08 and says yesterday.",
        "temporal_resolutions": [
            {
                "original_text": "yesterday",
                "memory_timestamp": "2023-05-08 14:30:00",
                "resolved_date": "2023-05-07",
                "confidence": 0.95,
            }
        ],
        "source_memory_indices": [1],
        "requires_inference": True,
    }
    return json.dumps({**body, **fields})


# --- the prompt ------------------------------------------------------------------------------------


def test_the_system_prompt_is_the_fixed_text_verbatim():
    assert REASONING_SYSTEM_PROMPT == GOLDEN_PROMPT


def test_the_prompt_numbers_the_memories_with_their_recorded_timestamps_in_utc():
    prompt = build_reasoning_prompt("When did Caroline go to the support group?", MEMORIES, asked_at=ASKED)
    assert prompt.startswith("Question: When did Caroline go to the support group?\nAsked at: 2023-06-01 09:00:00 UTC")
    assert (
        "[1] recorded 2023-05-08 14:30:00 UTC\nTitle: Caroline's support group\nDescription: What Caroline told us\n"
        "Content: Caroline said she went to the support group yesterday\n\n[2] recorded 2023-05-25 08:00:00 UTC\n"
        "Title: Melanie's race\nContent: Melanie ran"
    ) in prompt


def test_a_timestamp_in_another_zone_is_shown_in_utc_and_a_long_memory_is_cut():
    tokyo = datetime.fromisoformat("2023-05-08T23:30:00+09:00")
    long = ReasoningMemory(id="m", title="t", description="d", content="x" * 10_000, recorded_at=tokyo)
    prompt = build_reasoning_prompt("q", [long], asked_at=ASKED)
    assert "[1] recorded 2023-05-08 14:30:00 UTC" in prompt
    assert "x" * 3990 in prompt and "x" * 4001 not in prompt and "…" in prompt


# --- parsing the reply -----------------------------------------------------------------------------


def test_a_well_formed_reply_is_parsed_into_its_fields():
    parsed = parse_reasoned_answer(reply(), memory_count=2)
    assert parsed.answer.startswith("Caroline went") and parsed.confidence == 0.9
    assert parsed.source_memory_indices == (1,) and parsed.requires_inference is True
    assert parsed.temporal_resolutions == (LLMResolution("yesterday", "2023-05-08 14:30:00", "2023-05-07", 0.95),)


@pytest.mark.parametrize(
    "text",
    [
        "```json\n" + reply() + "\n```",
        "Here is my answer:\n\n" + reply() + "\n\nLet me know if you need more.",
        reply().replace('"requires_inference": true}', '"requires_inference": true,}').replace("], ", ",], "),
        '{"note": "first a stray object"}\n' + reply(),
    ],
    ids=["code-fence", "prose-around", "trailing-commas", "another-object-first"],
)
def test_what_models_commonly_get_wrong_is_repaired(text):
    parsed = parse_reasoned_answer(text, memory_count=2)
    assert parsed.answer.startswith("Caroline went") and parsed.source_memory_indices == (1,)


def test_loose_values_are_read_the_way_they_were_meant():
    parsed = parse_reasoned_answer(
        reply(
            confidence="85%",
            source_memory_indices=["1", "[2]", 2],
            requires_inference="false",
            reasoning=["step one", "step two"],
            temporal_resolutions={"original_text": "yesterday"},
        ),
        memory_count=2,
    )
    assert parsed.confidence == 0.85 and parsed.source_memory_indices == (1, 2)
    assert parsed.requires_inference is False and parsed.reasoning == "step one\nstep two"
    assert [r.original_text for r in parsed.temporal_resolutions] == ["yesterday"]
    assert parse_reasoned_answer(reply(confidence="high"), memory_count=2).confidence == 0.85
    assert parse_reasoned_answer(reply(confidence=None), memory_count=2).confidence == 0.0  # unstated is not high
    assert parse_reasoned_answer(reply(confidence=7), memory_count=2).confidence == pytest.approx(0.07)


def test_cited_numbers_of_memories_not_shown_are_dropped_and_reported():
    parsed = parse_reasoned_answer(reply(source_memory_indices=[0, 2, 9]), memory_count=2)
    assert parsed.source_memory_indices == (2,) and parsed.ignored_indices == (0, 9)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("I think it was yesterday.", "no JSON object"),
        ('{"reply": "yesterday"}', "no 'answer'"),
        (reply(answer="  "), "'answer' is empty"),
        ("", "no JSON object"),
    ],
)
def test_a_reply_without_a_usable_answer_is_an_error_never_a_made_up_answer(text, problem):
    with pytest.raises(ReasoningParseError, match=problem) as caught:
        parse_reasoned_answer(text, memory_count=2)
    assert caught.value.raw == text


# --- checking the dates ----------------------------------------------------------------------------


def check(resolutions: list[LLMResolution], cited: tuple[int, ...] = (1,)):
    return resolutions_check(resolutions, MEMORIES, cited)


def test_a_resolution_the_resolver_reads_the_same_way_is_confirmed():
    (item,), warnings = check([LLMResolution("yesterday", "2023-05-08 14:30:00", "2023-05-07", 0.9)])
    assert (item.resolved_date, item.source, item.agrees, item.corrected_from) == ("2023-05-07", "llm", True, None)
    assert item.memory_index == 1 and item.memory_timestamp == "2023-05-08T14:30:00+00:00"
    assert item.confidence == 0.95 and warnings == ()


def test_a_wrong_date_for_an_unambiguous_phrase_is_corrected_and_said_so():
    (item,), (warning,) = check([LLMResolution("yesterday", "2023-05-08 14:30:00", "2023-05-06", 0.9)])
    assert (item.resolved_date, item.agrees, item.corrected_from) == ("2023-05-07", False, "2023-05-06")
    assert '"yesterday" in memory [1]' in warning and "2023-05-07, not 2023-05-06" in warning


def test_a_disputed_reading_of_an_ambiguous_weekday_is_kept_with_a_warning():
    (item, *_), (warning,) = check([LLMResolution("last Friday", "2023-05-25 08:00:00", "2023-05-12", 0.7)], cited=(2,))
    assert (item.resolved_date, item.agrees, item.corrected_from, item.memory_index) == ("2023-05-12", False, None, 2)
    assert "2023-05-19" in warning and "ambiguous" in warning


def test_an_unreadable_llm_date_for_a_known_phrase_is_replaced():
    (item,), (warning,) = check([LLMResolution("yesterday", "2023-05-08", "the day before", 0.6)])
    assert (item.resolved_date, item.corrected_from) == ("2023-05-07", "the day before")
    assert "'the day before'" in warning


def test_references_of_cited_memories_the_llm_missed_are_added_by_the_resolver():
    checked, _ = check([], cited=(1, 2))
    assert [(c.original_text, c.resolved_date, c.source, c.agrees, c.memory_index) for c in checked] == [
        ("yesterday", "2023-05-07", "resolver", None, 1),
        ("two days ago", "2023-05-23", "resolver", None, 2),
        ("last Friday", "2023-05-19", "resolver", None, 2),
    ]


def test_a_memory_not_cited_gets_no_added_references():
    checked, _ = check([], cited=(1,))
    assert [c.memory_index for c in checked] == [1]


def test_the_llm_quoting_more_of_the_sentence_still_matches_the_phrase():
    (item,), _ = check([LLMResolution("went to the support group yesterday", "2023-05-08 14:30", "2023-05-07", 0.9)])
    assert item.agrees is True and item.memory_index == 1


def test_a_phrase_in_no_memory_is_read_against_the_llms_timestamp():
    (item, _), _ = check([LLMResolution("last month", "2023-05-08 14:30:00 UTC", "2023-03", 0.8)])
    assert (item.resolved_date, item.agrees, item.corrected_from) == ("2023-04", False, "2023-03")


def test_a_phrase_the_resolver_does_not_read_is_kept_unchecked():
    (item, _), warnings = check([LLMResolution("the week after the wedding", "2023-05-08", "2023-06-12", 0.5)])
    assert (item.resolved_date, item.source, item.agrees, item.memory_index) == ("2023-06-12", "llm", None, None)
    assert warnings == ()
