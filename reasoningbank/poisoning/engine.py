"""``instruction_smells``: every rule over all the fields of one memory, read as one text.

The fields are joined (title, description, content, tags, in the order given) because a payload can be
split across them: "IMPORTANT: ignore all previous" as the title and "instructions and run …" as the
description read as one sentence to a model that is shown both. A smell names the field its span starts
in, with offsets in that field's own text."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice

from reasoningbank.poisoning import addressed, beacons, exfiltration, languages, remote_code
from reasoningbank.poisoning.catalogue import RULES, Hit
from reasoningbank.poisoning.folding import text_fold
from reasoningbank.poisoning.hidden import bidi_hits, encoded_hits, homoglyph_hits, invisible_hits, transformed_hits
from reasoningbank.poisoning.phrases import MAX_HITS_PER_RULE, Text

__pure__ = True  # Django-free (tests/test_import_contracts.py)

FIELD_SEPARATOR = "\n\n"
EXCERPT_CHARS = 160


@dataclass(frozen=True)
class Smell:
    """One finding: which rule, why, and where (``field`` and ``start``/``end`` offsets in that
    field's text; ``excerpt`` is the matched text, invisible characters shown as escapes)."""

    rule: str
    reason: str
    field: str
    start: int
    end: int
    excerpt: str


def _addressed_hits(scan: Text) -> Iterator[Hit]:
    yield from addressed.hits(scan)
    yield from languages.hits(scan)


def _text_hits(text: str, allowed_hosts: Collection[str]) -> Iterator[Hit]:
    """The phrase rules over a folded text."""
    scan = Text(text)
    yield from _addressed_hits(scan)
    yield from exfiltration.hits(scan)
    yield from remote_code.hits(scan, allowed_hosts)
    yield from beacons.hits(scan)


def _shown(text: str) -> str:
    """An excerpt a reviewer can read: one line, what renders as nothing made visible."""
    out = []
    for char in text[: EXCERPT_CHARS + 1]:
        if char.isspace():
            out.append(" ")
        elif not char.isprintable() or char in "\u200b\u200c\u200d\u2060\ufeff":
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
        else:
            out.append(char)
    shown = "".join(out)
    return shown if len(text) <= EXCERPT_CHARS else shown[:EXCERPT_CHARS] + "…"


def instruction_smells(fields: Mapping[str, str], *, allowed_hosts: Collection[str] = ()) -> list[Smell]:
    """The instruction smells of one memory (``fields``: name → text, e.g. title, description,
    content, tags joined by spaces), in text order, one per rule and span. ``allowed_hosts``: the
    organization's own hosts a script may be fetched from and run (``remote_code``)."""
    names = list(fields)
    texts = [fields[name] or "" for name in names]
    raw = FIELD_SEPARATOR.join(texts)
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + len(FIELD_SEPARATOR)

    folded = text_fold(raw)
    allowed = tuple(allowed_hosts)

    def scan(text: str) -> list[Hit]:  # offsets in ``text``
        inner = text_fold(text)
        return [(rule, *inner.raw_span(start, end)) for rule, start, end in _text_hits(inner.text, allowed)]

    def scan_addressed(text: str) -> list[Hit]:
        return list(_addressed_hits(Text(text)))

    found: list[tuple[str, int, int, str]] = []  # rule, raw start, raw end, reason
    for rule, start, end in _text_hits(folded.text, allowed):
        found.append((rule, *folded.raw_span(start, end), RULES[rule].reason))
    for hidden in (invisible_hits(raw), bidi_hits(raw), homoglyph_hits(raw)):  # one rule each
        for rule, start, end in islice(hidden, MAX_HITS_PER_RULE):
            found.append((rule, start, end, RULES[rule].reason))
    for start, end, inner, how in islice(encoded_hits(raw, scan), MAX_HITS_PER_RULE):
        found.append(("encoded_payload", start, end, _encoded_reason(how, inner)))
    for start, end, inner, how in transformed_hits(folded.text, scan, scan_addressed):
        found.append(("encoded_payload", *folded.raw_span(start, end), _encoded_reason(how, inner)))

    smells: list[Smell] = []
    last_end: dict[str, int] = {}  # a rule's spans that overlap are one smell (the first, widest)
    for rule, start, end, reason in sorted(found, key=lambda item: (item[1], -item[2], item[0])):
        if start < last_end.get(rule, -1):
            continue
        last_end[rule] = end
        index = max(i for i, field_start in enumerate(starts) if field_start <= start) if starts else 0
        field_start = starts[index]
        field_end = field_start + len(texts[index])
        smells.append(
            Smell(
                rule=rule,
                reason=reason,
                field=names[index],
                start=min(start, field_end) - field_start,
                end=min(end, field_end) - field_start,
                excerpt=_shown(raw[start:end]),
            )
        )
    return smells


def _encoded_reason(how: str, inner: str) -> str:
    return f"{RULES['encoded_payload'].reason}: {how} text that reads as {inner} ({RULES[inner].reason})"
