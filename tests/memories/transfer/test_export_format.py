"""The export format's pure logic (memories/transfer/export_format.py): line schemas, validation with line and
field, checks across lines and id remapping — no database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import count
from typing import Any

import pytest

from memories.transfer import export_format as ef
from memories.transfer import import_checks as checks
from memories.transfer import lines

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
VOCAB = ef.Vocabulary(
    kinds=("working", "episodic", "semantic", "procedural"),
    outcomes=("success", "failure", "mixed"),
    states=("active", "archived"),
    archived_reasons=("consolidated", "superseded", "duplicate", "stale", "manual"),
    tiers=("hot", "warm", "cold", "archived"),
    origins=("recorded", "distilled", "consolidated", "extracted"),
    link_kinds=("consolidates", "supersedes", "contradicts", "duplicates", "references"),
    signal_types=("explicit", "usage", "outcome", "stability"),
    summary_statuses=("ready", "rejected"),
    session_vias=("search", "context"),
)
HEADER = {"type": "header", "format": ef.FORMAT, "version": 1}
END = {"type": "end"}


def memory(id_: str = "m1", **fields: Any) -> dict[str, Any]:
    return {
        "type": "memory",
        "id": id_,
        "project": "web-app",
        "title": "Pin seeds",
        "content": "Seed the RNG.",
        **fields,
    }


def ids() -> checks.IdMap:
    numbers = count(1)
    return checks.IdMap(
        new_memory_id=lambda: f"mem_new{next(numbers)}", new_summary_id=lambda: f"sum_new{next(numbers)}"
    )


def check(
    *records: dict[str, Any] | str, into_project: bool = False
) -> tuple[checks.ImportChecker, list[ef.LineError]]:
    checker = checks.ImportChecker(vocab=VOCAB, now=NOW, ids=ids(), into_project=into_project)
    for number, record in enumerate(records, start=1):
        checker.feed(f"line {number}", record if isinstance(record, str) else json.dumps(record))
    return checker, checker.finish()


def test_a_minimal_hand_written_memory_gets_the_defaults_of_a_recorded_one():
    record = lines.record_parse(memory(), VOCAB, now=NOW)

    assert record["scope"] == "project" and record["team"] is None
    assert (record["kind"], record["state"], record["tier"], record["origin"]) == (
        "procedural",
        "active",
        "hot",
        "recorded",
    )
    assert (record["prior_alpha"], record["prior_beta"]) == pytest.approx((1.6, 0.4))
    assert record["confidence"] == pytest.approx(0.8)
    assert record["importance"] == 0.85
    assert record["created_at"] == record["updated_at"] == NOW
    # a file written before the promotion ladder existed: never promoted
    assert (record["promoted_from"], record["promoted_at"], record["promotion_reason"]) == ("", None, "")


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"outcome": "win"}, "outcome", "must be one of success, failure, mixed"),
        ({"confidence": 1.5}, "confidence", "at most 1.0"),
        ({"tags": ["ok", 3]}, "tags", "item 2 must be a string"),
        ({"created_at": "2026-03-01T12:00:00"}, "created_at", "needs a UTC offset"),
        ({"title": ""}, "title", "must not be empty"),
        ({"content": "a\x00b"}, "content", "NUL"),
        ({"colour": "red"}, "colour", "unknown field"),
        ({"state": "active", "archived_reason": "manual"}, "archived_reason", "active memory has no archived reason"),
        ({"team": "platform"}, "project", "a project memory names its project (and no team"),
        ({"alpha": 2.0}, "beta", "alpha and beta go together"),
        ({"usage_count": -1}, "usage_count", "whole number"),
        ({"embedding": [0.1, True]}, "embedding", "finite numbers"),
        ({"promoted_from": "dream"}, "promoted_from", "must be one of '', working, episodic"),
        ({"promotion_reason": "x" * 501}, "promotion_reason", "too long"),
    ],
)
def test_a_bad_field_is_named_with_what_is_wrong(fields, field, words):
    with pytest.raises(ef.Bad) as caught:
        lines.record_parse(memory(**fields), VOCAB, now=NOW)

    assert caught.value.field == field
    assert words in caught.value.message


def test_nan_and_infinity_are_not_json():
    with pytest.raises(ef.LineErrorRaised) as caught:
        lines.line_parse(
            "line 4", '{"type": "memory", "id": "m", "title": "t", "content": "c", "retention": NaN}', VOCAB, now=NOW
        )

    assert caught.value.error.where == "line 4" and "not valid JSON" in caught.value.error.message


def test_a_line_nested_too_deeply_is_refused_before_the_parser_recurses():
    deep = '{"type": "memory", "id": "m", "title": "t", "content": ' + "[" * 5000 + "]" * 5000 + "}"
    with pytest.raises(ef.LineErrorRaised) as caught:
        lines.line_parse("line 9", deep, VOCAB, now=NOW)

    assert caught.value.error.where == "line 9"
    assert "nested deeper than 64 levels of arrays and objects" in caught.value.error.message


def test_a_valid_file_counts_what_it_holds_and_gives_every_memory_a_new_id():
    checker, errors = check(
        HEADER,
        memory("m1"),
        memory("m2", state="archived", archived_reason="consolidated", consolidated_into="m1"),
        {"type": "link", "source": "m1", "target": "m2", "kind": "consolidates"},
        {"type": "signal", "memory": "m1", "signal": "explicit", "positive": True},
        {"type": "summary", "id": "s1", "memory": "m1", "source_memory_ids": ["m2"], "summary": "Seeds pinned."},
        {"type": "session_use", "memory": "m1", "session_key": "abc", "via": "search"},
        {"type": "end", "counts": {"memory": 2, "link": 1, "signal": 1, "summary": 1, "session_use": 1}},
    )

    assert errors == []
    assert checker.counts == {"weights": 0, "memory": 2, "link": 1, "signal": 1, "summary": 1, "session_use": 1}
    assert checker.active_memories == 1
    assert checker.project_slugs == {"web-app"}
    assert set(checker.ids.memories) == {"m1", "m2"}
    assert len(set(checker.ids.memories.values())) == 2 and not set(checker.ids.memories.values()) & {"m1", "m2"}


def test_every_problem_is_reported_with_its_line_in_file_order():
    _, errors = check(
        HEADER,
        memory("m1"),
        memory("m1"),
        "{not json",
        {"type": "link", "source": "m1", "target": "ghost", "kind": "references"},
        {"type": "link", "source": "m1", "target": "m1", "kind": "references"},
        {"type": "signal", "memory": "m1", "signal": "explicit", "positive": "yes"},
        END,
    )

    assert [(e.where, e.field) for e in errors] == [
        ("line 3", "id"),
        ("line 4", ""),
        ("line 5", "target"),
        ("line 6", "target"),
        ("line 7", "positive"),
    ]
    assert str(errors[2]) == "line 5, field target: no memory with id 'ghost' in this file"


def test_a_file_without_its_header_or_its_end_is_refused():
    _, no_header = check(memory("m1"), END)
    _, cut_short = check(HEADER, memory("m1"))
    _, empty = check()

    assert no_header[0].where == "line 1" and "first line must be the header" in no_header[0].message
    assert cut_short == [ef.LineError("line 2", "", cut_short[0].message)] and "cut short" in cut_short[0].message
    assert "empty" in empty[0].message


def test_the_end_lines_counts_must_match_and_nothing_may_follow_it():
    _, errors = check(HEADER, memory("m1"), {"type": "end", "counts": {"memory": 3}}, memory("m2"))

    assert [(e.where, e.field) for e in errors] == [("line 4", "type"), ("end line", "counts")]


def test_an_unsupported_version_is_refused():
    _, errors = check({**HEADER, "version": 3}, END)

    assert errors[0].field == "version" and "not supported" in errors[0].message


def test_a_summary_needs_a_project_memory_unless_everything_goes_into_one_project():
    summary = {"type": "summary", "id": "s1", "memory": "m1", "summary": "Seeds pinned."}
    lines = (HEADER, memory("m1", project=None), summary, END)

    assert [(e.where, e.field) for e in check(*lines)[1]] == [("line 3", "memory")]
    assert check(*lines, into_project=True)[1] == []


def test_errors_stop_at_the_limit():
    checker, errors = check(HEADER, *[{"type": "memory"}] * (ef.MAX_ERRORS + 5), END)

    assert len(errors) == ef.MAX_ERRORS and checker.truncated


def test_remapping_rewrites_every_reference_consistently():
    checker, _ = check(HEADER, memory("m1"), memory("m2", consolidated_into="m1"), memory("m3"), END)
    new = checker.ids.memories
    m2 = lines.record_parse(memory("m2", consolidated_into="m1"), VOCAB, now=NOW)
    summary = lines.record_parse(
        {
            "type": "summary",
            "id": "s1",
            "memory": "m1",
            "source_memory_ids": ["m2"],
            "summary": "Seeds pinned.",
            "superseded_facts": [
                {"original_fact": "x", "superseded_by": "y", "source_memory_id": "m2"},
                {"original_fact": "u", "superseded_by": "v", "source_memory_id": "m3"},  # not a source of s1
                {"original_fact": "p", "superseded_by": "q", "source_memory_id": "elsewhere"},  # not in the file
            ],
        },
        VOCAB,
        now=NOW,
    )
    checker.ids.summary_add("s1")

    assert checks.memory_remap(m2, checker.ids)["consolidated_into"] == new["m1"]
    assert checks.memory_remap(m2, checker.ids)["id"] == new["m2"]
    link = checks.link_remap({"source": "m1", "target": "m2"}, checker.ids)
    assert (link["source"], link["target"]) == (new["m1"], new["m2"])
    remapped = checks.summary_remap(summary, checker.ids)
    assert remapped["memory"] == new["m1"] and remapped["source_memory_ids"] == [new["m2"]]
    assert remapped["superseded_facts"][0]["source_memory_id"] == new["m2"]
    # a fact naming no source of the summary names none, as consolidation stores it
    assert [fact["source_memory_id"] for fact in remapped["superseded_facts"][1:]] == ["", ""]
    assert checks.memory_ref_remap({"memory": "m2"}, checker.ids)["memory"] == new["m2"]


def test_lines_are_compact_ascii_json_and_split_on_newlines_only():
    line = lines.line_dump({"type": "memory", "title": "naïve\u2028café"})

    assert line.endswith("\n") and line.count("\n") == 1 and line.isascii()
    assert json.loads(line)["title"] == "naïve\u2028café"
    assert list(lines.lines_split('{"a":1}\r\n\n{"b":"x\u2028y"}\n')) == [(1, '{"a":1}'), (3, '{"b":"x\u2028y"}')]


def test_timestamps_read_back_as_they_were_written():
    moment = datetime(2026, 1, 31, 9, 30, 15, 123456, tzinfo=UTC)

    assert ef.when_parse(ef.when_dump(moment)) == moment
    assert ef.when_parse("2026-01-31T09:30:15Z") == moment.replace(microsecond=0)


# --- a summary's parts keep the contract summary_store keeps (memories/context/summary_parts.py) --------

DECISION = {"decision": "Use FastAPI", "rationale": "native async", "outcome": None, "confidence": "high"}
FACT = {"original_fact": "Flask", "superseded_by": "FastAPI", "source_memory_id": "m1"}


def summary_line(**fields: Any) -> dict[str, Any]:
    return {"type": "summary", "id": "s1", "memory": "m1", "source_memory_ids": ["m1"], "summary": "S.", **fields}


def without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != key}


def decision(**fields: Any) -> dict[str, Any]:
    return {**DECISION, **fields}


def fact(**fields: Any) -> dict[str, Any]:
    return {**FACT, **fields}


P = pytest.param
MALFORMED_SUMMARIES = [
    P({"decisions": [without(DECISION, "outcome")]}, "decisions", "item 1: lacks the key 'outcome'", id="no-outcome"),
    P({"decisions": [{"decision": "Use it"}]}, "decisions", "item 1: lacks the key 'rationale'", id="text-only"),
    P({"decisions": [DECISION, decision(decision=42)]}, "decisions", "item 2: decision must be a string (got int)",
      id="decision-a-number"),
    P({"decisions": [decision(rationale=None)]}, "decisions", "rationale must be a string (got NoneType)",
      id="rationale-null"),
    P({"decisions": [decision(outcome=["x"])]}, "decisions", "outcome must be a string (got list)", id="outcome-list"),
    P({"decisions": [decision(confidence="sure")]}, "decisions", "must be one of high, medium, low", id="confidence"),
    P({"decisions": [decision(why="x")]}, "decisions", "item 1: has an unknown key 'why'", id="unknown-key"),
    P({"decisions": [decision(decision="  ")]}, "decisions", "decision must not be empty", id="decision-blank"),
    P({"decisions": [decision(decision="x" * 1001)]}, "decisions", "too long (1001 characters", id="too-long"),
    P({"decisions": [DECISION] * 21}, "decisions", "has 21 items; at most 20", id="too-many"),
    P({"decisions": ["Use it"]}, "decisions", "item 1: must be an object {decision, rationale", id="a-string"),
    P({"decisions": DECISION}, "decisions", "must be a list (got dict)", id="decisions-an-object"),
    P({"superseded_facts": [without(FACT, "source_memory_id")]}, "superseded_facts",
      "item 1: lacks the key 'source_memory_id'", id="fact-without-source"),
    P({"superseded_facts": [fact(original_fact=5)]}, "superseded_facts", "original_fact must be a string (got int)",
      id="original-a-number"),
    P({"superseded_facts": [fact(superseded_by={"t": 1})]}, "superseded_facts", "superseded_by must be a string",
      id="superseded-by-an-object"),
    P({"superseded_facts": [fact(source_memory_id=None)]}, "superseded_facts", "source_memory_id must be a string",
      id="source-null"),
    P({"superseded_facts": [fact(superseded_by="")]}, "superseded_facts", "superseded_by must not be empty",
      id="superseded-by-empty"),
    P({"superseded_facts": [[]]}, "superseded_facts", "item 1: must be an object", id="fact-a-list"),
    P({"key_facts": ["ok", 7]}, "key_facts", "item 2: the fact must be a string (got int)", id="key-fact-a-number"),
    P({"key_facts": [""]}, "key_facts", "item 1: the fact must not be empty", id="key-fact-empty"),
    P({"key_facts": ["fact"] * 21}, "key_facts", "has 21 items; at most 20", id="too-many-key-facts"),
    P({"key_facts": ["x" * 1001]}, "key_facts", "too long (1001 characters; at most 1000)", id="key-fact-too-long"),
    P({"summary": ""}, "summary", "a ready summary has a text", id="ready-without-text"),
    P({"status": "rejected", "error": "x" * 2001}, "error", "at most 2000", id="error-too-long"),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "field", "message"), MALFORMED_SUMMARIES)
def test_a_summary_whose_parts_break_the_stored_contract_is_refused_naming_line_field_and_item(fields, field, message):
    _, errors = check(HEADER, memory("m1"), summary_line(**fields), END)

    assert [(e.where, e.field) for e in errors] == [("line 3", field)]
    assert message in errors[0].message


def test_a_summary_as_consolidation_stores_it_is_accepted():
    fields = {"key_facts": ["FastAPI is the framework"], "decisions": [DECISION, {**DECISION, "outcome": "3x"}],
              "superseded_facts": [FACT, {**FACT, "source_memory_id": ""}]}  # fmt: skip

    assert check(HEADER, memory("m1"), summary_line(**fields), END)[1] == []
    assert check(HEADER, memory("m1"), summary_line(status="rejected", summary="", error="no JSON"), END)[1] == []


@pytest.mark.parametrize(
    ("fields", "field"),
    [({"weight": 5.0}, "weight"), ({"weight": -0.5}, "weight"), ({"reason": "x" * 2001}, "reason")],
    ids=["weight-above-one", "weight-below-zero", "reason-too-long"],
)
def test_a_link_is_held_to_what_every_writer_of_a_link_stores(fields, field):
    link = {"type": "link", "source": "m1", "target": "m2", "kind": "references", **fields}

    _, errors = check(HEADER, memory("m1"), memory("m2"), link, END)

    assert [(e.where, e.field) for e in errors] == [("line 4", field)]


def test_a_promotion_proposal_is_no_line_of_the_format():
    _, errors = check(HEADER, memory("m1"), {"type": "proposal", "memory": "m1"}, END)

    assert [(e.where, e.field) for e in errors] == [("line 3", "type")]
