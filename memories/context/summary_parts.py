"""The parts of a consolidated summary as they are stored (``MemorySummary``: its text, key facts,
decisions and superseded facts), free of Django: one contract for every way a summary comes in and
is read (docs/security/imports.md).

* ``summary_parts_check`` — strict, the contract of a stored summary: what ``summary_store`` accepts
  from consolidation's summarize phase and what a bank import accepts from a file (a
  ``SummaryPartsInvalid`` naming the field and the item otherwise).
* ``summary_parts_repair`` — lenient, the repairs consolidation's parser applies to an LLM's reply
  (over-long text cut, a lone value where a list belongs made a one-item list, an unknown decision
  confidence made ``low``, items without their text dropped, a source outside the summary's sources
  forgotten); ``repair_summaries`` applies the same repairs to a stored row an older import let in.
  Its result always passes the check.
* ``summary_parts_problems`` — what is wrong with a stored row: by default what a read needs, the
  shape alone (types, keys, choices; no lengths) — search, session context and the summary list skip
  a row that has a problem instead of failing —, or the whole contract (``repair_summaries``).

The shapes are those of the read contract (``SummaryDecisionOut``, ``SupersededFactOut`` in
``memories/context/contracts.py``; a test holds the two together): a decision is exactly
``{decision, rationale, outcome, confidence}``, a superseded fact exactly ``{original_fact,
superseded_by, source_memory_id}``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# What one summary may hold. A summary is read at every session start, so it stays short; an LLM's
# longer text is cut, not rejected (the model's content is still good).
SUMMARY_MAX_LENGTH: Final = 4000
SUMMARY_ITEM_MAX_LENGTH: Final = 1000
SUMMARY_MAX_ITEMS: Final = 20
SUMMARY_ERROR_MAX: Final = 2000  # why a reply was rejected
# held: flagged by the instruction-smell detector, kept whole for an admin's review (a text, like a ready one)
SUMMARY_STATUSES: Final = ("ready", "rejected", "held")
DECISION_CONFIDENCES: Final = ("high", "medium", "low")
DECISION_KEYS: Final = ("decision", "rationale", "outcome", "confidence")
SUPERSEDED_FACT_KEYS: Final = ("original_fact", "superseded_by", "source_memory_id")
PROBLEMS_SHOWN: Final = 5  # problems a read reports of one row (the first ones)


def _shown(value: Any) -> str:
    """A stored value as a problem repeats it: its repr, at most 40 characters (a log line of a skipped
    row names what is wrong, not the row's text)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


class SummaryPartsInvalid(ValueError):
    """A summary part that breaks the contract: ``field`` (``decisions``) and what is wrong with which
    item (``item 2: lacks the key 'rationale' …``)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(f"{field}: {message}")
        self.message = message
        self.field = field


@dataclass(frozen=True)
class SummaryParts:
    summary: str
    key_facts: list[str]
    decisions: list[dict[str, Any]]
    superseded_facts: list[dict[str, Any]]


# --- the check (strict) and the problems a read looks for (the shape alone) ----------------------------


def _text(
    value: Any, name: str, *, full: bool, required: bool = False, maximum: int = SUMMARY_ITEM_MAX_LENGTH
) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string (got {type(value).__name__})")
    if full:
        if "\x00" in value:
            raise ValueError(f"{name} must not contain NUL characters")
        if required and not value.strip():
            raise ValueError(f"{name} must not be empty")
        if len(value) > maximum:
            raise ValueError(f"{name} is too long ({len(value)} characters; at most {maximum})")
    return value


def _keys(item: Any, keys: tuple[str, ...], what: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ValueError(f"must be an object {{{', '.join(keys)}}} (got {type(item).__name__})")
    unknown = sorted(str(key) for key in item if key not in keys)
    if unknown:
        raise ValueError(f"has an unknown key {unknown[0]!r} (a {what} has {', '.join(keys)})")
    missing = [key for key in keys if key not in item]
    if missing:
        raise ValueError(f"lacks the key {missing[0]!r} (a {what} has {', '.join(keys)})")
    return item


def _decision(item: Any, *, full: bool) -> dict[str, Any]:
    item = _keys(item, DECISION_KEYS, "decision")
    decision = _text(item["decision"], "decision", full=full, required=True)
    rationale = _text(item["rationale"], "rationale", full=full)
    outcome = item["outcome"] if item["outcome"] is None else _text(item["outcome"], "outcome", full=full)
    if (confidence := item["confidence"]) not in DECISION_CONFIDENCES:
        raise ValueError(f"confidence must be one of {', '.join(DECISION_CONFIDENCES)} (got {_shown(confidence)})")
    return {"decision": decision, "rationale": rationale, "outcome": outcome, "confidence": confidence}


def _superseded_fact(item: Any, *, full: bool, source_ids: Collection[str] | None) -> dict[str, Any]:
    item = _keys(item, SUPERSEDED_FACT_KEYS, "superseded fact")
    original = _text(item["original_fact"], "original_fact", full=full, required=True)
    newer = _text(item["superseded_by"], "superseded_by", full=full, required=True)
    source = _text(item["source_memory_id"], "source_memory_id", full=full)
    if source_ids is not None and source and source not in source_ids:
        raise ValueError(f"source_memory_id {_shown(source)} is not one of the summary's sources (empty: none named)")
    return {"original_fact": original, "superseded_by": newer, "source_memory_id": source}


def _items(value: Any, field: str, check: Any, *, full: bool) -> list[Any]:
    if not isinstance(value, list):
        raise SummaryPartsInvalid(f"must be a list (got {type(value).__name__})", field)
    if full and len(value) > SUMMARY_MAX_ITEMS:
        raise SummaryPartsInvalid(f"has {len(value)} items; at most {SUMMARY_MAX_ITEMS}", field)
    out = []
    for number, item in enumerate(value, start=1):
        try:
            out.append(check(item))
        except ValueError as exc:
            raise SummaryPartsInvalid(f"item {number}: {exc}", field) from None
    return out


def summary_key_facts_check(value: Any, *, full: bool = True) -> list[str]:
    return _items(value, "key_facts", lambda fact: _text(fact, "the fact", full=full, required=True), full=full)


def summary_decisions_check(value: Any, *, full: bool = True) -> list[dict[str, Any]]:
    return _items(value, "decisions", lambda item: _decision(item, full=full), full=full)


def summary_superseded_facts_check(
    value: Any, *, full: bool = True, source_ids: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """``source_ids``: the summary's sources, when they are known (a fact names one of them or none)."""
    return _items(
        value, "superseded_facts", lambda item: _superseded_fact(item, full=full, source_ids=source_ids), full=full
    )


def summary_text_check(value: Any, *, status: str, full: bool = True) -> str:
    try:
        text = _text(value, "summary", full=full, maximum=SUMMARY_MAX_LENGTH)
    except ValueError as exc:
        raise SummaryPartsInvalid(str(exc).removeprefix("summary "), "summary") from None
    if full and status in ("ready", "held") and not text.strip():
        raise SummaryPartsInvalid("a ready summary has a text (a rejected one keeps the error instead)", "summary")
    return text


def summary_parts_check(
    *,
    summary: Any,
    key_facts: Any,
    decisions: Any,
    superseded_facts: Any,
    status: str = "ready",
    source_ids: Collection[str] | None = None,
) -> SummaryParts:
    """The parts as they may be stored, or ``SummaryPartsInvalid`` naming the first field at fault."""
    return SummaryParts(
        summary=summary_text_check(summary, status=status),
        key_facts=summary_key_facts_check(key_facts),
        decisions=summary_decisions_check(decisions),
        superseded_facts=summary_superseded_facts_check(superseded_facts, source_ids=source_ids),
    )


def summary_parts_problems(row: Mapping[str, Any] | Any, *, full: bool = False) -> list[str]:
    """What is wrong with a stored summary (``field: what``), the first few; none when it is fine.
    ``row``: a ``MemorySummary`` or a mapping of its columns. By default what keeps a read from rendering
    it (the shape: types, keys, choices); with ``full`` the whole contract an import and ``summary_store``
    check, its superseded facts naming the row's own sources (what ``repair_summaries`` looks for)."""

    def get(name: str) -> Any:
        return row[name] if isinstance(row, Mapping) else getattr(row, name)

    problems = []
    status = get("status")
    if status not in SUMMARY_STATUSES:
        problems.append(f"status: must be one of {', '.join(SUMMARY_STATUSES)} (got {_shown(status)})")
    sources = [str(source) for source in get("source_memory_ids") or ()] if full else None
    checks = (
        lambda: summary_text_check(get("summary"), status=str(status), full=full),
        lambda: summary_key_facts_check(get("key_facts"), full=full),
        lambda: summary_decisions_check(get("decisions"), full=full),
        lambda: summary_superseded_facts_check(get("superseded_facts"), full=full, source_ids=sources),
    )
    for check in checks:
        try:
            check()
        except SummaryPartsInvalid as exc:
            problems.append(str(exc))
    return problems[:PROBLEMS_SHOWN]


# --- the repairs (lenient) ------------------------------------------------------------------------------


def _as_text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _as_list(value: Any) -> list[Any]:
    """A JSON list as given; a lone value (models sometimes drop the brackets) as a one-item list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _cut(text: str) -> str:
    return text[:SUMMARY_ITEM_MAX_LENGTH]


def summary_parts_repair(
    *, summary: Any, key_facts: Any, decisions: Any, superseded_facts: Any, source_ids: Sequence[str]
) -> SummaryParts:
    """The parts made to fit the contract by the repairs an LLM's reply gets (module docstring): what
    cannot be repaired — a decision without its text, a superseded fact without either side — is
    dropped. The summary's own text is only cut: an empty one cannot be repaired (the caller decides)."""
    facts = tuple(fact for fact in (_as_text(item) for item in _as_list(key_facts)) if fact)
    repaired_decisions: list[dict[str, Any]] = []
    for item in _as_list(decisions):
        if isinstance(item, str):
            item = {"decision": item}
        if not isinstance(item, dict) or not _as_text(item.get("decision")):
            continue
        level = _as_text(item.get("confidence")).lower()
        repaired_decisions.append(
            {
                "decision": _cut(_as_text(item["decision"])),
                "rationale": _cut(_as_text(item.get("rationale"))),
                "outcome": _cut(_as_text(item.get("outcome"))) or None,
                # the prompt asks for high|medium|low; anything else is not a judgement we can use
                "confidence": level if level in DECISION_CONFIDENCES else "low",
            }
        )
    allowed = {str(source_id) for source_id in source_ids}
    repaired_facts: list[dict[str, Any]] = []
    for item in _as_list(superseded_facts):
        if not isinstance(item, dict):
            continue
        original, newer = _as_text(item.get("original_fact")), _as_text(item.get("superseded_by"))
        if not (original and newer):
            continue
        source = _as_text(item.get("source_memory_id"))
        repaired_facts.append(
            {
                "original_fact": _cut(original),
                "superseded_by": _cut(newer),
                # a source the summary does not name: the model (or a file) cannot point lineage there
                "source_memory_id": source if source in allowed else "",
            }
        )
    return SummaryParts(
        summary=(summary if isinstance(summary, str) else "")[:SUMMARY_MAX_LENGTH],
        key_facts=[_cut(fact) for fact in facts][:SUMMARY_MAX_ITEMS],
        decisions=repaired_decisions[:SUMMARY_MAX_ITEMS],
        superseded_facts=repaired_facts[:SUMMARY_MAX_ITEMS],
    )
