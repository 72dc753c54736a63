"""Secrets split so that no rule sees them whole: a zero-width character inside a token
("rb_abc<U+200B>def", pasted from a chat or a web page), or a shell line continuation through it
("export TOKEN=ghp_abc\\<newline>def"). Both are taken out of a working copy before any rule runs;
a secret found in it is mapped back to the text as given and replaced there whole, split included,
and the rest of the text keeps its zero-width characters and continuations.

Taken out: the zero-width characters (U+200B–U+200D, U+2060–U+2064, U+FEFF, U+180E) and the soft
hyphen (U+00AD), raw or JSON-escaped ("\\u200b"); a backslash right before a line break (real, or
JSON-escaped "\\\\\\n") that is not itself escaped. What the shell keeps of a continuation (the next
line's indentation) stays.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad"
_ZERO_WIDTH_RE = re.compile(f"[{_ZERO_WIDTH}]")
_ESCAPED_ZERO_WIDTH = frozenset(f"{ord(c):04x}" for c in _ZERO_WIDTH)  # after "\u" in JSON
# (literal, how many characters of it go): a continuation, raw and JSON-escaped
_CONTINUATIONS = (("\\\r\n", 3), ("\\\n", 2), ("\\\\\\r\\n", 6), ("\\\\\\n", 4))


@dataclass(frozen=True)
class Normalised:
    """The working copy, and where characters were taken out of the text as given: at each position
    ``cuts[i]`` of the copy, ``removed[i]`` characters were taken out there and before."""

    text: str
    cuts: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """``[start, end)`` of the copy in the text as given (what was taken out inside it included)."""
        if not self.cuts:
            return start, end
        return start + self._removed_up_to(start), end + self._removed_up_to(end - 1)

    def _removed_up_to(self, position: int) -> int:
        index = bisect_right(self.cuts, position)
        return self.removed[index - 1] if index else 0


def _escaped(text: str, index: int) -> bool:
    """``text[index]`` (a backslash) is itself escaped by the backslash before it."""
    return index > 0 and text[index - 1] == "\\"


def _sites(text: str) -> list[tuple[int, int]]:
    """(start, end) of every run of characters to take out, in order, not overlapping."""
    sites: list[tuple[int, int]] = []
    if not text.isascii():  # raw zero-width characters are not ASCII
        sites.extend(match.span() for match in _ZERO_WIDTH_RE.finditer(text))
    for literal, size in _CONTINUATIONS:
        index = text.find(literal)
        while index != -1:
            if not _escaped(text, index):
                sites.append((index, index + size))
            index = text.find(literal, index + size)
    index = text.find("\\u")
    while index != -1:
        if text[index + 2 : index + 6].lower() in _ESCAPED_ZERO_WIDTH and not _escaped(text, index):
            sites.append((index, index + 6))
        index = text.find("\\u", index + 2)
    sites.sort()
    merged: list[tuple[int, int]] = []
    for start, end in sites:  # "\\\r\n" is also found as "\\\n" one character on: keep the first
        if merged and start < merged[-1][1]:
            continue
        merged.append((start, end))
    return merged


def splits_normalise(text: str) -> Normalised:
    sites = _sites(text)
    if not sites:
        return Normalised(text)
    pieces: list[str] = []
    cuts: list[int] = []
    removed: list[int] = []
    done = total = 0
    for start, end in sites:
        pieces.append(text[done:start])
        cuts.append(start - total)
        total += end - start
        removed.append(total)
        done = end
    pieces.append(text[done:])
    return Normalised("".join(pieces), tuple(cuts), tuple(removed))
