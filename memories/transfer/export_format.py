"""The ReasoningBank export format (JSON Lines, version 1), free of Django.

One JSON object per line, each with a ``type``:

``header`` (first line) → ``weights``* → ``memory``* → ``link``* → ``signal``* → ``summary``* →
``session_use``* → ``end`` (last line).

docs/export-import.md#the-format-version-2 is the format's specification for users; this module is its
executable form: the schema of every line (``SCHEMAS``) and the checks of its fields. Reading and
writing one line is ``memories/transfer/lines.py``'s; what only a whole file shows, and the new ids an
import gives, ``memories/transfer/import_checks.py``'s.

The choices of enumerated fields (kinds, states, link kinds …) come from the models, handed in as a
``Vocabulary`` by the service, so that a choice added to a model is accepted here without an edit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memories.context.summary_parts import (
    SUMMARY_ERROR_MAX,
    SUMMARY_MAX_LENGTH,
    SummaryPartsInvalid,
    summary_decisions_check,
    summary_key_facts_check,
    summary_superseded_facts_check,
)
from memories.trust.provenance import PENDING, TRUSTED, provenance_validate
from memories.trust.screening import flags_clean
from reasoningbank.scrubbing import scrub_secrets

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

FORMAT = "reasoningbank-export"
# 2: a memory carries its provenance, trust, flags and review (docs/export-import.md#the-format-version-2); a version 1
# file reads as before, its memories described from their origin and creator
VERSION = 2
SUPPORTED_VERSIONS = (1, 2)
MEDIA_TYPE = "application/x-ndjson"

LINE_TYPES = ("header", "weights", "memory", "link", "signal", "summary", "session_use", "end")
COUNTED_TYPES = ("weights", "memory", "link", "signal", "summary", "session_use")

MAX_ERRORS = 20  # an invalid file reports this many errors at most
MAX_LINE_CHARS = 2_000_000
ID_MAX = 200  # ids are local to a file: ours are ``mem_…`` (40), hand-written files may use others
SLUG_MAX = 50
TITLE_MAX = 200
DESCRIPTION_MAX = 2000
CONTENT_MAX = 20000
TAG_MAX = 50
TAGS_MAX = 100
TEXT_MAX = 20000  # a summary's raw reply
LINK_REASON_MAX = 2000  # every writer of a link keeps at most this much of its reason
SESSION_KEY_MAX = 200
COMMENT_MAX = 2000
ACTOR_MAX = 200
PROMOTION_REASON_MAX = 500
EMBEDDING_MAX_DIMENSIONS = 4096

SESSION_OUTCOMES = ("", "success", "failure")
SESSION_STABILITIES = ("", "kept", "reverted")
SCOPES = ("project", "team", "org")
AGGREGATE_COUNTS = (
    "explicit_pos", "explicit_neg", "usage_pos", "usage_neg",
    "outcome_pos", "outcome_neg", "stability_pos", "stability_neg",
)  # fmt: skip
# the evidence each count still carries after time decay (null: never decayed, the count itself)
AGGREGATE_KEPT = tuple(f"{name}_kept" for name in AGGREGATE_COUNTS)
WEIGHT_PARAMETERS = {
    "explicit_alpha": 7.0, "explicit_beta": 3.0, "usage_alpha": 5.0, "usage_beta": 5.0,
    "outcome_alpha": 5.0, "outcome_beta": 5.0, "stability_alpha": 5.0, "stability_beta": 5.0,
}  # fmt: skip

HEADER_EXAMPLE = f'{{"type":"header","format":"{FORMAT}","version":{VERSION}}}'
_SLUG = re.compile(r"[a-z0-9](?:[a-z0-9_-]{0,48}[a-z0-9])?")


@dataclass(frozen=True)
class Vocabulary:
    """The allowed values of the enumerated fields (the models' choices)."""

    kinds: tuple[str, ...]
    outcomes: tuple[str, ...]
    states: tuple[str, ...]
    archived_reasons: tuple[str, ...]
    tiers: tuple[str, ...]
    origins: tuple[str, ...]
    link_kinds: tuple[str, ...]
    signal_types: tuple[str, ...]
    summary_statuses: tuple[str, ...]
    session_vias: tuple[str, ...]
    active_state: str = "active"


# --- errors ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LineError:
    """One problem of an import file: where (``line 12``, ``item 3``), which field, what is wrong."""

    where: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}, field {self.field}: {self.message}" if self.field else f"{self.where}: {self.message}"


