"""The REST operations the clients call: one row per method, naming the OpenAPI operation it is, so the
drift check (docs/sdks.md#the-drift-check) can compare each row with the live schema, and the request
each method builds, shared by the sync and the async client."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True)
class Operation:
    """One REST operation: its OpenAPI ``operationId``, method, path template and the names of the
    request and response body components (``None``: no JSON body / a stream)."""

    operation_id: str
    method: str
    path: str
    request: str | None
    response: str | None
    query: tuple[str, ...] = ()


OPERATIONS: dict[str, Operation] = {
    "search": Operation("memories_search", "POST", "/api/v1/memories/search", "SearchRequest", "SearchResponse"),
    "record": Operation("memories_create", "POST", "/api/v1/memories", "RecordRequest", "RecordResponse"),
    "get": Operation("memories_retrieve", "GET", "/api/v1/memories/{memory_id}", None, "MemoryOut"),
    "feedback": Operation(
        "memories_feedback", "POST", "/api/v1/memories/{memory_id}/feedback", "FeedbackRequest", "FeedbackResponse"
    ),
    "outcome": Operation(
        "memories_outcome", "POST", "/api/v1/memories/{memory_id}/outcome", "OutcomeRequest", "OutcomeResponse"
    ),
    "context": Operation("memories_context", "POST", "/api/v1/memories/context", "ContextRequest", "ContextResponse"),
    "ask": Operation("memories_ask", "POST", "/api/v1/memories/ask", "AskRequest", "AskResponse"),
    "session_submit": Operation(
        "sessions_submit", "POST", "/api/v1/sessions", "SessionSubmitRequest", "SessionSubmitResponse"
    ),
    "session_get": Operation("sessions_retrieve", "GET", "/api/v1/sessions/{session_id}", None, "SessionDetail"),
    "session_code_report": Operation(
        "sessions_code_report", "POST", "/api/v1/sessions/code-report", "CodeReportRequest", "CodeReportResponse"
    ),
    "consolidate": Operation(
        "consolidation_runs_create",
        "POST",
        "/api/v1/consolidation/runs",
        "ConsolidateRestRequest",
        "ConsolidateResponse",
    ),
    "export": Operation("bank_export", "GET", "/api/v1/export", None, None, ("project", "embeddings")),
    "import_bank": Operation("bank_import", "POST", "/api/v1/import", "ImportRequestRequest", "ImportResult"),
    "import_ndjson": Operation(
        "bank_import", "POST", "/api/v1/import", None, "ImportResult", ("project", "dry_run", "source_name", "reviewed")
    ),
}

# the components models.py is generated for (clients/python/generate_models.py): every body above and the error
MODEL_ROOTS: tuple[str, ...] = tuple(
    dict.fromkeys(
        [name for op in OPERATIONS.values() for name in (op.request, op.response) if name is not None] + ["Error"]
    )
)


@dataclass
class Call:
    """One HTTP request, built the same way for both clients."""

    method: str
    path: str
    json: Mapping[str, Any] | None = None
    params: dict[str, str] = field(default_factory=dict)
    content: bytes | Iterable[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)


def call_for(name: str, body: Mapping[str, Any] | None = None, **path: str) -> Call:
    """The request for a JSON operation; path parameters are quoted (an id never escapes its segment)."""
    operation = OPERATIONS[name]
    url = operation.path.format(**{key: quote(value, safe="") for key, value in path.items()})
    return Call(operation.method, url, json=dict(body) if body is not None else None)


def query_for(name: str, options: Mapping[str, Any]) -> dict[str, str]:
    """Query parameters of ``name`` from the options that are set (booleans as the API spells them)."""
    allowed = OPERATIONS[name].query
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(f"{name}() got unexpected options: {', '.join(unknown)}")
    return {
        key: ("true" if value else "false") if isinstance(value, bool) else str(value)
        for key, value in options.items()
        if value is not None
    }


def export_call(project: str | None, embeddings: bool) -> Call:
    return Call(
        "GET", OPERATIONS["export"].path, params=query_for("export", {"project": project, "embeddings": embeddings})
    )


def ndjson_call(content: str | bytes | Iterable[bytes], options: Mapping[str, Any]) -> Call:
    """``POST /api/v1/import`` with the export file itself as the body (``application/x-ndjson``)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    return Call(
        "POST",
        OPERATIONS["import_ndjson"].path,
        params=query_for("import_ndjson", options),
        content=data,
        headers={"Content-Type": "application/x-ndjson"},
    )


def parse_line(line: str) -> dict[str, Any]:
    """One line of the export stream (docs/export-import.md#the-format-version-2)."""
    record = json.loads(line)
    if not isinstance(record, dict):
        raise ValueError(f"an export line is not a JSON object: {line[:80]!r}")
    return record
