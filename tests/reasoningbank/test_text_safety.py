"""Agent-facing text without terminal escapes, control characters or bidi controls
(reasoningbank/text_safety.py): a table of what goes and what must survive, and its invariants."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reasoningbank.text_safety import text_neutralise, value_neutralise

REMOVED = [
    # ANSI / ECMA-48 sequences go whole, leaving no "[31m" debris
    ("colour", "\x1b[31mred\x1b[0m text", "red text"),
    ("256 and true colour", "\x1b[38;5;196ma\x1b[38;2;255;0;0mb\x1b[m", "ab"),
    ("cursor and screen", "a\x1b[2J\x1b[H\x1b[1Ab\x1b[?25l", "ab"),
    ("window title (OSC, BEL)", "\x1b]0;pwned\x07title", "title"),
    ("clipboard write (OSC 52, ST)", "\x1b]52;c;cm0gLXJmIH4=\x1b\\x", "x"),
    ("hyperlink keeps its text", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click"),
    ("device control string", "\x1bPq#0;2;0;0;0\x1b\\ok", "ok"),
    ("terminal reset", "\x1bcreset", "reset"),
    ("8-bit CSI", "\x9b31mred", "red"),
    ("lone escape", "end\x1b", "end"),
    # other C0 and C1 controls
    ("NUL, BEL, backspace", "a\x00b\x07c\x08d", "abcd"),
    ("vertical tab, form feed", "a\x0bb\x0cc", "abc"),
    ("DEL and C1", "a\x7fb\x85c\x9fd", "abcd"),
    ("CRLF becomes a newline", "one\r\ntwo", "one\ntwo"),
    ("a lone carriage return (line overwrite) goes", "safe\rrm -rf", "saferm -rf"),
    # bidirectional formatting ("Trojan Source")
    ("right-to-left override", "access\u202e\u2066 // admin\u2069\u2066", "access // admin"),
    ("embeddings and pop", "\u202aa\u202bb\u202cc\u202dd", "abcd"),
    ("isolates", "\u2066a\u2067b\u2068c\u2069", "abc"),
    ("marks", "a\u200eb\u200fc\u061cd", "abcd"),
    # tag characters: invisible ASCII a model still reads
    ("hidden tag text", "ok\U000e0049\U000e0047\U000e004e\U000e004f\U000e0052\U000e0045", "ok"),
    ("tags after the flag but not a flag sequence", "\U0001f3f4\U000e0041", "\U0001f3f4"),
]

KEPT = [
    ("plain ASCII", "Always set connect and read timeouts."),
    ("newline and tab", "steps:\n\t1. run\n\t2. check"),
    ("accents", "Café, naïve, Ångström, żółć"),
    ("CJK", "使用上下文包装错误 エラー 오류"),
    ("right-to-left scripts", "עברית العربية فارسی"),
    ("Persian zero-width non-joiner", "می\u200cخواهم"),
    ("emoji", "🚀 ✅ ❤️"),
    ("emoji ZWJ sequences", "👩\u200d💻 👨\u200d👩\u200d👧\u200d👦 🏳️\u200d🌈"),
    ("skin tones and variation selectors", "👍🏽 ☺︎ ☺️"),
    ("subdivision flag (tag sequence)", "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"),
    ("escapes written as text", r"print('\x1b[31m') and \u202e"),
    ("zero-width space and joiner", "a\u200bb\u200dc"),
]


@pytest.mark.parametrize(("case", "text", "expected"), REMOVED, ids=[c[0] for c in REMOVED])
def test_controls_and_escape_sequences_are_removed(case: str, text: str, expected: str) -> None:
    assert text_neutralise(text) == expected


@pytest.mark.parametrize(("case", "text"), KEPT, ids=[c[0] for c in KEPT])
def test_unicode_text_survives_unchanged(case: str, text: str) -> None:
    assert text_neutralise(text) == text


def test_every_string_of_a_json_value_is_neutralised_keys_included() -> None:
    value = {
        "title": "\x1b[1mbold",
        "tags": ["a\u202e", "b"],
        "n": 3,
        "ok": True,
        "none": None,
        "nested": [{"\x1b[31mkey": ("x\x07",)}],
    }
    assert value_neutralise(value) == {
        "title": "bold",
        "tags": ["a", "b"],
        "n": 3,
        "ok": True,
        "none": None,
        "nested": [{"key": ("x",)}],
    }


UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@given(st.text())
def test_nothing_unsafe_is_ever_left_and_a_second_pass_changes_nothing(text: str) -> None:
    once = text_neutralise(text)
    assert not UNSAFE.search(once)
    assert text_neutralise(once) == once


@given(st.text(alphabet=st.characters(exclude_categories=("Cc", "Cf", "Cs"))))
def test_text_without_control_or_format_characters_is_untouched(text: str) -> None:
    assert text_neutralise(text) == text
