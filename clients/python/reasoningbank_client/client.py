"""``ReasoningBank`` (sync) and ``AsyncReasoningBank``: one typed method per agent operation of the REST API
(docs/sdks.md). Bodies are the API's own (``models.py``, generated from its OpenAPI schema), passed as
keyword arguments and checked by a type checker; errors are the typed exceptions of ``errors.py``. Calls that
may be repeated are retried on 429, 503 and connection failures (``retrying.py``)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Unpack, cast

import anyio
import httpx

from reasoningbank_client import git_history, models, seeding
from reasoningbank_client.errors import REQUEST_ID_HEADER, NotFound, ReasoningBankError, connection_failed, error_from
from reasoningbank_client.operations import (
    Call,
    call_for,
    export_call,
    get_call,
    history_progress_call,
    ndjson_call,
    page_call,
    parse_line,
)
from reasoningbank_client.pagination import AsyncPages, Pages
from reasoningbank_client.retrying import (
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_CAP,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    RequestOptions,
    RetryPolicy,
    status_retryable,
)
from reasoningbank_client.version import __version__

USER_AGENT = f"reasoningbank-client-python/{__version__}"

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


def retry_sleep(seconds: float) -> None:
    """The sync client's wait between attempts (a name of its own so that a test can count the waits)."""
    time.sleep(seconds)


async def retry_sleep_async(seconds: float) -> None:
    await anyio.sleep(seconds)  # httpx's own async layer: asyncio and trio alike


@dataclass
class Attempts:
    """One call's attempts: the request id they share (``X-Request-ID``: the service logs it, and echoes
    it), their timeouts, and after each failure whether and when to try again."""

    call: Call
    policy: RetryPolicy
    timeout: httpx.Timeout
    request_id: str
    made: int = 0

    def headers(self) -> dict[str, str]:
        return {"User-Agent": USER_AGENT, REQUEST_ID_HEADER: self.request_id, **self.call.headers}

    def wait_after(self, error: ReasoningBankError | None) -> float | None:
        """Seconds to wait before the next attempt, or ``None`` to give up; ``error`` is the error answer,
        ``None`` when there was no answer (the connection failed or timed out)."""
        if error is not None and not status_retryable(error.status, error.code):
            return None
        return self.policy.wait(self.made, error.retry_after if error is not None else None)


class ClientSettings:
    """What both clients share: the service's address, the token, timeouts and the retry policy."""

    def __init__(
        self,
        base_url: str | None,
        token: TokenSource | None,
        *,
        timeout: float,
        connect_timeout: float,
        max_retries: int,
        backoff_base: float,
        backoff_cap: float,
    ) -> None:
        url, found = settings_from(base_url, token)
        self.base_url = url
        self.auth = BearerAuth(found)
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.policy = RetryPolicy(max_retries=max_retries, backoff_base=backoff_base, backoff_cap=backoff_cap)

    def attempts(self, call: Call, options: RequestOptions | None) -> Attempts:
        given = options or {}
        retried = given.get("idempotent", call.idempotent) and call.replayable
        retries = given.get("max_retries", self.policy.max_retries) if retried else 0
        policy = RetryPolicy(retries, self.policy.backoff_base, self.policy.backoff_cap)
        # the read timeout also bounds a write and the wait for a pooled connection, as httpx's one number did
        timeout = httpx.Timeout(
            given.get("timeout", self.timeout), connect=given.get("connect_timeout", self.connect_timeout)
        )
        return Attempts(call, policy, timeout, uuid.uuid4().hex)

    def build(self, http: httpx.Client | httpx.AsyncClient, attempts: Attempts, content: Any) -> httpx.Request:
        attempts.made += 1
        call = attempts.call
        return http.build_request(
            call.method,
            self.base_url + call.path,
            json=call.json,
            params=call.params,
            content=content,
            headers=attempts.headers(),
            timeout=attempts.timeout,
        )


