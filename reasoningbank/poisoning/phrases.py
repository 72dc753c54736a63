"""How a phrase rule runs in time linear in the text, with a small constant: a pattern is tried only
near one of its keywords.

A memory is up to ~20 KB and fully attacker-controlled, and the detector runs on every write. A pattern
such as "send, up to six words, a secret" tried from every position of a text made of "send the send
the …" explores six words and a dozen secret spellings from each "send": linear, but at ~2 µs a
character, and a hundred patterns add up. So each ``Phrase`` names ``keys``: literal strings one of
which every match contains, chosen among its rarest parts (the secret, not the verb). The keys are
found first (a literal alternation, which the regex engine skips through fast), and the pattern runs
only in the regions within ``reach`` characters of a key. A text without the keys costs one fast scan
per key set (shared by the phrases that name the same keys); a text dense with keys costs the pattern
over those regions only.

Patterns read the *lowered* copy of the folded text (``Text.lower``, same length, same offsets) and are
written in lower case without ``re.IGNORECASE``: case-insensitive matching defeats the engine's
literal fast paths. A phrase about capitals (``SYSTEM:``) sets ``cased`` and reads the text as written.

Each pattern is bounded: no match is longer than ``reach`` and no lookaround reads more than
``LOOKAROUND`` characters past it (tests/reasoningbank/poisoning/test_phrases.py checks both, and that
the keys are necessary)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__pure__ = True  # Django-free (tests/test_import_contracts.py)

LOOKAROUND = 100
DEFAULT_REACH = 400
# A rule stops reading a text after this many findings: the memory is flagged by it either way, and a
# text made of one payload repeated a hundred thousand times costs no more than a hundred.
MAX_HITS_PER_RULE = 100


def lower_same_length(text: str) -> str:
    """``text`` in lower case with every offset kept (a few characters lower to two: those stay)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := char.lower()) == 1 else char for char in text)


class Text:
    """A folded text being read by the phrase rules: as written, lowered, and where each key set occurs
    (found once per text, shared by the phrases that name the same keys)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lower = lower_same_length(text)
        self._starts: dict[re.Pattern[str], list[int]] = {}
        self._regions: dict[tuple[re.Pattern[str], int], list[tuple[int, int]]] = {}
        self._found: dict[str, int] = {}

    def hit(self, rule: str, start: int, end: int) -> tuple[str, int, int]:
        """A finding of ``rule``, counted (see ``full``)."""
        self._found[rule] = self._found.get(rule, 0) + 1
        return rule, start, end

    def full(self, rule: str) -> bool:
        """``rule`` has found ``MAX_HITS_PER_RULE`` spans in this text: it need not read on."""
        return self._found.get(rule, 0) >= MAX_HITS_PER_RULE

    def regions(self, keys: re.Pattern[str], words: tuple[str, ...], reach: int) -> list[tuple[int, int]]:
        """The stretches within ``reach`` of an occurrence of ``keys`` (the alternation of ``words``; plus
        ``LOOKAROUND`` after), overlapping ones merged."""
        starts = self._starts.get(keys)
        if starts is None:
            # a text holds few of the keys: a substring test per key is quicker than the scan
            present = any(map(self.lower.__contains__, words))
            starts = [match.start() for match in keys.finditer(self.lower)] if present else []
            self._starts[keys] = starts
        if not starts:
            return []
        cached = self._regions.get((keys, reach))
        if cached is not None:
            return cached
        found: list[tuple[int, int]] = []
        length, gap = len(self.lower), 2 * reach + LOOKAROUND  # keys further apart: two regions
        first = last = starts[0]
        for start in starts:
            if start - last > gap:
                found.append((max(0, first - reach), min(length, last + reach + LOOKAROUND)))
                first = start
            last = start
        found.append((max(0, first - reach), min(length, last + reach + LOOKAROUND)))
        self._regions[(keys, reach)] = found
        return found


@dataclass(frozen=True)
class Phrase:
    pattern: re.Pattern[str]
    keys: re.Pattern[str]
    words: tuple[str, ...]
    reach: int
    cased: bool

    def finditer(self, scan: Text, rule: str) -> Iterable[re.Match[str]]:
        """The pattern's matches in ``scan``, as ``pattern.finditer`` over the whole text would give them,
        until ``rule`` is full."""
        regions = scan.regions(self.keys, self.words, self.reach)
        return self._matches(scan, rule, regions) if regions else ()

    def _matches(self, scan: Text, rule: str, regions: list[tuple[int, int]]) -> Iterator[re.Match[str]]:
        text = scan.text if self.cased else scan.lower
        for low, high in regions:
            for match in self.pattern.finditer(text, low, high):
                if scan.full(rule):
                    return
                yield match


PHRASES: list[Phrase] = []  # every phrase of every rule module (the tests check them all)
_KEY_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {}


def phrase(pattern: str, keys: tuple[str, ...], *, reach: int = DEFAULT_REACH, cased: bool = False) -> Phrase:
    """A phrase rule's pattern (lower case unless ``cased``) and the literal keys one of which each match
    contains (lower case: they are looked for in the lowered text)."""
    ordered = tuple(sorted(set(keys), key=lambda key: (-len(key), key)))
    if ordered not in _KEY_PATTERNS:
        _KEY_PATTERNS[ordered] = re.compile("|".join(re.escape(key) for key in ordered))
    made = Phrase(re.compile(pattern), _KEY_PATTERNS[ordered], ordered, reach, cased)
    PHRASES.append(made)
    return made
