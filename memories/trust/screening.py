"""What the instruction-smell detector's findings become (docs/security/memory-poisoning.md#quarantine),
free of Django: the texts of a memory or a summary as the detector reads them, a finding as it is stored
in ``flags``, the fingerprint an admin's approval teaches, and what the writer is told.

The detector itself is ``reasoningbank.poisoning`` (pure, every rule and look-alike); this module only
wraps its answer for the bank:

* a finding is stored as ``{rule, reason, field, start, end, excerpt, fingerprint}`` — the span in the
  field's own text, so a reviewer sees exactly what fired, and the fingerprint an approval records;
* the fingerprint is the sha256 of the span's *raw* text, NFC-normalised, case-folded and with its
  whitespace runs made one. Not of the detector's folded text: folding drops invisible characters, and
  an exception learned for an invisible-character finding would then match every such finding (an
  empty text) in the organization;
* an exception is (rule, fingerprint): the same text recorded again is not flagged by that rule, and
  nothing else is exempted.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from reasoningbank.poisoning import RULES, instruction_smells

__pure__ = True  # Django-free (tests/test_import_contracts.py)

# What happens next, told to the writer of a quarantined memory on every transport.
QUARANTINE_NEXT = (
    "An admin reviews it in the review queue; until then it is not searched, injected, consolidated or "
    "exported as active."
)
FLAG_NEXT = "It was stored active with a visible flag, as this organization's policy says."
FLAGS_MAX = 50  # findings kept per text: a hostile text can hold thousands, the reviewer needs the first few


def memory_texts(*, title: str, description: str, content: str, tags: Sequence[str]) -> dict[str, str]:
    """A memory's fields as the detector reads them (one text per field, tags joined by spaces): a
    payload split across fields reads as one text (``instruction_smells`` joins them)."""
    return {"title": title, "description": description, "content": content, "tags": " ".join(tags)}


def summary_texts(
    *, summary: str, key_facts: Sequence[str], decisions: Sequence[Mapping[str, Any]],
    superseded_facts: Sequence[Mapping[str, Any]],
) -> dict[str, str]:  # fmt: skip
    """A summary's parts as the detector reads them: every string of each part, one per line."""

    def strings(items: Iterable[Any]) -> str:
        out: list[str] = []
        for item in items:
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, Mapping):
                out.extend(value for value in item.values() if isinstance(value, str))
        return "\n".join(out)

    return {
        "summary": summary,
        "key_facts": strings(key_facts),
        "decisions": strings(decisions),
        "superseded_facts": strings(superseded_facts),
    }


def span_fingerprint(text: str) -> str:
    """sha256 of a finding's text, normalised (NFC, case-folded, whitespace runs made one space)."""
    normal = " ".join(unicodedata.normalize("NFC", text).casefold().split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


def texts_findings(
    texts: Mapping[str, str], *, allowed_hosts: Collection[str] = (), excepted: Collection[tuple[str, str]] = ()
) -> list[dict[str, Any]]:
    """The detector's findings on ``texts`` as stored in ``flags``, without those an exception of the
    organization covers (``excepted``: (rule, fingerprint) pairs), at most ``FLAGS_MAX``."""
    findings: list[dict[str, Any]] = []
    for smell in instruction_smells(texts, allowed_hosts=allowed_hosts):
        fingerprint = span_fingerprint(texts[smell.field][smell.start : smell.end])
        if (smell.rule, fingerprint) in excepted:
            continue
        findings.append(
            {
                "rule": smell.rule,
                "reason": smell.reason,
                "field": smell.field,
                "start": smell.start,
                "end": smell.end,
                "excerpt": smell.excerpt,
                "fingerprint": fingerprint,
            }
        )
        if len(findings) >= FLAGS_MAX:
            break
    return findings


def findings_shown(findings: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """What the writer (and a list of findings) is shown of each finding: rule, reason, field, excerpt."""
    return [
        {
            "rule": str(f.get("rule", "")),
            "reason": str(f.get("reason", "")),
            "field": str(f.get("field", "")),
            "excerpt": str(f.get("excerpt", "")),
        }
        for f in findings
    ]


def rules_named(findings: Iterable[Mapping[str, Any]]) -> list[str]:
    """The rules that fired, each once, in the order they first fired."""
    return list(dict.fromkeys(str(f.get("rule", "")) for f in findings))


def quarantine_message(findings: Sequence[Mapping[str, Any]], *, what: str = "memory") -> str:
    """The sentence a writer of a quarantined ``what`` reads: which rules, and what happens next."""
    rules = rules_named(findings)
    named = ", ".join(rules)
    plural = "s" if len(rules) != 1 else ""
    return (
        f"The {what} was stored in quarantine: the instruction-smell detector found text addressed to the AI "
        f"that would read it (rule{plural} {named}). {QUARANTINE_NEXT}"
    )


def flag_message(findings: Sequence[Mapping[str, Any]], *, what: str = "memory") -> str:
    rules = rules_named(findings)
    plural = "s" if len(rules) != 1 else ""
    return (
        f"The {what} was recorded with a flag: the instruction-smell detector found text addressed to the AI "
        f"that would read it (rule{plural} {', '.join(rules)}). {FLAG_NEXT}"
    )


def flags_clean(value: Any) -> list[dict[str, Any]]:
    """Findings read from elsewhere (an import file): only the known keys of known rules, strings cut to
    size, offsets as non-negative integers; anything else is dropped. They inform a reviewer and are
    never trusted for a decision (an import screens the text itself)."""
    if not isinstance(value, list):
        return []
    out: list[dict[str, Any]] = []
    for item in value[:FLAGS_MAX]:
        if not isinstance(item, Mapping) or item.get("rule") not in RULES:
            continue
        start, end = item.get("start"), item.get("end")
        out.append(
            {
                "rule": item["rule"],
                "reason": str(item.get("reason") or RULES[item["rule"]].reason)[:500],
                "field": str(item.get("field") or "")[:40],
                "start": start if isinstance(start, int) and not isinstance(start, bool) and start >= 0 else 0,
                "end": end if isinstance(end, int) and not isinstance(end, bool) and end >= 0 else 0,
                "excerpt": str(item.get("excerpt") or "")[:300],
                "fingerprint": str(item.get("fingerprint") or "")[:64],
            }
        )
    return out