class LineErrorRaised(Exception):
    """A ``LineError`` raised (by ``lines.line_parse``), for the caller to report."""

    def __init__(self, error: LineError) -> None:
        super().__init__(str(error))
        self.error = error


class Bad(Exception):
    """A value that does not fit its field (raised by the checkers, turned into a ``LineError``)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


# --- field checkers: each takes the JSON value and returns the cleaned one or raises Bad --------------

Check = Callable[[Any], Any]


def _text(maximum: int, *, blank: bool = True) -> Check:
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise Bad("must be a string")
        if "\x00" in value:
            raise Bad("must not contain NUL characters")
        if not blank and not value.strip():
            raise Bad("must not be empty")
        if len(value) > maximum:
            raise Bad(f"is too long ({len(value)} characters; at most {maximum})")
        return value

    return check


def _session_key(*, blank: bool) -> Check:
    """An agent's session id: refused when it holds a secret, as the API refuses it (it is stored
    and shown as it is; docs/security/secret-scrubbing.md)."""
    text = _text(SESSION_KEY_MAX, blank=blank)

    def check(value: Any) -> str:
        value = text(value)
        found = scrub_secrets(value)
        if found.redactions:
            raise Bad(f"must not hold a secret (it looks like: {', '.join(found.kinds)})")
        return value

    return check


def _slug(value: Any) -> str:
    if not isinstance(value, str) or not _SLUG.fullmatch(value):
        raise Bad(f"must be a slug: 1-{SLUG_MAX} lowercase letters, digits, '-' or '_' (got {value!r})")
    return value


def _local_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > ID_MAX or "\x00" in value:
        raise Bad(f"must be a non-empty string id of at most {ID_MAX} characters")
    return value


def _number(minimum: float | None = None, maximum: float | None = None, *, above: float | None = None) -> Check:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise Bad("must be a finite number")
        if minimum is not None and value < minimum:
            raise Bad(f"must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise Bad(f"must be at most {maximum}")
        if above is not None and value <= above:
            raise Bad(f"must be greater than {above}")
        return float(value)

    return check


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > 2**31 - 1:
        raise Bad("must be a whole number from 0 to 2147483647")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Bad("must be true or false")
    return value


def when_parse(value: Any) -> datetime:
    """An ISO 8601 date and time with its UTC offset (``2026-01-31T09:30:00+00:00`` or ``…Z``)."""
    if not isinstance(value, str):
        raise Bad("must be an ISO 8601 date and time string")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise Bad(f"is not an ISO 8601 date and time ({value[:40]!r})") from None
    if parsed.tzinfo is None:
        raise Bad(f"needs a UTC offset, e.g. 2026-01-31T09:30:00+00:00 (got {value[:40]!r})")
    return parsed


def when_dump(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None


def _nullable(check: Check) -> Check:
    def nullable(value: Any) -> Any:
        return None if value is None else check(value)

    return nullable


def _choice(attribute: str, *, blank: bool = False) -> Callable[[Vocabulary], Check]:
    def bind(vocab: Vocabulary) -> Check:
        allowed = (("",) if blank else ()) + tuple(getattr(vocab, attribute))

        def check(value: Any) -> str:
            if value not in allowed:
                shown = ", ".join(repr(a) if a == "" else a for a in allowed)
                raise Bad(f"must be one of {shown} (got {value!r})")
            return str(value)

        return check

    return bind


def _fixed_choice(allowed: tuple[str, ...]) -> Check:
    def check(value: Any) -> str:
        if value not in allowed:
            raise Bad(f"must be one of {', '.join(repr(a) if a == '' else a for a in allowed)} (got {value!r})")
        return str(value)

    return check


def _list(item: Check, maximum: int) -> Check:
    def check(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise Bad("must be a list")
        if len(value) > maximum:
            raise Bad(f"has {len(value)} items; at most {maximum}")
        out = []
        for index, element in enumerate(value):
            try:
                out.append(item(element))
            except Bad as exc:
                raise Bad(f"item {index + 1} {exc.message}") from None
        return out

    return check


def _summary_part(check: Callable[[Any], Any]) -> Check:
    """A part of a summary checked by the contract every stored summary keeps (``summary_store``'s:
    ``memories/context/summary_parts.py``), so that an import cannot store what a read cannot render."""

    def checked(value: Any) -> Any:
        try:
            return check(value)
        except SummaryPartsInvalid as exc:
            raise Bad(exc.message) from None

    return checked


def _flags(value: Any) -> list[dict[str, Any]]:
    """The instruction-smell detector's findings on a memory or summary (docs/security/memory-poisoning.md):
    informative only — an import screens every text itself — so a finding of an unknown rule or shape is
    dropped rather than refused."""
    if not isinstance(value, list):
        raise Bad("must be a list of findings")
    return flags_clean(value)


def _count_map(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        raise Bad("must be an object of counts")
    return {str(key): _count(count) for key, count in value.items()}


def _embedding(value: Any) -> list[float]:
    if not isinstance(value, list) or not value or len(value) > EMBEDDING_MAX_DIMENSIONS:
        raise Bad(f"must be a list of 1 to {EMBEDDING_MAX_DIMENSIONS} numbers")
    if not all(not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(x) for x in value):
        raise Bad("must hold finite numbers only")
    return [float(x) for x in value]


def _claimed_provenance(value: Any) -> dict[str, Any]:
    """A memory's provenance as the file states it: an object, reduced to what the format knows (a claim
    the import keeps as such, never as this organization's own record)."""
    if not isinstance(value, dict):
        raise Bad("must be an object (the memory's provenance as exported)")
    return provenance_validate(value)