class ReasoningBank:
    """The synchronous client. ``with ReasoningBank(url, token) as bank: bank.search(query="…")``.

    ``timeout`` (seconds without a byte from the service) and ``connect_timeout`` apply to every request,
    ``max_retries``, ``backoff_base`` and ``backoff_cap`` to the calls that may be repeated
    (docs/sdks.md#retries-and-timeouts); ``request_options=`` on any method overrides them for that call."""

    def __init__(
        self,
        base_url: str | None = None,
        token: TokenSource | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_cap: float = DEFAULT_BACKOFF_CAP,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.settings = ClientSettings(
            base_url,
            token,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
        )
        self.http = http_client or httpx.Client()
        self.base_url = self.settings.base_url

    def __enter__(self) -> ReasoningBank:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def request(self, call: Call, options: RequestOptions | None = None, *, stream: bool = False) -> httpx.Response:
        """One call, tried again while the policy allows; an error answer raises its typed error. A streamed
        answer is the caller's to close."""
        attempts = self.settings.attempts(call, options)
        while True:
            request = self.settings.build(self.http, attempts, call.content)
            try:
                response = self.http.send(request, auth=self.settings.auth, stream=stream)
            except httpx.TransportError as exc:
                wait = attempts.wait_after(None)
                if wait is None:
                    raise connection_failed(
                        exc, request.url, request_id=attempts.request_id, attempts=attempts.made
                    ) from exc
            else:
                if not response.is_error:
                    return response
                try:
                    response.read()
                finally:
                    response.close()
                error = error_from(response, request_id=attempts.request_id, attempts=attempts.made)
                wait = attempts.wait_after(error)
                if wait is None:
                    raise error
            retry_sleep(wait)

    def send(self, call: Call, options: RequestOptions | None = None) -> Any:
        return self.request(call, options).json()

    def search(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.SearchRequest]
    ) -> models.SearchResponse:
        return cast(models.SearchResponse, self.send(call_for("search", body), request_options))

    def record(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.RecordRequest]
    ) -> models.RecordResponse:
        """Record a memory. Retried like a read: an identical active memory is never written twice, so a
        retry whose first attempt was written answers with that memory's id (and ``duplicate_of``)."""
        return cast(models.RecordResponse, self.send(call_for("record", body), request_options))

    def get(
        self, memory_id: str, *, session_id: str | None = None, request_options: RequestOptions | None = None
    ) -> models.MemoryOut:
        """One memory; with ``session_id``, your session reading it for its task: a use of it (its confidence
        moves, the session's ledger notes it). Without, a read that changes nothing."""
        return cast(models.MemoryOut, self.send(get_call(memory_id, session_id), request_options))

    def feedback(
        self, memory_id: str, *, request_options: RequestOptions | None = None, **body: Unpack[models.FeedbackRequest]
    ) -> models.FeedbackResponse:
        call = call_for("feedback", body, memory_id=memory_id)
        return cast(models.FeedbackResponse, self.send(call, request_options))

    def outcome(
        self, memory_id: str, *, request_options: RequestOptions | None = None, **body: Unpack[models.OutcomeRequest]
    ) -> models.OutcomeResponse:
        call = call_for("outcome", body, memory_id=memory_id)
        return cast(models.OutcomeResponse, self.send(call, request_options))

    def context(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.ContextRequest]
    ) -> models.ContextResponse:
        return cast(models.ContextResponse, self.send(call_for("context", body), request_options))

    def ask(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.AskRequest]
    ) -> models.AskResponse:
        return cast(models.AskResponse, self.send(call_for("ask", body), request_options))

    def recall(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.RecallRequest]
    ) -> models.RecallResponse:
        """The memories about a file about to be read or changed (``path``) or a failing command's error
        (``error``), framed for injection (docs/code-memory.md#recall-at-the-moment-of-action)."""
        return cast(models.RecallResponse, self.send(call_for("recall", body), request_options))

    def session_submit(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.SessionSubmitRequest]
    ) -> models.SessionSubmitResponse:
        return cast(models.SessionSubmitResponse, self.send(call_for("session_submit", body), request_options))

    def session_get(self, session_id: str, *, request_options: RequestOptions | None = None) -> models.SessionDetail:
        call = call_for("session_get", session_id=session_id)
        return cast(models.SessionDetail, self.send(call, request_options))

    def session_code_report(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.CodeReportRequest]
    ) -> models.CodeReportResponse:
        return cast(models.CodeReportResponse, self.send(call_for("session_code_report", body), request_options))

    def code_changes_report(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.CodeChangesRequest]
    ) -> models.CodeChangesResponse:
        return cast(models.CodeChangesResponse, self.send(call_for("code_changes_report", body), request_options))

    def consolidate(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.ConsolidateRestRequest]
    ) -> models.ConsolidateResponse:
        return cast(models.ConsolidateResponse, self.send(call_for("consolidate", body), request_options))

    def history_seed(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.HistorySeedRequest]
    ) -> models.HistorySeedResponse:
        return cast(models.HistorySeedResponse, self.send(call_for("history_seed", body), request_options))

    def history_progress(
        self, repository: str, *, project: str | None = None, request_options: RequestOptions | None = None
    ) -> models.HistoryProgressResponse:
        call = history_progress_call(repository, project)
        return cast(models.HistoryProgressResponse, self.send(call, request_options))

    def seed_from_git(
        self,
        repo: str | os.PathLike[str] = ".",
        *,
        project: str | None = None,
        repository: str | None = None,
        since: str = "",
        max_commits: int = 0,
        prs: str | os.PathLike[str] | None = None,
        batch_size: int = 20,
        dry_run: bool = False,
        symbols: bool = True,
        request_options: RequestOptions | None = None,
    ) -> list[models.HistorySeedResponse]:
        """Read the local repository ``repo``'s git log and seed the project's bank with it
        (docs/sdks.md#seeding-from-git-history): the commits after the last one seeded (all of them the first
        time, or after a force-push), posted in requests of 500; each answer says what it submitted, skipped
        and will cost. ``dry_run``: nothing is submitted, the answers carry the estimate."""
        remote = repository or git_history.git_remote(str(repo))
        if not remote:
            raise ValueError(f"{repo} has no git remote: pass repository= (e.g. github.com/acme/api)")
        try:
            last = self.history_progress(remote, project=project, request_options=request_options)["last_commit"]
        except NotFound:
            last = ""
        commits = seeding.history_commits(
            str(repo), last_commit=last, since=since, max_commits=max_commits, prs=prs, symbols=symbols
        )
        base: dict[str, Any] = {"repository": remote, "batch_size": batch_size, "dry_run": dry_run}
        if project is not None:
            base["project"] = project
        return seeding.seed_requests(
            commits, base, lambda body: self.send(call_for("history_seed", body), request_options)
        )

    def import_bank(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.ImportRequestRequest]
    ) -> models.ImportResult:
        """Import from text: a ReasoningBank export, a CLAUDE.md (``format="claude-md"``) or a mem0 export."""
        return cast(models.ImportResult, self.send(call_for("import_bank", body), request_options))

    def import_ndjson(
        self,
        content: str | bytes | Iterable[bytes],
        *,
        project: str | None = None,
        dry_run: bool | None = None,
        source_name: str | None = None,
        reviewed: bool | None = None,
        request_options: RequestOptions | None = None,
    ) -> models.ImportResult:
        """Import an export file as it is (JSON Lines, streamed from an iterable of bytes if you like).
        ``reviewed=True``: you read the file, and its memories are trusted for injection at once (else they
        wait for a person's review); ``source_name``: the file's name, kept in each memory's provenance."""
        options = {"project": project, "dry_run": dry_run, "source_name": source_name, "reviewed": reviewed}
        return cast(models.ImportResult, self.send(ndjson_call(content, options), request_options))

    def memory_list(
        self, *, request_options: RequestOptions | None = None, **query: Unpack[models.MemoriesListQuery]
    ) -> Pages[models.Memory, models.PaginatedMemoryList]:
        """The memories in reach, filtered (``project``, ``tag``, ``state``, ``q``, …), page after page:
        ``for memory in bank.memory_list(project="web-app")``; ``.pages()`` for the pages."""

        def fetch(page: int) -> models.PaginatedMemoryList:
            return cast(models.PaginatedMemoryList, self.send(page_call("memory_list", query, page), request_options))

        return Pages(fetch, query.get("page", 1))

    def session_list(
        self, *, request_options: RequestOptions | None = None, **query: Unpack[models.SessionsListQuery]
    ) -> Pages[models.Session, models.PaginatedSessionList]:
        """The submitted sessions (``status``, ``project``), page after page."""

        def fetch(page: int) -> models.PaginatedSessionList:
            call = page_call("session_list", query, page)
            return cast(models.PaginatedSessionList, self.send(call, request_options))

        return Pages(fetch, query.get("page", 1))

    def export(
        self, *, project: str | None = None, embeddings: bool = False, request_options: RequestOptions | None = None
    ) -> Iterator[dict[str, Any]]:
        """The bank as it streams, one record (a JSON Lines line) at a time: the header first, then the
        projects, memories, links… (docs/export-import.md#the-format-version-2). Needs a token with the
        ``admin`` scope. Retried until the stream starts, never in the middle of it."""
        response = self.request(export_call(project, embeddings), request_options, stream=True)
        try:
            for line in response.iter_lines():
                if line.strip():
                    yield parse_line(line)
        except httpx.TransportError as exc:
            request_id = response.headers.get(REQUEST_ID_HEADER) or response.request.headers[REQUEST_ID_HEADER]
            raise connection_failed(exc, response.request.url, request_id=request_id, attempts=1) from exc
        finally:
            response.close()


