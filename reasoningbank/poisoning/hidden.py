"""Hidden text: what a person reviewing a memory does not see but a model reads.

* Invisible characters: zero-width spaces and joiners inside a word, runs of them, Unicode tag
  characters (U+E0000–U+E007F spell ASCII no one sees), runs of variation selectors (another way to
  smuggle bytes). Not flagged: the joiners of emoji sequences and of scripts that need them (Persian,
  Indic), a flag's tag sequence, one stray zero-width space between words (copied from a web page).
* Bidi controls (overrides, embeddings, isolates) in a text with no right-to-left script.
* Homoglyph words: Latin mixed with Cyrillic or Greek look-alikes ("ѕуѕtem"), or a word made only of
  look-alikes that spells an English word the phrase rules care about; and a dotted name (a host) that
  mixes them ("ѕh.rustup.rs"): folded, it would pass for a well-known or trusted host.
* Encoded payloads: base64 (standard, URL-safe, wrapped over lines), hex, ``\\xNN``/``\\uNNNN`` escapes,
  URL and HTML escapes — decoded and read by every phrase rule; and, when the text tells the reader to
  decode it (a rot13 or "reverse" cue), the rot13 or reversed text, read the same way. Leetspeak
  ("1gn0r3 pr3v10u5 1n5truct10n5") is folded to letters for the addressed-to-an-AI rules.

A decoded text that trips a phrase rule is reported as ``encoded_payload``, on the encoded span, with
the inner rule in its reason."""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from urllib.parse import unquote_plus

from reasoningbank.poisoning.catalogue import Hit
from reasoningbank.poisoning.folding import CONFUSABLE_CHARS, CONFUSABLES

__pure__ = True  # Django-free (tests/test_import_contracts.py)

# (raw start, raw end, inner rule, how it was encoded)
EncodedHit = tuple[int, int, str, str]
Scan = Callable[[str], list[Hit]]

_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\u180e\ufeff]+")
_TAGS = re.compile("(\U0001f3f4)?([\U000e0000-\U000e007f]+)")
_FLAG_TAGS = re.compile("[\U000e0020-\U000e007e]+\U000e007f")
_SELECTORS = re.compile("[\ufe00-\ufe0f]{3,}|[\U000e0100-\U000e01ef]{2,}")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]+")
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe]")
_LETTER_WORD = re.compile(r"[^\W\d_]+")
_LATIN = re.compile("[A-Za-z]")
_DOTTED_NAME = re.compile(r"(?<![\w.-])[\w-]+(?:\.[\w-]+)+")  # tried at word starts only: linear
WATCHED_WORDS = frozenset(
    {
        "system", "assistant", "ignore", "instructions", "instruction", "prompt", "admin", "developer", "user",
        "override", "previous", "secret", "token", "password", "curl", "bash", "execute", "ssh", "sudo", "root",
        "important", "note", "mode", "disregard", "forget", "rules", "send", "upload", "key", "keys",
    }
)  # fmt: skip


def invisible_hits(raw: str) -> Iterator[Hit]:
    if raw.isascii():
        return
    for match in _ZERO_WIDTH.finditer(raw):
        start, end = match.span()
        before, after = raw[start - 1 : start], raw[end : end + 1]
        joiners_only = not match.group().strip("\u200c\u200d")
        if joiners_only and not (_LATIN.match(before) and _LATIN.match(after)):
            continue  # emoji sequences, Persian, Indic scripts
        if match.group() == "\ufeff" and (start == 0 or before == "\n"):
            continue  # a byte-order mark at the start of a field
        inside_word = before.isalnum() and after.isalnum()
        if end - start >= 2 or inside_word:
            yield "invisible_characters", start, end
    for match in _TAGS.finditer(raw):
        if not (match.group(1) and _FLAG_TAGS.fullmatch(match.group(2))):
            yield "invisible_characters", *match.span(2)
    for match in _SELECTORS.finditer(raw):
        yield "invisible_characters", *match.span()


def bidi_hits(raw: str) -> Iterator[Hit]:
    if raw.isascii() or not _BIDI.search(raw) or _RTL.search(raw):
        return
    for match in _BIDI.finditer(raw):
        yield "bidi_controls", *match.span()


def homoglyph_hits(raw: str) -> Iterator[Hit]:
    if raw.isascii():
        return
    for match in _LETTER_WORD.finditer(raw):
        word = match.group()
        if word.isascii() or CONFUSABLE_CHARS.isdisjoint(word):
            continue
        mixed = _LATIN.search(word) is not None and len(word) >= 3
        if mixed or word.translate(CONFUSABLES).lower() in WATCHED_WORDS:
            yield "homoglyph_words", *match.span()
    # a host's labels are short ("ѕh"): the words above miss them, and folding maps the host onto the real one
    for match in _DOTTED_NAME.finditer(raw):
        name = match.group()
        if not name.isascii() and not CONFUSABLE_CHARS.isdisjoint(name) and _LATIN.search(name):
            yield "homoglyph_words", *match.span()