def _object(schema: Mapping[str, Field]) -> Check:
    def check(value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise Bad("must be an object")
        try:
            return fields_clean(value, schema, None, now=None)
        except Bad as exc:
            raise Bad(f"{exc.field}: {exc.message}" if exc.field else exc.message) from None

    return check


# --- the schemas ------------------------------------------------------------------------------------

MISSING: Any = object()  # a required field has no default
NOW: Any = object()  # the default of a timestamp: the moment of the import


@dataclass(frozen=True)
class Field:
    check: Check | None = None
    # for enumerated fields: binds the vocabulary and returns the check
    choice: Callable[[Vocabulary], Check] | None = None
    default: Any = MISSING


def _f(check: Check, default: Any = MISSING) -> Field:
    return Field(check=check, default=default)


def _c(choice: Callable[[Vocabulary], Check], default: Any = MISSING) -> Field:
    return Field(choice=choice, default=default)


_TIME = _f(when_parse, NOW)
_OPTIONAL_TIME = _f(_nullable(when_parse), None)

PROJECT_ENTRY = {
    "slug": _f(_slug),
    "name": _f(_text(200), ""),
    "team": _f(_nullable(_slug), None),
}
TEAM_ENTRY = {"slug": _f(_slug), "name": _f(_text(200), "")}
AGGREGATE = {
    **{name: _f(_count, 0) for name in AGGREGATE_COUNTS},
    "last_rollup": _TIME,
    **{name: _f(_nullable(_number(0.0)), None) for name in AGGREGATE_KEPT},
    "decayed_at": _OPTIONAL_TIME,  # when the decay was last applied (its UTC day is decayed)
}

SCHEMAS: dict[str, dict[str, Field]] = {
    "header": {
        "format": _f(_fixed_choice((FORMAT,))),
        "version": _f(lambda v: v),  # checked against SUPPORTED_VERSIONS by the checker
        "exported_at": _OPTIONAL_TIME,
        "organization": _f(_nullable(_slug), None),
        "project": _f(_nullable(_slug), None),
        "embedder": _f(_text(200), ""),
        "embeddings": _f(_boolean, False),
        "teams": _f(_list(_object(TEAM_ENTRY), 10_000), []),
        "projects": _f(_list(_object(PROJECT_ENTRY), 10_000), []),
    },
    "weights": {
        "project": _f(_nullable(_slug), None),
        **{name: _f(_number(above=0.0), value) for name, value in WEIGHT_PARAMETERS.items()},
        "updated_at": _TIME,
    },
    "memory": {
        "id": _f(_local_id),
        "scope": _f(_fixed_choice(SCOPES), None),
        "project": _f(_nullable(_slug), None),
        "team": _f(_nullable(_slug), None),
        "title": _f(_text(TITLE_MAX, blank=False)),
        "description": _f(_text(DESCRIPTION_MAX), ""),
        "content": _f(_text(CONTENT_MAX)),
        "outcome": _c(_choice("outcomes"), "success"),
        "tags": _f(_list(_text(TAG_MAX, blank=False), TAGS_MAX), []),
        "kind": _c(_choice("kinds"), "procedural"),
        "state": _c(_choice("states"), "active"),
        "archived_reason": _c(_choice("archived_reasons", blank=True), ""),
        "archived_at": _OPTIONAL_TIME,
        "consolidated_into": _f(_nullable(_local_id), None),
        "tier": _c(_choice("tiers"), "hot"),
        "retention": _f(_number(0.0, 1.0), 1.0),
        "importance": _f(_number(0.0, 1.0), None),
        "expires_at": _OPTIONAL_TIME,
        "prior_alpha": _f(_number(above=0.0), None),
        "prior_beta": _f(_number(above=0.0), None),
        "alpha": _f(_number(above=0.0), None),
        "beta": _f(_number(above=0.0), None),
        "confidence": _f(_number(0.0, 1.0), None),
        "usage_count": _f(_count, 0),
        "last_used_at": _OPTIONAL_TIME,
        "last_signal_at": _OPTIONAL_TIME,  # time decay counts the silence from here
        "origin": _c(_choice("origins"), "recorded"),
        # the promotion ladder: the kind it was promoted from ('' never promoted), when, and why
        "promoted_from": _c(_choice("kinds", blank=True), ""),
        "promoted_at": _OPTIONAL_TIME,
        "promotion_reason": _f(_text(PROMOTION_REASON_MAX), ""),
        # what the instruction-smell detector found when it was written (a quarantined memory's reasons)
        "flags": _f(_flags, []),
        "created_by_user": _f(_nullable(_text(254)), None),
        # version 2: who wrote it, how and through which client; whether it was trusted for injection; who
        # reviewed it. All read as claims (docs/export-import.md)
        "provenance": _f(_claimed_provenance, {}),
        "trust": _f(_nullable(_fixed_choice((TRUSTED, PENDING))), None),
        "reviewed_by": _f(_nullable(_text(254)), None),
        "reviewed_at": _OPTIONAL_TIME,
        "created_at": _TIME,
        "updated_at": _f(_nullable(when_parse), None),
        "signal_aggregate": _f(_nullable(_object(AGGREGATE)), None),
        "embedding_model": _f(_text(100), ""),
        "embedding": _f(_nullable(_embedding), None),
    },
    "link": {
        "source": _f(_local_id),
        "target": _f(_local_id),
        "kind": _c(_choice("link_kinds")),
        "weight": _f(_number(0.0, 1.0), 1.0),  # a similarity or a judge's confidence, as every writer sets it
        "reason": _f(_text(LINK_REASON_MAX), ""),
        "resolved_at": _OPTIONAL_TIME,
        "created_at": _TIME,
    },
    "signal": {
        "memory": _f(_local_id),
        "project": _f(_nullable(_slug), None),
        "signal": _c(_choice("signal_types")),
        "positive": _f(_boolean),
        "session_id": _f(_session_key(blank=True), ""),
        "comment": _f(_text(COMMENT_MAX), ""),
        "actor": _f(_text(ACTOR_MAX), ""),
        "confidence_after": _f(_nullable(_number(0.0, 1.0)), None),
        "created_at": _TIME,
    },
    "summary": {
        "id": _f(_local_id),
        "memory": _f(_local_id),
        "source_memory_ids": _f(_list(_local_id, 10_000), []),
        "status": _c(_choice("summary_statuses"), "ready"),
        "summary": _f(_text(SUMMARY_MAX_LENGTH), ""),  # a ready summary has one (lines.record_parse)
        "key_facts": _f(_summary_part(summary_key_facts_check), []),
        "decisions": _f(_summary_part(summary_decisions_check), []),
        # a fact's source outside the summary's sources is forgotten on import (import_checks.summary_remap)
        "superseded_facts": _f(_summary_part(summary_superseded_facts_check), []),
        "confidence": _f(_number(0.0, 1.0), 0.5),
        "temporal_start": _TIME,
        "temporal_end": _TIME,
        "error": _f(_text(SUMMARY_ERROR_MAX), ""),
        "raw_reply": _f(_text(TEXT_MAX), ""),
        "activation_count": _f(_count, 0),
        "last_activated_at": _OPTIONAL_TIME,
        "flags": _f(_flags, []),  # a held summary's findings
        "created_at": _TIME,
    },
    "session_use": {
        "memory": _f(_local_id),
        "session_key": _f(_session_key(blank=False)),
        "via": _c(_choice("session_vias")),
        "created_at": _TIME,
        "outcome": _f(_fixed_choice(SESSION_OUTCOMES), ""),
        "outcome_at": _OPTIONAL_TIME,
        "stability": _f(_fixed_choice(SESSION_STABILITIES), ""),
        "stability_at": _OPTIONAL_TIME,
    },
    "end": {
        "counts": _f(_nullable(_object({name: _f(_count, 0) for name in COUNTED_TYPES})), None),
        "dropped": _f(_nullable(_count_map), None),
    },
}

# every memory field the format carries, in the order an export writes them (tests compare this
# with the model's columns, so that a new column is either exported or listed as not exported)
MEMORY_FIELDS = tuple(SCHEMAS["memory"])


def fields_clean(
    data: dict[str, Any], schema: Mapping[str, Field], vocab: Vocabulary | None, *, now: Any
) -> dict[str, Any]:
    """``data`` checked against ``schema``: each field cleaned, a missing one given its default (``now``
    for a timestamp), an unknown or bad one a ``Bad`` naming it."""
    unknown = sorted(str(key) for key in data if key not in schema and key != "type")
    if unknown:
        raise Bad(f"unknown field (allowed: {', '.join(schema)})", unknown[0])
    out: dict[str, Any] = {}
    for name, spec in schema.items():
        if name not in data:
            if spec.default is MISSING:
                raise Bad("is required", name)
            out[name] = now if spec.default is NOW else [] if isinstance(spec.default, list) else spec.default
            continue
        check = spec.check
        if spec.choice is not None:
            assert vocab is not None, "enumerated fields need the vocabulary"
            check = spec.choice(vocab)
        assert check is not None
        try:
            out[name] = check(data[name])
        except Bad as exc:
            raise Bad(exc.message, name) from None
    return out
