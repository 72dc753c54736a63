"""What a phrase rule asks about the words around a match: is it negated ("never send …"), is it
quoted as an example ("phrases like 'ignore previous instructions'"), is it inside an inline code span.

Each looks at a bounded window before or after the match, so a rule stays linear in the text. A check
that would search a window around every match (is there an address near this "send"?) runs once over
the whole text instead (``Marks``) and is then asked per match: a text with thousands of matches costs
one pass, not one window search per match."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

__pure__ = True  # Django-free (tests/test_import_contracts.py)

_NEGATION = re.compile(
    r"\b(?:never|not|no|don'?t|doesn'?t|didn'?t|won'?t|must ?n[o']t|should ?n[o']t|cannot|can'?t|avoid|avoids|"
    r"refuse to|refuses to|prevent|prevents|blocks?|forbid|forbids|forbidden|disallow|nobody|no one)"
    r"\b(?:[^\w.!?;\n]{1,3}[^\W_]{1,24}){0,3}[^\w.!?;\n]{0,3}$",
    re.IGNORECASE,
)
# Words that introduce an example being talked about rather than said.
_MENTION_CUE = re.compile(
    r"\b(?:like|such as|e\.g\.|eg|for example|for instance|phrases?|strings?|payloads?|attacks?|patterns?|"
    r"examples?|detects?|detecting|detection|flags?|flagged|blocks?|blocked|rejects?|filters?|filtered|"
    r"classif\w*|contains?|containing|matches|matching|quoted|injections?|jailbreaks?|red[- ]team\w*|"
    r"tests? (?:with|for|that)|canary)\b",
    re.IGNORECASE,
)
_OPEN_QUOTES = "\"'`“‘«„"
_CLOSE_QUOTES = "\"'`”’»“"


def negated(text: str, start: int, window: int = 40) -> bool:
    """The clause before ``start`` ends in a negation within three words ("never send", "do not")."""
    return _NEGATION.search(text, max(0, start - window), start) is not None


def quoted_mention(text: str, start: int, end: int, window: int = 80) -> bool:
    """The match sits in quotes (the quote may open a few characters before it) and the words before
    the quote name it as an example: "… strings like 'ignore all previous instructions' …"."""
    before = text[max(0, start - 4) : start]
    opening = max((before.rfind(q) for q in _OPEN_QUOTES), default=-1)
    if opening < 0:
        return False
    quote_at = max(0, start - 4) + opening
    closing = any(q in text[end : end + 60] for q in _CLOSE_QUOTES)
    if not closing:
        return False
    return _MENTION_CUE.search(text, max(0, quote_at - window), quote_at) is not None


CODE_SPAN_WINDOW = 400


def in_code_span(text: str, start: int, end: int) -> bool:
    """Between two backticks of one line (within a few hundred characters): inline code, shown as code,
    not said. Bounded, so a megabyte on one line is not read again for every match."""
    line_start = max(text.rfind("\n", max(0, start - CODE_SPAN_WINDOW), start) + 1, start - CODE_SPAN_WINDOW, 0)
    if text.count("`", line_start, start) % 2 == 0:
        return False
    line_end = text.find("\n", end, end + CODE_SPAN_WINDOW)
    return "`" in text[end : line_end if line_end >= 0 else end + CODE_SPAN_WINDOW]


class Marks:
    """Where ``pattern`` matches in ``text`` (one pass), asked per match: is there a mark within a span?"""

    def __init__(self, pattern: re.Pattern[str], text: str) -> None:
        found = [match.span() for match in pattern.finditer(text)]
        self._starts = [start for start, _ in found]
        self._ends = [end for _, end in found]  # increasing too: the matches do not overlap

    def within(self, low: int, high: int) -> bool:
        """A mark lies wholly inside ``low:high``."""
        at = bisect_left(self._starts, max(0, low))
        return at < len(self._starts) and self._ends[at] <= high

    def last_before(self, position: int) -> tuple[int, int] | None:
        """The last mark that ends at or before ``position``."""
        at = bisect_right(self._ends, position) - 1
        return (self._starts[at], self._ends[at]) if at >= 0 else None

    def next_start(self, position: int, default: int) -> int:
        """The start of the first mark at or after ``position`` (``default`` if none)."""
        at = bisect_left(self._starts, position)
        return self._starts[at] if at < len(self._starts) else default