class AsyncReasoningBank:
    """The asynchronous client: the same methods as :class:`ReasoningBank`, awaited; the lists are
    ``async for`` iterables."""

    def __init__(
        self,
        base_url: str | None = None,
        token: TokenSource | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_cap: float = DEFAULT_BACKOFF_CAP,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.settings = ClientSettings(
            base_url,
            token,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_cap=backoff_cap,
        )
        self.http = http_client or httpx.AsyncClient()
        self.base_url = self.settings.base_url

    async def __aenter__(self) -> AsyncReasoningBank:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def request(
        self, call: Call, options: RequestOptions | None = None, *, stream: bool = False
    ) -> httpx.Response:
        attempts = self.settings.attempts(call, options)
        while True:
            request = self.settings.build(self.http, attempts, async_content(call.content))
            try:
                response = await self.http.send(request, auth=self.settings.auth, stream=stream)
            except httpx.TransportError as exc:
                wait = attempts.wait_after(None)
                if wait is None:
                    raise connection_failed(
                        exc, request.url, request_id=attempts.request_id, attempts=attempts.made
                    ) from exc
            else:
                if not response.is_error:
                    return response
                try:
                    await response.aread()
                finally:
                    await response.aclose()
                error = error_from(response, request_id=attempts.request_id, attempts=attempts.made)
                wait = attempts.wait_after(error)
                if wait is None:
                    raise error
            await retry_sleep_async(wait)

    async def send(self, call: Call, options: RequestOptions | None = None) -> Any:
        return (await self.request(call, options)).json()

    async def search(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.SearchRequest]
    ) -> models.SearchResponse:
        return cast(models.SearchResponse, await self.send(call_for("search", body), request_options))

    async def record(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.RecordRequest]
    ) -> models.RecordResponse:
        return cast(models.RecordResponse, await self.send(call_for("record", body), request_options))

    async def get(
        self, memory_id: str, *, session_id: str | None = None, request_options: RequestOptions | None = None
    ) -> models.MemoryOut:
        return cast(models.MemoryOut, await self.send(get_call(memory_id, session_id), request_options))

    async def feedback(
        self, memory_id: str, *, request_options: RequestOptions | None = None, **body: Unpack[models.FeedbackRequest]
    ) -> models.FeedbackResponse:
        call = call_for("feedback", body, memory_id=memory_id)
        return cast(models.FeedbackResponse, await self.send(call, request_options))

    async def outcome(
        self, memory_id: str, *, request_options: RequestOptions | None = None, **body: Unpack[models.OutcomeRequest]
    ) -> models.OutcomeResponse:
        call = call_for("outcome", body, memory_id=memory_id)
        return cast(models.OutcomeResponse, await self.send(call, request_options))

    async def context(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.ContextRequest]
    ) -> models.ContextResponse:
        return cast(models.ContextResponse, await self.send(call_for("context", body), request_options))

    async def ask(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.AskRequest]
    ) -> models.AskResponse:
        return cast(models.AskResponse, await self.send(call_for("ask", body), request_options))

    async def recall(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.RecallRequest]
    ) -> models.RecallResponse:
        return cast(models.RecallResponse, await self.send(call_for("recall", body), request_options))

    async def session_submit(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.SessionSubmitRequest]
    ) -> models.SessionSubmitResponse:
        return cast(models.SessionSubmitResponse, await self.send(call_for("session_submit", body), request_options))

    async def session_get(
        self, session_id: str, *, request_options: RequestOptions | None = None
    ) -> models.SessionDetail:
        call = call_for("session_get", session_id=session_id)
        return cast(models.SessionDetail, await self.send(call, request_options))

    async def session_code_report(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.CodeReportRequest]
    ) -> models.CodeReportResponse:
        call = call_for("session_code_report", body)
        return cast(models.CodeReportResponse, await self.send(call, request_options))

    async def code_changes_report(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.CodeChangesRequest]
    ) -> models.CodeChangesResponse:
        call = call_for("code_changes_report", body)
        return cast(models.CodeChangesResponse, await self.send(call, request_options))

    async def consolidate(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.ConsolidateRestRequest]
    ) -> models.ConsolidateResponse:
        return cast(models.ConsolidateResponse, await self.send(call_for("consolidate", body), request_options))

    async def import_bank(
        self, *, request_options: RequestOptions | None = None, **body: Unpack[models.ImportRequestRequest]
    ) -> models.ImportResult:
        return cast(models.ImportResult, await self.send(call_for("import_bank", body), request_options))

    async def import_ndjson(
        self,
        content: str | bytes | Iterable[bytes],
        *,
        project: str | None = None,
        dry_run: bool | None = None,
        source_name: str | None = None,
        reviewed: bool | None = None,
        request_options: RequestOptions | None = None,
    ) -> models.ImportResult:
        options = {"project": project, "dry_run": dry_run, "source_name": source_name, "reviewed": reviewed}
        return cast(models.ImportResult, await self.send(ndjson_call(content, options), request_options))

    def memory_list(
        self, *, request_options: RequestOptions | None = None, **query: Unpack[models.MemoriesListQuery]
    ) -> AsyncPages[models.Memory, models.PaginatedMemoryList]:
        """``async for memory in bank.memory_list(project="web-app")``; ``.pages()`` for the pages."""

        async def fetch(page: int) -> models.PaginatedMemoryList:
            call = page_call("memory_list", query, page)
            return cast(models.PaginatedMemoryList, await self.send(call, request_options))

        return AsyncPages(fetch, query.get("page", 1))

    def session_list(
        self, *, request_options: RequestOptions | None = None, **query: Unpack[models.SessionsListQuery]
    ) -> AsyncPages[models.Session, models.PaginatedSessionList]:
        async def fetch(page: int) -> models.PaginatedSessionList:
            call = page_call("session_list", query, page)
            return cast(models.PaginatedSessionList, await self.send(call, request_options))

        return AsyncPages(fetch, query.get("page", 1))

    async def export(
        self, *, project: str | None = None, embeddings: bool = False, request_options: RequestOptions | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        response = await self.request(export_call(project, embeddings), request_options, stream=True)
        try:
            async for line in response.aiter_lines():
                if line.strip():
                    yield parse_line(line)
        except httpx.TransportError as exc:
            request_id = response.headers.get(REQUEST_ID_HEADER) or response.request.headers[REQUEST_ID_HEADER]
            raise connection_failed(exc, response.request.url, request_id=request_id, attempts=1) from exc
        finally:
            await response.aclose()


def async_content(content: bytes | Iterable[bytes] | None) -> bytes | AsyncIterator[bytes] | None:
    """An async client streams only async iterables: a sync iterable of bytes chunks is handed over."""
    if content is None or isinstance(content, bytes):
        return content

    async def chunks() -> AsyncIterator[bytes]:
        for chunk in content:
            yield chunk

    return chunks()
