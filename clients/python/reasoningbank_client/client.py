"""``ReasoningBank`` (sync) and ``AsyncReasoningBank``: one typed method per agent operation of the REST API
(docs/sdks.md). Bodies are the API's own (``models.py``, generated from its OpenAPI schema), passed as
keyword arguments and checked by a type checker; errors are the typed exceptions of ``errors.py``."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator
from typing import Any, Unpack, cast

import httpx

from reasoningbank_client import models
from reasoningbank_client.errors import ConnectionFailed, error_from
from reasoningbank_client.operations import Call, call_for, export_call, ndjson_call, parse_line

__version__ = "0.1.0"
USER_AGENT = f"reasoningbank-client-python/{__version__}"
DEFAULT_TIMEOUT = 60.0

TokenSource = str | Callable[[], str]


class BearerAuth(httpx.Auth):
    """``Authorization: Bearer …`` on every request. An API token (``rb_…``) is a string; an OAuth access
    token that the caller refreshes is a function returning the current one, asked on each request."""

    def __init__(self, token: TokenSource) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self.token() if callable(self.token) else self.token
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


def settings_from(base_url: str | None, token: TokenSource | None) -> tuple[str, TokenSource]:
    """The service's URL and the token, from the arguments or ``REASONINGBANK_URL`` / ``REASONINGBANK_TOKEN``
    (the variables the agent integrations read)."""
    url = base_url or os.environ.get("REASONINGBANK_URL", "")
    found = token or os.environ.get("REASONINGBANK_TOKEN", "")
    if not url:
        raise ValueError("no service URL: pass base_url= or set REASONINGBANK_URL")
    if not found:
        raise ValueError("no token: pass token= (an API token or an OAuth access token) or set REASONINGBANK_TOKEN")
    return url.rstrip("/"), found


def json_of(response: httpx.Response) -> Any:
    if response.is_error:
        raise error_from(response)
    return response.json()


class ReasoningBank:
    """The synchronous client. ``with ReasoningBank(url, token) as bank: bank.search(query="…")``."""

    def __init__(
        self,
        base_url: str | None = None,
        token: TokenSource | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        http_client: httpx.Client | None = None,
    ) -> None:
        url, found = settings_from(base_url, token)
        self.http = http_client or httpx.Client(timeout=timeout)
        self.base_url = url
        self.auth = BearerAuth(found)

    def __enter__(self) -> ReasoningBank:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def request(self, call: Call) -> httpx.Response:
        try:
            return self.http.request(
                call.method,
                self.base_url + call.path,
                json=call.json,
                params=call.params,
                content=call.content,
                headers={"User-Agent": USER_AGENT, **call.headers},
                auth=self.auth,
            )
        except httpx.TransportError as exc:
            raise ConnectionFailed(str(exc) or type(exc).__name__, status=0, code="connection_failed") from exc

    def send(self, call: Call) -> Any:
        return json_of(self.request(call))

    def search(self, **body: Unpack[models.SearchRequest]) -> models.SearchResponse:
        return cast(models.SearchResponse, self.send(call_for("search", body)))

    def record(self, **body: Unpack[models.RecordRequest]) -> models.RecordResponse:
        return cast(models.RecordResponse, self.send(call_for("record", body)))

    def get(self, memory_id: str) -> models.MemoryOut:
        return cast(models.MemoryOut, self.send(call_for("get", memory_id=memory_id)))

    def feedback(self, memory_id: str, **body: Unpack[models.FeedbackRequest]) -> models.FeedbackResponse:
        return cast(models.FeedbackResponse, self.send(call_for("feedback", body, memory_id=memory_id)))

    def outcome(self, memory_id: str, **body: Unpack[models.OutcomeRequest]) -> models.OutcomeResponse:
        return cast(models.OutcomeResponse, self.send(call_for("outcome", body, memory_id=memory_id)))

    def context(self, **body: Unpack[models.ContextRequest]) -> models.ContextResponse:
        return cast(models.ContextResponse, self.send(call_for("context", body)))

    def ask(self, **body: Unpack[models.AskRequest]) -> models.AskResponse:
        return cast(models.AskResponse, self.send(call_for("ask", body)))

    def session_submit(self, **body: Unpack[models.SessionSubmitRequest]) -> models.SessionSubmitResponse:
        return cast(models.SessionSubmitResponse, self.send(call_for("session_submit", body)))

    def session_get(self, session_id: str) -> models.SessionDetail:
        return cast(models.SessionDetail, self.send(call_for("session_get", session_id=session_id)))

    def session_code_report(self, **body: Unpack[models.CodeReportRequest]) -> models.CodeReportResponse:
        return cast(models.CodeReportResponse, self.send(call_for("session_code_report", body)))

    def consolidate(self, **body: Unpack[models.ConsolidateRestRequest]) -> models.ConsolidateResponse:
        return cast(models.ConsolidateResponse, self.send(call_for("consolidate", body)))

    def import_bank(self, **body: Unpack[models.ImportRequestRequest]) -> models.ImportResult:
        """Import from text: a ReasoningBank export, a CLAUDE.md (``format="claude-md"``) or a mem0 export."""
        return cast(models.ImportResult, self.send(call_for("import_bank", body)))

    def import_ndjson(
        self,
        content: str | bytes | Iterable[bytes],
        *,
        project: str | None = None,
        dry_run: bool | None = None,
        source_name: str | None = None,
        reviewed: bool | None = None,
    ) -> models.ImportResult:
        """Import an export file as it is (JSON Lines, streamed from an iterable of bytes if you like).
        ``reviewed=True``: you read the file, and its memories are trusted for injection at once (else they
        wait for a person's review); ``source_name``: the file's name, kept in each memory's provenance."""
        options = {"project": project, "dry_run": dry_run, "source_name": source_name, "reviewed": reviewed}
        return cast(models.ImportResult, self.send(ndjson_call(content, options)))

    def export(self, *, project: str | None = None, embeddings: bool = False) -> Iterator[dict[str, Any]]:
        """The bank as it streams, one record (a JSON Lines line) at a time: the header first, then the
        projects, memories, links… (docs/export-import.md#the-format-version-2)."""
        call = export_call(project, embeddings)
        try:
            with self.http.stream(
                call.method,
                self.base_url + call.path,
                params=call.params,
                headers={"User-Agent": USER_AGENT},
                auth=self.auth,
            ) as response:
                if response.is_error:
                    response.read()
                    raise error_from(response)
                for line in response.iter_lines():
                    if line.strip():
                        yield parse_line(line)
        except httpx.TransportError as exc:
            raise ConnectionFailed(str(exc) or type(exc).__name__, status=0, code="connection_failed") from exc


class AsyncReasoningBank:
    """The asynchronous client: the same methods as :class:`ReasoningBank`, awaited."""

    def __init__(
        self,
        base_url: str | None = None,
        token: TokenSource | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        url, found = settings_from(base_url, token)
        self.http = http_client or httpx.AsyncClient(timeout=timeout)
        self.base_url = url
        self.auth = BearerAuth(found)

    async def __aenter__(self) -> AsyncReasoningBank:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def request(self, call: Call) -> httpx.Response:
        try:
            return await self.http.request(
                call.method,
                self.base_url + call.path,
                json=call.json,
                params=call.params,
                content=async_content(call.content),
                headers={"User-Agent": USER_AGENT, **call.headers},
                auth=self.auth,
            )
        except httpx.TransportError as exc:
            raise ConnectionFailed(str(exc) or type(exc).__name__, status=0, code="connection_failed") from exc

    async def send(self, call: Call) -> Any:
        return json_of(await self.request(call))

    async def search(self, **body: Unpack[models.SearchRequest]) -> models.SearchResponse:
        return cast(models.SearchResponse, await self.send(call_for("search", body)))

    async def record(self, **body: Unpack[models.RecordRequest]) -> models.RecordResponse:
        return cast(models.RecordResponse, await self.send(call_for("record", body)))

    async def get(self, memory_id: str) -> models.MemoryOut:
        return cast(models.MemoryOut, await self.send(call_for("get", memory_id=memory_id)))

    async def feedback(self, memory_id: str, **body: Unpack[models.FeedbackRequest]) -> models.FeedbackResponse:
        return cast(models.FeedbackResponse, await self.send(call_for("feedback", body, memory_id=memory_id)))

    async def outcome(self, memory_id: str, **body: Unpack[models.OutcomeRequest]) -> models.OutcomeResponse:
        return cast(models.OutcomeResponse, await self.send(call_for("outcome", body, memory_id=memory_id)))

    async def context(self, **body: Unpack[models.ContextRequest]) -> models.ContextResponse:
        return cast(models.ContextResponse, await self.send(call_for("context", body)))

    async def ask(self, **body: Unpack[models.AskRequest]) -> models.AskResponse:
        return cast(models.AskResponse, await self.send(call_for("ask", body)))

    async def session_submit(self, **body: Unpack[models.SessionSubmitRequest]) -> models.SessionSubmitResponse:
        return cast(models.SessionSubmitResponse, await self.send(call_for("session_submit", body)))

    async def session_get(self, session_id: str) -> models.SessionDetail:
        return cast(models.SessionDetail, await self.send(call_for("session_get", session_id=session_id)))

    async def session_code_report(self, **body: Unpack[models.CodeReportRequest]) -> models.CodeReportResponse:
        return cast(models.CodeReportResponse, await self.send(call_for("session_code_report", body)))

    async def consolidate(self, **body: Unpack[models.ConsolidateRestRequest]) -> models.ConsolidateResponse:
        return cast(models.ConsolidateResponse, await self.send(call_for("consolidate", body)))

    async def import_bank(self, **body: Unpack[models.ImportRequestRequest]) -> models.ImportResult:
        return cast(models.ImportResult, await self.send(call_for("import_bank", body)))

    async def import_ndjson(
        self,
        content: str | bytes | Iterable[bytes],
        *,
        project: str | None = None,
        dry_run: bool | None = None,
        source_name: str | None = None,
        reviewed: bool | None = None,
    ) -> models.ImportResult:
        options = {"project": project, "dry_run": dry_run, "source_name": source_name, "reviewed": reviewed}
        return cast(models.ImportResult, await self.send(ndjson_call(content, options)))

    async def export(self, *, project: str | None = None, embeddings: bool = False) -> AsyncIterator[dict[str, Any]]:
        call = export_call(project, embeddings)
        try:
            async with self.http.stream(
                call.method,
                self.base_url + call.path,
                params=call.params,
                headers={"User-Agent": USER_AGENT},
                auth=self.auth,
            ) as response:
                if response.is_error:
                    await response.aread()
                    raise error_from(response)
                async for line in response.aiter_lines():
                    if line.strip():
                        yield parse_line(line)
        except httpx.TransportError as exc:
            raise ConnectionFailed(str(exc) or type(exc).__name__, status=0, code="connection_failed") from exc


def async_content(content: bytes | Iterable[bytes] | None) -> bytes | AsyncIterator[bytes] | None:
    """An async client streams only async iterables: a sync iterable of bytes chunks is handed over."""
    if content is None or isinstance(content, bytes):
        return content

    async def chunks() -> AsyncIterator[bytes]:
        for chunk in content:
            yield chunk

    return chunks()
