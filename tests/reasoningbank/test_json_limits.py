"""How deep a JSON body nests, and where it holds a NUL, decided without recursing into it
(reasoningbank/json_limits.py): Python's own parser dies with RecursionError near a thousand levels."""

from __future__ import annotations

import json

import pytest

from reasoningbank.json_limits import (
    JSON_MAX_DEPTH_DEFAULT,
    json_body_nul_field,
    json_depth,
    json_depth_exceeds,
    json_nul_field,
)


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("5", 0),
        ('"[[[{{{"', 0),  # brackets inside a string are text
        ('["a\\"[[[", {"b": [1, [2]]}]', 4),
        ('{"a": {"b": {"c": []}}}', 4),
        ("[" * 1000 + "]" * 1000, 1000),
        ("[" * 70, 70),  # unterminated: what a parser would recurse into before failing
        ('["\\\\"]', 1),  # an escaped backslash ends the string
    ],
)
def test_depth_counts_nested_arrays_and_objects_outside_strings(text, depth):
    assert json_depth(text) == depth
    assert json_depth(text.encode()) == depth


def test_a_body_just_at_the_limit_passes_and_one_level_more_does_not():
    at_limit = "[" * JSON_MAX_DEPTH_DEFAULT + "]" * JSON_MAX_DEPTH_DEFAULT
    assert not json_depth_exceeds(at_limit, JSON_MAX_DEPTH_DEFAULT)
    assert json_depth_exceeds("[" + at_limit + "]", JSON_MAX_DEPTH_DEFAULT)


def test_many_shallow_brackets_are_not_deep():
    body = json.dumps([[n] for n in range(5000)]).encode()
    assert not json_depth_exceeds(body, JSON_MAX_DEPTH_DEFAULT)
    assert json_depth(body) == 2


def test_a_nul_is_found_in_values_keys_and_array_items_and_named_by_its_top_level_field():
    assert json_nul_field({"title": "ok", "tags": ["x", "a\x00b"]}) == "tags"
    assert json_nul_field({"meta": {"a\x00": 1}}) == "meta"
    assert json_nul_field({"a\x00": 1}) == "a\\x00"
    assert json_nul_field(["fine", "bad\x00"]) == "item 1"
    assert json_nul_field({"title": "clean", "n": 3}) is None


def test_a_session_trace_may_hold_a_nul_which_session_submit_removes_but_no_other_field_may():
    assert json_nul_field({"session_id": "s-1", "trace": "binary\x00log"}) is None
    assert json_nul_field({"trace": "log", "outcome": "succ\x00ess"}) == "outcome"


def test_a_body_is_only_parsed_when_it_may_hold_a_nul():
    assert json_body_nul_field(b'{"client_name": "a\\u0000b"}') == "client_name"
    # the text \u0000 (an escaped backslash, then u0000) is not a NUL
    assert json_body_nul_field(b'{"client_name": "a\\\\u0000b"}') is None
    assert json_body_nul_field(b"not json \\u0000") is None
