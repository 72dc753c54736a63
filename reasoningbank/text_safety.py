"""Text handed to agents without the characters that make it display or act differently from what it
says (no Django here; see docs/agent-api.md, "Control characters").

A memory's text can come from anyone who may write to the bank, from an import or from an LLM. An
agent shows it in a terminal or feeds it to a model, where

* terminal escape sequences (ANSI ``ESC [ … m`` colours, cursor moves, screen clears, OSC window
  titles, hyperlinks and clipboard writes) and other C0/C1 control characters act on the terminal;
* bidirectional formatting characters (U+202A–U+202E embeddings and overrides, U+2066–U+2069
  isolates, U+200E/U+200F/U+061C marks) reorder what a human reads ("Trojan Source");
* Unicode tag characters (U+E0000–U+E007F) spell ASCII that no one sees but a model reads.

``text_neutralise`` removes them: whole escape sequences (the ``wcwidth`` library's parser, so no
``[31m`` debris is left), then any control character left except newline and tab (a CRLF becomes a
newline; a lone carriage return, which lets a terminal overwrite a line, is removed). Everything else
survives: accents, CJK, emoji with their zero-width joiners and variation selectors, the zero-width
non-joiner of Persian, and the tag sequences of subdivision flags (U+1F3F4 then tags then U+E007F).
``value_neutralise`` does the same for every string (keys included) in a JSON-like value.
"""

from __future__ import annotations

import re
from typing import Any

from wcwidth import strip_sequences

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# what a clean text never holds: C0 controls but tab and newline, DEL, C1 controls, bidi controls, tags
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}\U000e0000-\U000e007f]")
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}]")
# the 8-bit form of a control sequence (CSI), which the escape parser does not read
_C1_CSI = re.compile("\x9b[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]")
# a run of tag characters; kept only as the tail of an emoji flag (black flag, tag letters, cancel tag)
_TAGS = re.compile("(\U0001f3f4)?([\U000e0000-\U000e007f]+)")
_FLAG_TAGS = re.compile("[\U000e0020-\U000e007e]+\U000e007f")


def _tags_keep_flags(match: re.Match[str]) -> str:
    flag, tags = match.group(1), match.group(2)
    if flag and _FLAG_TAGS.fullmatch(tags):
        return match.group(0)
    return flag or ""


def text_neutralise(text: str) -> str:
    """``text`` without terminal escape sequences, control characters (but newline and tab), bidi
    controls and stray tag characters. A text holding none of them is returned as it is."""
    if not _UNSAFE.search(text):  # nearly every text: one scan, no copy
        return text
    text = text.replace("\r\n", "\n")
    if "\x1b" in text:
        text = strip_sequences(text)
    if "\x9b" in text:
        text = _C1_CSI.sub("", text)
    text = _TAGS.sub(_tags_keep_flags, text)
    return _CONTROLS.sub("", text)


def value_neutralise(value: Any) -> Any:
    """``value`` (dicts, lists, tuples, strings, numbers …) with every string neutralised, dict keys
    included; other values as they are."""
    if isinstance(value, str):
        return text_neutralise(value)
    if isinstance(value, dict):
        return {value_neutralise(k): value_neutralise(v) for k, v in value.items()}
    if isinstance(value, list):  # plain containers: DRF's ReturnDict/ReturnList need their serializer
        return [value_neutralise(v) for v in value]
    if isinstance(value, tuple):
        return tuple(value_neutralise(v) for v in value)
    return value
