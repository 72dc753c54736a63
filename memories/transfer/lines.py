"""One line of the ReasoningBank format (``memories/transfer/export_format.py`` defines its schemas), free
of Django: reading a raw line into its cleaned record (defaults filled in, timestamps parsed, the fields
of a hand-written memory line derived) or an error naming the line and field, and writing a record as
its line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from memories.confidence.bayes import INITIAL_EXPLICIT, confidence_prior
from memories.context.summary_parts import SummaryPartsInvalid, summary_text_check
from memories.core.kinds import DEFAULT_IMPORTANCE, KIND_IMPORTANCE
from memories.transfer.export_format import (
    COUNTED_TYPES,
    FORMAT,
    LINE_TYPES,
    MAX_LINE_CHARS,
    SCHEMAS,
    VERSION,
    Bad,
    LineError,
    LineErrorRaised,
    Vocabulary,
    fields_clean,
    when_dump,
)
from reasoningbank.json_limits import JSON_MAX_DEPTH_DEFAULT, json_depth_exceeds

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract


# --- one line ------------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_line_load(text: str) -> Any:
    """One line's JSON (NaN and Infinity refused: they are not JSON; nesting deeper than
    ``JSON_MAX_DEPTH_DEFAULT`` refused before the parser recurses into it: no line of the format nests
    more than a few levels, and Python's parser fails with a RecursionError near a thousand)."""
    if json_depth_exceeds(text, JSON_MAX_DEPTH_DEFAULT):
        raise ValueError(f"nested deeper than {JSON_MAX_DEPTH_DEFAULT} levels of arrays and objects")
    return json.loads(text, parse_constant=_reject_constant)


def record_parse(data: Any, vocab: Vocabulary, *, now: datetime) -> dict[str, Any]:
    """One line's object → its cleaned record (defaults filled in, timestamps parsed), or ``Bad``."""
    if not isinstance(data, dict):
        raise Bad(f"must be a JSON object, not {type(data).__name__}")
    kind = data.get("type")
    if kind not in SCHEMAS:
        raise Bad(f"must be one of {', '.join(LINE_TYPES)} (got {kind!r})", "type")
    record = fields_clean(data, SCHEMAS[kind], vocab, now=now)
    record["type"] = kind
    if kind == "memory":
        _memory_complete(record, vocab)
        if record["signal_aggregate"] is not None and record["signal_aggregate"]["last_rollup"] is None:
            record["signal_aggregate"]["last_rollup"] = now
    if kind == "summary":
        try:  # the fields that go together, as summary_store has them (memories/context/summary_parts.py)
            summary_text_check(record["summary"], status=record["status"])
        except SummaryPartsInvalid as exc:
            raise Bad(exc.message, exc.field) from None
    return record


def _memory_complete(record: dict[str, Any], vocab: Vocabulary) -> None:
    """Derive what a hand-written memory line may leave out, and check the fields that go together."""
    scope = record["scope"]
    if scope is None:
        scope = "project" if record["project"] else "team" if record["team"] else "org"
        record["scope"] = scope
    if scope == "project" and (not record["project"] or record["team"]):
        raise Bad("a project memory names its project (and no team: its team comes with the project)", "project")
    if scope == "team" and (not record["team"] or record["project"]):
        raise Bad("a team memory names its team and no project", "team")
    if scope == "org" and (record["team"] or record["project"]):
        raise Bad("an org memory names neither a project nor a team", "scope")
    if record["state"] == vocab.active_state and record["archived_reason"]:
        raise Bad("an active memory has no archived reason", "archived_reason")
    if record["importance"] is None:
        record["importance"] = float(KIND_IMPORTANCE.get(record["kind"], DEFAULT_IMPORTANCE))
    prior_alpha, prior_beta = confidence_prior(INITIAL_EXPLICIT)
    if (record["prior_alpha"] is None) != (record["prior_beta"] is None):
        raise Bad("prior_alpha and prior_beta go together", "prior_beta")
    if (record["alpha"] is None) != (record["beta"] is None):
        raise Bad("alpha and beta go together", "beta")
    if record["prior_alpha"] is None:
        record["prior_alpha"], record["prior_beta"] = prior_alpha, prior_beta
    if record["alpha"] is None:
        record["alpha"], record["beta"] = record["prior_alpha"], record["prior_beta"]
    if record["confidence"] is None:
        record["confidence"] = record["alpha"] / (record["alpha"] + record["beta"])
    if record["updated_at"] is None:
        record["updated_at"] = record["created_at"]
    if record["consolidated_into"] == record["id"]:
        raise Bad("a memory cannot be consolidated into itself", "consolidated_into")


def line_parse(where: str, text: str, vocab: Vocabulary, *, now: datetime) -> dict[str, Any]:
    """A raw line → its record, or ``LineErrorRaised`` naming the line and field."""
    if len(text) > MAX_LINE_CHARS:
        raise LineErrorRaised(LineError(where, "", f"the line is longer than {MAX_LINE_CHARS} characters"))
    try:
        data = json_line_load(text)
    except ValueError as exc:
        raise LineErrorRaised(LineError(where, "", f"not valid JSON ({exc})")) from None
    try:
        return record_parse(data, vocab, now=now)
    except Bad as exc:
        raise LineErrorRaised(LineError(where, exc.field, exc.message)) from None


def lines_split(text: str) -> Iterator[tuple[int, str]]:
    """(line number from 1, line) of a text, split on ``\\n`` only (a JSON string may hold U+2028);
    blank lines are skipped but counted."""
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if line.strip():
            yield number, line


# --- writing ---------------------------------------------------------------------------------------------


def line_dump(record: Mapping[str, Any]) -> str:
    """One line of the file: compact JSON, ASCII only (any JSON Lines reader splits it correctly), with
    its newline."""
    return json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n"


def header_record(
    *,
    exported_at: datetime,
    organization: str,
    project: str | None,
    embedder: str,
    embeddings: bool,
    teams: Iterable[Mapping[str, Any]],
    projects: Iterable[Mapping[str, Any]],
) -> dict[str, Any]:
    return {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "exported_at": when_dump(exported_at),
        "organization": organization,
        "project": project,
        "embedder": embedder,
        "embeddings": embeddings,
        "teams": list(teams),
        "projects": list(projects),
    }


def end_record(counts: Mapping[str, int], dropped: Mapping[str, int]) -> dict[str, Any]:
    return {"type": "end", "counts": {kind: counts.get(kind, 0) for kind in COUNTED_TYPES}, "dropped": dict(dropped)}
