"""Taking ``[REDACTED:<kind>]`` markers back out of a text written from a scrubbed one.

A trace keeps its markers (they say a secret stood there, docs/security/secret-scrubbing.md), but a memory
distilled from it must not: a marker is no advice, it reads as noise ("set the key [REDACTED:api_key] in
the environment"), and an agent served the memory may copy it into a command. The text is left readable:
where a value stands — after ``=`` or ``:``, after an ``Authorization`` scheme, inside inline code —
``<secret>`` takes the marker's place, the way documentation writes a value to fill in (``export
API_KEY=<secret>``); in prose the marker goes, with the space or the empty brackets it would leave ("the
key [REDACTED:aws_access_key_id] was expired" → "the key was expired").
"""

from __future__ import annotations

import re
from typing import Final

from reasoningbank.scrubbing.primitives import redaction_marker

SECRET_PLACEHOLDER: Final = "<secret>"

_MARKER = re.compile(re.escape(redaction_marker("")[:-1]) + r"[^\]\s]{0,80}\]")
# what comes right before a value: an assignment or a key (quoted or not), an HTTP auth scheme, a flag
_VALUE_BEFORE = re.compile(
    # "Token" as an HTTP scheme only with its capital: "rotate the token [REDACTED:…]" is prose
    r"(?:[=:][ \t]*[\"'`]?|\b(?:[Bb]earer|[Bb]asic|Token)[ \t]+|(?:^|[ \t])(?:--?[A-Za-z][\w-]*[ \t=]+|-[A-Za-z]))$"
)
_GONE = "\x00"  # where a marker was taken out of prose, until the tidying below
_TIDY: Final = (
    (re.compile(r"([(\[{\"'`])[ \t]*" + _GONE + r"[ \t]*([)\]}\"'`])"), r"\1\2"),  # "(\0)" → "()", dropped next
    (re.compile(r"[ \t]*(?:\(\)|\[\]|\{\}|\"\"|''|``)"), ""),  # the empty brackets or quotes it left
    (re.compile(r"[ \t]*" + _GONE + r"[ \t]*(?=[,.;:!?)\]}]|$)", re.MULTILINE), ""),  # before punctuation, line end
    (re.compile(r"^[ \t]*" + _GONE + r"[ \t]*", re.MULTILINE), ""),  # at a line's start
    (re.compile(r"[ \t]*" + _GONE + r"[ \t]*"), " "),  # between two words: one space
)


def redaction_markers_remove(text: str) -> str:
    """``text`` without ``[REDACTED:…]`` markers, still readable (the module's docstring says how)."""
    if _MARKER.search(text) is None:
        return text
    pieces: list[str] = []
    last = 0
    for match in _MARKER.finditer(text):
        line = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
        in_code = line.count("`") % 2 == 1
        value = in_code or _VALUE_BEFORE.search(line[-60:]) is not None
        pieces += [text[last : match.start()], SECRET_PLACEHOLDER if value or _GONE in text else _GONE]
        last = match.end()
    tidied = "".join([*pieces, text[last:]])
    for pattern, replacement in _TIDY:
        tidied = pattern.sub(replacement, tidied)
    return tidied.strip()
