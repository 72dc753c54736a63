"""What every scrubbing rule is built from: the redaction marker, a ``Finding`` (where a secret is, of
which kind), a ``Rule`` (anchors, a pattern, what of a match is the secret), the look-behinds that keep a
token inside a longer word from being taken, and the anchor search that lets a rule run
``pattern.match`` only where it can start."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple


def redaction_marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# What a secret already found is overwritten with while the other rules run (engine.py): a character no
# rule takes as part of a secret, one per character of the secret, so that positions never move and every
# finding is a span of the text as given; the markers replace them at the end. NUL rather than a
# private-use character: a text of Latin-1 characters stays one byte per character (a private-use one
# would double every copy the rules make and slow every search).
FILL = "\x00"


class Finding(NamedTuple):
    """A secret at ``text[start:end]`` of ``kind``; ``own``: raw values of our own credentials it holds
    (the secret itself, or those found inside it once decoded), for revocation."""

    start: int
    end: int
    kind: str
    own: tuple[str, ...] = ()


def findings(spans: list[tuple[int, int]], kind: str) -> list[Finding]:
    return [Finding(start, end, kind) for start, end in spans]


def not_after(chars: str) -> str:
    """A look-behind: not right after one of ``chars`` (a character class body), except that a
    JSON-escaped line break or tab ("\\n", "\\t") counts as the whitespace it stands for, so a
    line of a JSON-encoded trace starts a word like a real line does."""
    return rf"(?:(?<![{chars}])|(?<=\\[nrt]))"


# Characters a token is made of; used in look-behinds so that a token inside a longer word
# ("ask-ant-...", "my_rb_...") is not treated as one.
TOKEN_START = not_after("A-Za-z0-9_-")
# A prefix that no word or identifier has ("ghp_", "xoxb-", "glpat-") may follow "_" or "-": a token
# pasted into an id ("run-ghp_..."), a name ("GH_TOKEN_ghp_...") is still a token. "sk-", "key-",
# "secret_", "r8_" are common word endings and keep the strict start; ours ("rb_") may follow "-" only.
PREFIX_START = not_after("A-Za-z0-9")
OWN_START = not_after("A-Za-z0-9_")
WORD_START = not_after("A-Za-z0-9")


@dataclass(frozen=True)
class Rule:
    """One secret format.

    ``anchors`` are lower-case literals every match starts with. The scrubber finds them with
    ``str.find`` on a lower-cased copy of the text and only runs ``pattern.match`` there:
    Python's regex engine is slow at trying a pattern at every position (a leading look-behind
    or a case-insensitive key name costs ~100-250 ms per MB and rule), ``str.find`` is not.
    """

    kind: str
    anchors: tuple[str, ...]
    pattern: re.Pattern[str]
    # None: the whole match is the secret. Otherwise a callable that gets the match and the
    # marker and returns the replacement text (what of the match stays, around the marker), or
    # None to leave this match alone.
    replace: Callable[[re.Match[str], str], str | None] | None = None
    # how many characters before its anchor a match starts: a format found by a fixed part inside it
    # (".atlasv1." 14 characters into a Terraform token)
    offset: int = 0


def keep_prefix(match: re.Match[str], marker: str) -> str | None:
    """For patterns with a ``prefix`` group to keep (a key name, a header) and a secret value."""
    return match.group("prefix") + marker


# ASCII-only lower-casing that never changes the string's length, for the rare text where
# str.lower() does (e.g. "İ" becomes two code points), so anchor positions stay valid.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def lower_same_length(text: str) -> str:
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def anchor_positions(lowered: str, anchors: tuple[str, ...]) -> list[int]:
    """Where any of ``anchors`` starts in ``lowered``. Anchors that share their first three characters
    ("xoxa-", "xoxb-", … "xapp-") are found with one search of that stem and told apart where it is:
    each search reads the whole text, and they are most of the scrubber's time."""
    positions: set[int] = set()
    for stem, group in _stems(anchors):
        index = lowered.find(stem)
        while index != -1:
            if not group or any(lowered.startswith(anchor, index) for anchor in group):
                positions.add(index)
            index = lowered.find(stem, index + 1)
    return sorted(positions)


@functools.lru_cache(maxsize=256)
def _stems(anchors: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(what to search, the anchors to tell apart where it is found: none when it is the anchor itself)."""
    groups: dict[str, list[str]] = {}
    for anchor in anchors:
        groups.setdefault(anchor[:3], []).append(anchor)
    return tuple(
        (group[0], ()) if len(group) == 1 else (stem, tuple(group)) for stem, group in groups.items()
    )
