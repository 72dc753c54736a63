"""The REST operations the clients call: one row per method, naming the OpenAPI operation it is, so the
drift check (docs/sdks.md#the-drift-check) can compare each row with the live schema, and the request
each method builds, shared by the sync and the async client."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True)
class Operation:
    """One REST operation: its OpenAPI ``operationId``, method, path template and the names of the
    request and response body components (``None``: no JSON body / a stream). ``idempotent``: repeating
    it does no more than doing it once, so the clients retry it (docs/sdks.md#retries-and-timeouts).
    ``paged``: a list (``page``, ``page_size`` → ``{count, next, previous, results}``) whose query
    parameters are the generated ``<OperationId>Query`` model."""

    operation_id: str
    method: str
    path: str
    request: str | None
    response: str | None
    query: tuple[str, ...] = ()
    idempotent: bool = False
    paged: bool = False

    @property
    def query_model(self) -> str | None:
        """The name of the generated TypedDict of a list's query parameters (``MemoriesListQuery``)."""
        if not self.paged:
            return None
        return "".join(part.capitalize() for part in self.operation_id.split("_")) + "Query"


# Idempotent, and so retried: what is read (GET, and search, context and ask, reads sent as POST for their
# bodies; the use a search counts and an ask's LLM call are its bookkeeping), and the writes the service
# makes idempotent: a record identical to an active memory answers with that memory's id and writes
# nothing, a session is idempotent on its session_id, a code report signals once. Not retried unless the
# caller says so: feedback and outcome (each call is one more signal), consolidate (a second run), import.


OPERATIONS: dict[str, Operation] = {
    "search": Operation(
        "memories_search", "POST", "/api/v1/memories/search", "SearchRequest", "SearchResponse", idempotent=True
    ),
    "record": Operation(
        "memories_create", "POST", "/api/v1/memories", "RecordRequest", "RecordResponse", idempotent=True
    ),
    "get": Operation("memories_retrieve", "GET", "/api/v1/memories/{memory_id}", None, "MemoryOut", idempotent=True),
    "feedback": Operation(
        "memories_feedback", "POST", "/api/v1/memories/{memory_id}/feedback", "FeedbackRequest", "FeedbackResponse"
    ),
    "outcome": Operation(
        "memories_outcome", "POST", "/api/v1/memories/{memory_id}/outcome", "OutcomeRequest", "OutcomeResponse"
    ),
    "context": Operation(
        "memories_context", "POST", "/api/v1/memories/context", "ContextRequest", "ContextResponse", idempotent=True
    ),
    "ask": Operation("memories_ask", "POST", "/api/v1/memories/ask", "AskRequest", "AskResponse", idempotent=True),
    # a read sent as POST: what it notes in the session's ledger is noted once, however often it is sent
    "recall": Operation(
        "memories_recall", "POST", "/api/v1/memories/recall", "RecallRequest", "RecallResponse", idempotent=True
    ),
    "session_submit": Operation(
        "sessions_submit",
        "POST",
        "/api/v1/sessions",
        "SessionSubmitRequest",
        "SessionSubmitResponse",
        idempotent=True,
    ),
    "session_get": Operation(
        "sessions_retrieve", "GET", "/api/v1/sessions/{session_id}", None, "SessionDetail", idempotent=True
    ),
    "session_code_report": Operation(
        "sessions_code_report",
        "POST",
        "/api/v1/sessions/code-report",
        "CodeReportRequest",
        "CodeReportResponse",
        idempotent=True,
    ),
    "code_changes_report": Operation(
        "code_changes_report",
        "POST",
        "/api/v1/code/changes",
        "CodeChangesRequest",
        "CodeChangesResponse",
        idempotent=True,
    ),
    "consolidate": Operation(
        "consolidation_runs_create",
        "POST",
        "/api/v1/consolidation/runs",
        "ConsolidateRestRequest",
        "ConsolidateResponse",
    ),
    # seeding skips the commits the service already has: the same request twice submits them once
    "history_seed": Operation(
        "code_history_seed", "POST", "/api/v1/code/history", "HistorySeedRequest", "HistorySeedResponse",
        idempotent=True,
    ),
    "history_progress": Operation(
        "code_history_progress", "GET", "/api/v1/code/history", None, "HistoryProgressResponse",
        ("repository", "project"), idempotent=True,
    ),
    "export": Operation("bank_export", "GET", "/api/v1/export", None, None, ("project", "embeddings"), idempotent=True),
    "import_bank": Operation("bank_import", "POST", "/api/v1/import", "ImportRequestRequest", "ImportResult"),
    "import_ndjson": Operation(
        "bank_import", "POST", "/api/v1/import", None, "ImportResult", ("project", "dry_run", "source_name", "reviewed")
    ),
    "memory_list": Operation(
        "memories_list", "GET", "/api/v1/memories", None, "PaginatedMemoryList", idempotent=True, paged=True
    ),
    "session_list": Operation(
        "sessions_list", "GET", "/api/v1/sessions", None, "PaginatedSessionList", idempotent=True, paged=True
    ),
}

# the components models.py is generated for (clients/python/generate_models.py): every body above and the error
MODEL_ROOTS: tuple[str, ...] = tuple(
    dict.fromkeys(
        [name for op in OPERATIONS.values() for name in (op.request, op.response) if name is not None] + ["Error"]
    )
)
# the TypedDicts of the lists' query parameters models.py has too: name → operationId
QUERY_MODELS: dict[str, str] = {
    op.query_model: op.operation_id for op in OPERATIONS.values() if op.query_model is not None
}


QueryValue = str | list[str]


@dataclass
class Call:
    """One HTTP request, built the same way for both clients; ``idempotent`` says whether it may be retried."""

    method: str
    path: str
    json: Mapping[str, Any] | None = None
    params: dict[str, QueryValue] = field(default_factory=dict)
    content: bytes | Iterable[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    idempotent: bool = False

    @property
    def replayable(self) -> bool:
        """A body streamed from an iterable is gone once sent: such a call is never repeated."""
        return self.content is None or isinstance(self.content, bytes)


def call_for(name: str, body: Mapping[str, Any] | None = None, **path: str) -> Call:
    """The request for a JSON operation; path parameters are quoted (an id never escapes its segment)."""
    operation = OPERATIONS[name]
    url = operation.path.format(**{key: quote(value, safe="") for key, value in path.items()})
    return Call(operation.method, url, json=dict(body) if body is not None else None, idempotent=operation.idempotent)


def get_call(memory_id: str, session_id: str | None) -> Call:
    """``get`` of one memory, naming the reading session when there is one (a use of the memory)."""
    call = call_for("get", memory_id=memory_id)
    return replace(call, params={"session_id": session_id}) if session_id else call


def query_value(value: Any) -> QueryValue:
    """One query parameter as the API spells it: booleans ``true``/``false``, a list repeated (``tag=a&tag=b``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return [str(query_value(item)) for item in value]
    return str(value)


def page_call(name: str, query: Mapping[str, Any], page: int) -> Call:
    """One page of a list: its filters (typed by the generated ``…Query`` model; the service refuses an
    unknown one with a 400 naming it) and the page number, from 1."""
    operation = OPERATIONS[name]
    params = {key: query_value(value) for key, value in query.items() if value is not None and key != "page"}
    params["page"] = str(page)
    return Call("GET", operation.path, params=params, idempotent=operation.idempotent)


def query_for(name: str, options: Mapping[str, Any]) -> dict[str, QueryValue]:
    """Query parameters of ``name`` from the options that are set (booleans as the API spells them)."""
    allowed = OPERATIONS[name].query
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(f"{name}() got unexpected options: {', '.join(unknown)}")
    return {key: query_value(value) for key, value in options.items() if value is not None}


def export_call(project: str | None, embeddings: bool) -> Call:
    return Call(
        "GET",
        OPERATIONS["export"].path,
        params=query_for("export", {"project": project, "embeddings": embeddings}),
        idempotent=OPERATIONS["export"].idempotent,
    )


def history_progress_call(repository: str, project: str | None) -> Call:
    return Call(
        "GET",
        OPERATIONS["history_progress"].path,
        params=query_for("history_progress", {"repository": repository, "project": project}),
        idempotent=True,
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