_BASE64 = re.compile(
    r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{16,}={0,2}(?:[ \t]{0,2}\n[ \t]{0,2}[A-Za-z0-9+/_-]{1,200}={0,2}){0,200}"
)
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}[ :]?){12,}(?![0-9A-Fa-f])")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}|\\x[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|&#x?[0-9A-Fa-f]{1,6};")
# Cues read on the lowered text; "x(?<!\wx)" is "\bx" (a literal first: the engine skips ahead fast).
_ROT13_CUE = re.compile(r"r(?<!\wr)ot[ -]?13\b|c(?<!\wc)a?esar\b")
_REVERSE_CUE = re.compile(
    r"r(?<!\wr)evers|b(?<!\wb)ackwards?\b|r(?<!\wr)ight[ -]to[ -]left\b|f(?<!\wf)rom the end\b|m(?<!\wm)irror(?:ed)?\b|"
    r"a(?<!\wa)l rev[eé]s\b|à(?<!\wà) l'envers\b|a(?<!\wa) l'envers\b|r(?<!\wr)(?:ü|u)ckw(?:ä|a)rts\b|"
    r"d(?<!\wd)e tr[aá]s para frente\b|反转|倒过来|倒序|逆から|наоборот"
)
_LEET_CHARS = "0134579@$!|"
_LEET_WORD = re.compile(
    r"(?<![\w@$!|])(?=[a-z0-9@$!|]{0,29}[a-z])(?=[a-z0-9@$!|]{0,29}[0134579@$!|])[a-z0-9@$!|]{2,30}(?![\w@$!|])",
    re.IGNORECASE,
)
_LEET = str.maketrans(
    {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "9": "g", "@": "a", "$": "s", "!": "i", "|": "l"}
)


def _printable_text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(text) < 6:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\t\r")
    letters = sum(1 for c in text if c.isalpha())
    return text if printable >= 0.95 * len(text) and letters >= 0.4 * len(text) else None


def _base64_decode(blob: str) -> str | None:
    compact = re.sub(r"\s", "", blob).rstrip("=")
    if len(compact) < 16:
        return None
    padded = compact + "=" * (-len(compact) % 4)
    try:
        data = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None
    return _printable_text(data)


def _escape_runs(raw: str) -> Iterator[tuple[int, int]]:
    """Stretches with three or more escapes close together (no whitespace between, gaps ≤ 40)."""
    run_start = run_end = -1
    count = 0
    for match in _ESCAPE.finditer(raw):
        start, end = match.span()
        if run_end >= 0 and start - run_end <= 40 and not any(c.isspace() for c in raw[run_end:start]):
            run_end, count = end, count + 1
            continue
        if count >= 3:
            yield run_start, run_end
        run_start, run_end, count = start, end, 1
    if count >= 3:
        yield run_start, run_end


def _unescape(text: str) -> str:
    text = html.unescape(text)
    text = re.sub(r"\\x([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)
    text = re.sub(r"\\u([0-9A-Fa-f]{4})", lambda m: chr(int(m.group(1), 16)), text)
    return unquote_plus(text)


def _decoded_stretches(raw: str) -> Iterator[tuple[int, int, str, str]]:
    for match in _BASE64.finditer(raw):
        decoded = _base64_decode(match.group())
        if decoded is not None:
            yield match.start(), match.end(), decoded, "base64"
    for match in _HEX.finditer(raw):
        try:
            decoded = _printable_text(bytes.fromhex(re.sub(r"[ :]", "", match.group())))
        except ValueError:
            decoded = None
        if decoded is not None:
            yield match.start(), match.end(), decoded, "hex"
    widened_to = 0
    for start, end in _escape_runs(raw):
        if end <= widened_to:
            continue  # inside the token the previous run was widened to: decoded already
        # widen to the whole token the escapes sit in (letters between them belong to the payload)
        while start > widened_to and not raw[start - 1].isspace() and start > end - 4000:
            start -= 1
        while end < len(raw) and not raw[end].isspace() and end < start + 4000:
            end += 1
        widened_to = end
        yield start, end, _unescape(raw[start:end]), "escapes"


# Between decoded stretches read together: more punctuation than any separator of a phrase spans, and line
# breaks, so no phrase runs from one stretch into the next.
_STRETCH_SEPARATOR = "\n.\n.\n"


def encoded_hits(raw: str, scan: Scan, depth: int = 2) -> Iterator[EncodedHit]:
    """Encoded stretches of ``raw`` whose decoded text ``scan`` flags (``scan`` gives offsets in the text it
    is given), the first rule for each. All the decoded stretches are read in one call: a text of ten
    thousand small blobs costs one scan, not ten thousand."""
    stretches = list(_decoded_stretches(raw))
    if not stretches:
        return
    starts = []
    offset = 0
    for _, _, decoded, _ in stretches:
        starts.append(offset)
        offset += len(decoded) + len(_STRETCH_SEPARATOR)
    joined = _STRETCH_SEPARATOR.join(decoded for _, _, decoded, _ in stretches)
    inner: dict[int, str] = {}  # stretch → the first rule found in it
    for rule, start, _ in scan(joined):
        inner.setdefault(bisect_right(starts, start) - 1, rule)
    if depth > 1 and len(inner) < len(stretches):
        for start, _, rule, _ in encoded_hits(joined, scan, depth - 1):
            inner.setdefault(bisect_right(starts, start) - 1, rule)
    for index, (start, end, _, how) in enumerate(stretches):
        if index in inner:
            yield start, end, inner[index], how


def transformed_hits(folded: str, scan: Scan, scan_addressed: Scan) -> Iterator[EncodedHit]:
    """Offsets in ``folded``: rot13 and leetspeak keep every offset, a reversal mirrors them."""
    cues = folded.lower()
    if _ROT13_CUE.search(cues):
        for rule, start, end in scan(codecs.encode(folded, "rot13")):
            yield start, end, rule, "rot13"
    if _REVERSE_CUE.search(cues):
        length = len(folded)
        for rule, start, end in scan(folded[::-1]):
            yield length - end, length - start, rule, "reversed"
    if any(char in folded for char in _LEET_CHARS) and _LEET_WORD.search(folded):
        leet = _LEET_WORD.sub(lambda m: m.group().translate(_LEET), folded)
        if leet != folded:
            for rule, start, end in scan_addressed(leet):
                yield start, end, rule, "leetspeak"
