"""The labelled consolidation set (bench/data/consolidation_set.jsonl; docs/consolidation.md#thresholds)
keeps its format: every line parses, labels and cues are known, required fields are present, ids are
unique, and the set stays big and varied enough to calibrate thresholds on. No database: this reads one
file.

The format is specified in bench/data/README.md; bench/consolidation_quality.py relies on what is
checked here (unique contents, complete pair labels, dated supersessions in order).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest

SET_PATH = Path(__file__).resolve().parent.parent / "bench" / "data" / "consolidation_set.jsonl"
SCHEMA_VERSION = 1
KINDS = {"duplicate", "paraphrase_detail", "complementary", "contradiction", "supersession", "unrelated"}
LABELS = KINDS  # a pair's label is one of the item kinds
CUES = {"negation", "polarity", "number", "version", "unit", "order", "choice"}
OUTCOMES = {"success", "failure", "mixed"}
ITEM_FIELDS = {"schema_version", "id", "kind", "topic", "memories", "pairs"}
OPTIONAL_ITEM_FIELDS = {"source", "note"}
MEMORY_FIELDS = {"key", "title", "description", "content", "outcome"}
OPTIONAL_MEMORY_FIELDS = {"created_at", "tags"}
# the record service's limits (memories/core/services.py TITLE_MAX, DESCRIPTION_MAX, CONTENT_MAX)
LIMITS = {"title": 200, "description": 2000, "content": 20000}


def _parse_time(value: str) -> datetime:
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert moment.tzinfo is not None, f"created_at {value!r} must carry a UTC offset or Z"
    return moment


@pytest.fixture(scope="module")
def items() -> list[dict[str, Any]]:
    lines = SET_PATH.read_text(encoding="utf-8").splitlines()
    parsed = []
    for number, line in enumerate(lines, start=1):
        assert line.strip(), f"line {number} is empty"
        item = json.loads(line)  # every line is one JSON object
        assert isinstance(item, dict), f"line {number} is not a JSON object"
        parsed.append(item)
    return parsed


def test_size_and_every_kind_present(items: list[dict[str, Any]]) -> None:
    assert len(items) >= 300
    kinds = Counter(item["kind"] for item in items)
    assert set(kinds) == KINDS, kinds
    labels = Counter(pair["label"] for item in items for pair in item["pairs"])
    assert all(labels[label] >= 30 for label in LABELS), labels
    cues = Counter(pair["cue"] for item in items for pair in item["pairs"] if pair["label"] == "contradiction")
    assert set(cues) == CUES, cues


def test_items_have_the_required_fields(items: list[dict[str, Any]]) -> None:
    for item in items:
        where = item.get("id", item)
        assert item.get("schema_version") == SCHEMA_VERSION, where
        assert ITEM_FIELDS <= set(item) <= ITEM_FIELDS | OPTIONAL_ITEM_FIELDS, (where, set(item) ^ ITEM_FIELDS)
        assert item["kind"] in KINDS, where
        assert item["id"] == f"{item['kind']}/{item['topic']}", where
        assert 2 <= len(item["memories"]) <= 4, where
        for memory in item["memories"]:
            assert MEMORY_FIELDS <= set(memory) <= MEMORY_FIELDS | OPTIONAL_MEMORY_FIELDS, (where, memory)
            for name, limit in LIMITS.items():
                assert isinstance(memory[name], str) and memory[name].strip() == memory[name], (where, name)
                assert 0 < len(memory[name]) <= limit, (where, name)
            assert memory["outcome"] in OUTCOMES, where
            if "created_at" in memory:
                _parse_time(memory["created_at"])


def test_ids_and_texts_are_unique(items: list[dict[str, Any]]) -> None:
    ids = Counter(item["id"] for item in items)
    assert [i for i, n in ids.items() if n > 1] == []
    # the bench's scripted judge finds the memories a prompt is about by their content
    contents = Counter(m["content"].lower() for item in items for m in item["memories"])
    assert [c for c, n in contents.items() if n > 1] == []
    for item in items:
        keys = [m["key"] for m in item["memories"]]
        assert len(set(keys)) == len(keys), item["id"]


def test_pairs_are_labelled_completely_and_consistently(items: list[dict[str, Any]]) -> None:
    for item in items:
        where = item["id"]
        memories = {m["key"]: m for m in item["memories"]}
        seen: set[frozenset[str]] = set()
        for pair in item["pairs"]:
            assert set(pair) <= {"a", "b", "label", "cue"}, (where, pair)
            assert pair["a"] in memories and pair["b"] in memories and pair["a"] != pair["b"], (where, pair)
            assert pair["label"] in LABELS, (where, pair)
            key = frozenset((pair["a"], pair["b"]))
            assert key not in seen, (where, "pair listed twice", pair)
            seen.add(key)
            if pair["label"] == "contradiction":
                assert pair.get("cue") in CUES, (where, pair)
            else:
                assert "cue" not in pair, (where, pair)
            if pair["label"] == "supersession":
                older, newer = memories[pair["a"]], memories[pair["b"]]
                assert "created_at" in older and "created_at" in newer, (where, "supersession needs dates")
                assert _parse_time(older["created_at"]) < _parse_time(newer["created_at"]), (where, "a is the older")
        # every pair of an item has an expectation: nothing in an item is left ambiguous
        assert seen == {frozenset(p) for p in combinations(memories, 2)}, where
        assert item["kind"] in {pair["label"] for pair in item["pairs"]}, where


def test_the_eight_opposite_pairs_once_proposed_for_merging_are_in(items: list[dict[str, Any]]) -> None:
    # the file tags them "issue-17" (a data value, bench/data/README.md)
    opposite = [item for item in items if item.get("source") == "issue-17"]
    assert len(opposite) == 8
    assert all(item["kind"] == "contradiction" for item in opposite)
    titles = " | ".join(m["title"] for item in opposite for m in item["memories"])
    for phrase in ("retry failed payment webhooks", "float", "decimal", "CSRF", "before deploying", "Node to 18"):
        assert phrase in titles, phrase
