"""The one contract of a stored summary's parts (memories/context/summary_parts.py): the same shapes as
the read contract, a repair whose result always keeps the contract, and summary_store holding
consolidation to it (docs/security/imports.md)."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import ValidationError

from memories.context.contracts import SummaryDecisionOut, SupersededFactOut
from memories.context.summary_parts import (
    DECISION_CONFIDENCES,
    DECISION_KEYS,
    SUMMARY_ITEM_MAX_LENGTH,
    SUPERSEDED_FACT_KEYS,
    summary_decisions_check,
    summary_parts_check,
    summary_parts_problems,
    summary_parts_repair,
    summary_superseded_facts_check,
)
from memories.models import MemorySummary
from reasoningbank.errors import InvalidInput
from tests.factories import MemoryFactory, summary_make

DECISION = {"decision": "Use FastAPI", "rationale": "native async", "outcome": None, "confidence": "high"}
FACT = {"original_fact": "Flask", "superseded_by": "FastAPI", "source_memory_id": ""}
# every item a stored row may hold, good or bad: the read check and the read contract must agree on each
DECISION_ITEMS: list[Any] = [
    DECISION, {**DECISION, "outcome": "3x"}, {**DECISION, "confidence": "low"}, {"decision": "Use it"},
    {**DECISION, "decision": 42}, {**DECISION, "rationale": None}, {**DECISION, "outcome": 1.5},
    {**DECISION, "confidence": "sure"}, {**DECISION, "confidence": None}, {**DECISION, "extra": "x"},
    "Use FastAPI", 42, None, [DECISION],
]  # fmt: skip
FACT_ITEMS: list[Any] = [
    FACT, {**FACT, "source_memory_id": "mem_1"}, {"original_fact": "Flask", "superseded_by": "FastAPI"},
    {**FACT, "original_fact": 5}, {**FACT, "superseded_by": None}, {**FACT, "source_memory_id": None},
    {**FACT, "why": "x"}, "Flask", [], 0,
]  # fmt: skip


def builds(model: Any, item: Any) -> bool:
    try:
        model(**item)
    except (TypeError, ValidationError):
        return False
    return True


def passes(check: Any, item: Any) -> bool:
    try:
        check([item], full=False)
    except ValueError:
        return False
    return True


def test_the_stored_shapes_are_the_read_contracts_shapes():
    assert DECISION_KEYS == tuple(SummaryDecisionOut.model_fields)
    assert SUPERSEDED_FACT_KEYS == tuple(SupersededFactOut.model_fields)
    assert DECISION_CONFIDENCES == typing.get_args(SummaryDecisionOut.model_fields["confidence"].annotation)


@pytest.mark.parametrize("item", DECISION_ITEMS)
def test_a_decision_passes_the_read_check_exactly_when_the_read_contract_can_render_it(item):
    assert passes(summary_decisions_check, item) == builds(SummaryDecisionOut, item)


@pytest.mark.parametrize("item", FACT_ITEMS)
def test_a_superseded_fact_passes_the_read_check_exactly_when_the_read_contract_can_render_it(item):
    assert passes(summary_superseded_facts_check, item) == builds(SupersededFactOut, item)


def row(**parts: Any) -> dict[str, Any]:
    return {
        "status": "ready", "summary": "S.", "key_facts": [], "decisions": [], "superseded_facts": [],
        "source_memory_ids": ["mem_1"], **parts,
    }  # fmt: skip


def test_a_read_only_minds_the_shape_and_the_full_check_the_whole_contract():
    long = row(decisions=[{**DECISION, "decision": "x" * 1500}])
    foreign = row(superseded_facts=[{**FACT, "source_memory_id": "mem_elsewhere"}])

    assert summary_parts_problems(long) == [] and summary_parts_problems(foreign) == []
    assert summary_parts_problems(long, full=True) == [
        "decisions: item 1: decision is too long (1500 characters; at most 1000)"
    ]
    assert "not one of the summary's sources" in summary_parts_problems(foreign, full=True)[0]
    assert summary_parts_problems(row(status="done", key_facts="x", decisions=[1])) == [
        "status: must be one of ready, rejected, held (got 'done')",
        "key_facts: must be a list (got str)",
        "decisions: item 1: must be an object {decision, rationale, outcome, confidence} (got int)",
    ]


def test_a_problem_repeats_at_most_forty_characters_of_the_stored_value():
    problem = summary_parts_problems(row(decisions=[{**DECISION, "confidence": "s" * 5000}]))[0]

    assert len(problem) < 150 and "…" in problem


@pytest.mark.parametrize(
    "parts",
    [
        {"key_facts": "one fact", "decisions": "Use it", "superseded_facts": {"original_fact": "a"}},
        {"key_facts": [1, "", " kept "], "decisions": [{"decision": 42}, {"decision": "d", "confidence": "HIGH"}]},
        {"decisions": [{**DECISION, "decision": "x" * 5000, "outcome": ["no"]}] * 30},
        {"superseded_facts": [{**FACT, "source_memory_id": "mem_elsewhere"}, {**FACT, "superseded_by": 3}]},
        {"key_facts": None, "decisions": None, "superseded_facts": None},
    ],
    ids=["lone-values", "wrong-types", "too-long-and-many", "foreign-source", "nulls"],
)
def test_whatever_a_row_holds_its_repair_keeps_the_contract(parts):
    repaired = summary_parts_repair(
        summary="S.",
        key_facts=parts.get("key_facts", []),
        decisions=parts.get("decisions", []),
        superseded_facts=parts.get("superseded_facts", []),
        source_ids=["mem_1"],
    )

    assert summary_parts_problems(row(**vars(repaired)), full=True) == []


def test_the_repair_is_consolidations_repair_of_a_reply():
    repaired = summary_parts_repair(
        summary="S.",
        key_facts="only fact",
        decisions=["Use X", {"decision": "Y", "confidence": "Medium", "outcome": ""}, {"rationale": "no text"}],
        superseded_facts=[{**FACT, "source_memory_id": "mem_1"}, {**FACT, "source_memory_id": "mem_9"}, "x"],
        source_ids=["mem_1"],
    )

    assert repaired.key_facts == ["only fact"]
    assert repaired.decisions == [
        {"decision": "Use X", "rationale": "", "outcome": None, "confidence": "low"},
        {"decision": "Y", "rationale": "", "outcome": None, "confidence": "medium"},
    ]
    assert [f["source_memory_id"] for f in repaired.superseded_facts] == ["mem_1", ""]


def test_the_check_names_the_part_and_the_item():
    with pytest.raises(ValueError) as caught:
        summary_parts_check(summary="S.", key_facts=[], decisions=[DECISION, {"decision": "x"}], superseded_facts=[])

    assert str(caught.value) == (
        "decisions: item 2: lacks the key 'rationale' (a decision has decision, rationale, outcome, confidence)"
    )


# --- summary_store, the service consolidation writes through ---------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("parts", "field"),
    [
        ({"decisions": ({"decision": "Use it"},)}, "decisions"),
        ({"superseded_facts": ({**FACT, "source_memory_id": "mem_not_a_source"},)}, "superseded_facts"),
        ({"key_facts": (3,)}, "key_facts"),
    ],
    ids=["decision-lacking-keys", "fact-naming-no-source", "key-fact-a-number"],
)
def test_summary_store_refuses_parts_that_break_the_contract(agent, parts, field):
    with pytest.raises(InvalidInput) as caught:
        summary_make(agent, **parts)

    assert caught.value.field == field
    assert not MemorySummary.objects.exists()


@pytest.mark.django_db
def test_a_part_that_scrubbing_lengthens_is_cut_back_so_the_stored_row_keeps_the_contract(agent):
    source = MemoryFactory(principal=agent)
    text = "x" * (SUMMARY_ITEM_MAX_LENGTH - 30) + " key AKIAIOSFODNN7EXAMPLE"  # the marker is longer than the key

    stored = summary_make(agent, sources=[source], decisions=({**DECISION, "decision": text},))

    assert "AKIAIOSFODNN7EXAMPLE" not in stored.decisions[0]["decision"]
    assert len(stored.decisions[0]["decision"]) == SUMMARY_ITEM_MAX_LENGTH
    assert summary_parts_problems(stored, full=True) == []
