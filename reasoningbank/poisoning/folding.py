"""The text the phrase rules read: what a model reads, not what the bytes are.

A model reads "ѕуѕtem" (Cyrillic ѕ, у) as "system", "ig\u200bnore" (a zero-width space inside) as
"ignore", "ｉｇｎｏｒｅ" (full-width) as "ignore" and "prévious" as "previous"; a phrase rule written
for the plain spelling must match all of them. ``text_fold`` therefore makes one folded copy of a text:

* invisible characters (zero-width spaces and joiners, word joiner, soft hyphen, BOM, Unicode tag
  characters, variation selectors, bidi controls) are dropped;
* each run of whitespace becomes one space, or one newline when it holds a line break (rules that look
  at line starts still can), so a phrase split by padding or across fields is one phrase again;
* NFKC (full-width, mathematical alphanumerics, ligatures) and, for Latin letters, accents removed;
* in a word that mixes Latin with Cyrillic or Greek letters, or of four letters or more all of which
  look Latin, the look-alikes become the Latin letter they imitate. Real Cyrillic or Greek words keep
  their letters ("игнорируй" has letters no Latin word has; short words such as "все" are left alone),
  so the Russian phrase rules still read them.

Case is kept (a few rules are about capitals: "SYSTEM:"). ``Folded.raw_offset`` maps an offset of the
folded copy back to the original text, so a smell names the span the writer actually wrote.

Pure-ASCII text, nearly every memory, takes a fast path: only the whitespace runs change.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

__pure__ = True  # Django-free (tests/test_import_contracts.py)

# Characters that render as nothing (or change nothing a reader sees) but that a model still reads.
# U+200C/U+200D (joiners) are needed by Persian and by emoji sequences: they are dropped here, where
# only matching is at stake, and judged apart by the hidden-text rule.
ZERO_WIDTH = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff"
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_INVISIBLE = re.compile(f"[{ZERO_WIDTH}{BIDI_CONTROLS}\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef]")
_WHITESPACE_RUN = re.compile(r"\s{2,}|[^\S ]")

# Cyrillic and Greek letters drawn like a Latin one (the confusables that spoof English words).
CONFUSABLES = str.maketrans(
    {
        # Cyrillic
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
        "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "һ": "h", "ӏ": "l",
        "ԛ": "q", "ԝ": "w", "ɡ": "g", "ү": "y", "ո": "n", "ս": "u", "օ": "o",
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
        "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D", "Һ": "H", "Ӏ": "I", "Ԛ": "Q",
        "Ԝ": "W", "Ү": "Y",
        # Greek
        "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u", "χ": "x",
        "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
        "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
        # Latin letters outside ASCII that pass for ASCII ones
        "ı": "i", "ȷ": "j", "ℓ": "l",
    }
)  # fmt: skip
CONFUSABLE_CHARS = frozenset(chr(code) for code in CONFUSABLES)
_LETTER_WORD = re.compile(r"[^\W\d_]+")
_ASCII_LETTER = re.compile("[A-Za-z]")


@dataclass(frozen=True)
class Folded:
    """A folded copy of ``raw`` and how to map its offsets back.

    Either ``offsets`` (one raw offset per folded character: the slow path), or ``breaks`` (the
    folded offset at which each stretch copied as it is starts, and that stretch's raw offset: the
    ASCII path, where only whitespace runs were shortened)."""

    raw: str
    text: str
    offsets: tuple[int, ...] | None = None
    breaks: tuple[tuple[int, ...], tuple[int, ...]] = ((0,), (0,))

    def raw_offset(self, index: int) -> int:
        """The offset in ``raw`` of folded offset ``index`` (``len(text)`` maps to ``len(raw)``)."""
        if index >= len(self.text):
            return len(self.raw)
        if self.offsets is not None:
            return self.offsets[index]
        folded_starts, raw_starts = self.breaks
        at = bisect_right(folded_starts, index) - 1
        return raw_starts[at] + index - folded_starts[at]

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """The raw span of the folded span ``start:end`` (its last character included whole)."""
        if end <= start:
            return self.raw_offset(start), self.raw_offset(start)
        return self.raw_offset(start), self.raw_offset(end - 1) + 1


def text_fold(raw: str) -> Folded:
    if raw.isascii():
        return _ascii_fold(raw)
    return _unicode_fold(raw)


def _ascii_fold(raw: str) -> Folded:
    pieces: list[str] = []
    folded_starts, raw_starts = [0], [0]
    done = 0
    length = 0
    for run in _WHITESPACE_RUN.finditer(raw):
        pieces.append(raw[done : run.start()])
        length += run.start() - done
        pieces.append("\n" if "\n" in run.group() else " ")
        length += 1
        done = run.end()
        folded_starts.append(length)
        raw_starts.append(done)
    if done == 0:
        return Folded(raw, raw)
    pieces.append(raw[done:])
    return Folded(raw, "".join(pieces), breaks=(tuple(folded_starts), tuple(raw_starts)))


@lru_cache(maxsize=4096)
def _char_fold(char: str) -> str:
    if char.isascii():
        return char
    decomposed = unicodedata.normalize("NFKD", char)
    if decomposed[:1].isascii() and decomposed[:1].isalpha():  # é, ñ, ç, ｉ: the Latin letter alone
        return "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFKC", char)


# A run of printable ASCII (copied as it is), a run of whitespace, a run of other visible characters (copied
# as they are when none has a decomposition: Cyrillic, CJK; else folded one by one), one other character.
_SEGMENT = re.compile(
    f"[!-~]+|\\s+|[^\\s\\x00-\\x7f{ZERO_WIDTH}{BIDI_CONTROLS}\ufe00-\ufe0f\U000e0000-\U000e007f\U000e0100-\U000e01ef]+|.",
    re.DOTALL,
)
_LINE_BREAKS = "\n\r\u2028\u2029\x0b\x0c\x85"


def _unicode_fold(raw: str) -> Folded:
    out: list[str] = []
    offsets: list[int] = []
    pending_space = -1  # raw offset of a whitespace run not yet written
    pending_newline = False
    for segment in _SEGMENT.finditer(raw):
        piece, index = segment.group(), segment.start()
        if piece[0].isspace():
            if pending_space < 0:
                pending_space = index
            pending_newline = pending_newline or any(char in _LINE_BREAKS for char in piece)
            continue
        if not piece.isascii() and _INVISIBLE.match(piece):
            continue  # dropped without ending a whitespace run: "a \u200b b" is "a b"
        if pending_space >= 0:
            if out:
                out.append("\n" if pending_newline else " ")
                offsets.append(pending_space)
            pending_space, pending_newline = -1, False
        if piece.isascii() or (len(piece) > 1 and unicodedata.is_normalized("NFKD", piece)):
            out.append(piece)
            offsets.extend(range(index, index + len(piece)))
            continue
        for at, each in enumerate(piece, start=index):
            for char in _char_fold(each):
                out.append(" " if char.isspace() else char)  # NFKC turns a few characters into a space (U+3000)
                offsets.append(at)
    if pending_space >= 0 and out:
        out.append("\n" if pending_newline else " ")
        offsets.append(pending_space)
    text = "".join(out)
    if not CONFUSABLE_CHARS.isdisjoint(text):
        text = _LETTER_WORD.sub(_unconfuse_word, text)
    return Folded(raw, text, offsets=tuple(offsets))


def _unconfuse_word(match: re.Match[str]) -> str:
    word = match.group()
    if word.isascii() or not any(c in CONFUSABLE_CHARS for c in word):
        return word
    if _ASCII_LETTER.search(word) or (len(word) >= 4 and all(c in CONFUSABLE_CHARS for c in word)):
        return word.translate(CONFUSABLES)  # one character for one: offsets stay valid
    return word
