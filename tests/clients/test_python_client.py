"""The Python client (clients/python, docs/sdks.md) against respx-mocked HTTP: what each method sends,
how the answers come back, and every error status as its typed exception carrying the API's fields."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import respx
from reasoningbank_client import (
    AsyncReasoningBank,
    AuthenticationError,
    Conflict,
    ConnectionFailed,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ReasoningBank,
    ReasoningBankError,
    ServerError,
    ServiceUnavailable,
    UnsupportedMediaType,
    ValidationError,
)

pytestmark = pytest.mark.anyio
URL = "https://memory.example.com"
TOKEN = "rb_test_token"


def error_body(code: str, detail: str = "went wrong", errors: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {"detail": detail, "code": code, "errors": errors or {}}


@pytest.fixture
def bank():
    with ReasoningBank(URL, TOKEN) as client:
        yield client


def test_search_posts_its_keyword_arguments_as_the_json_body_with_the_bearer_token(bank):
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/search").respond(
            200, json={"memories": [], "total_found": 0, "tokens_used": 0}
        )
        answer = bank.search(query="flaky test", limit=3, mode="deep")
    request = route.calls.last.request
    assert json.loads(request.content) == {"query": "flaky test", "limit": 3, "mode": "deep"}
    assert request.headers["Authorization"] == f"Bearer {TOKEN}"
    assert request.headers["User-Agent"].startswith("reasoningbank-client-python/")
    assert answer["total_found"] == 0


def test_an_injection_search_sends_inject_and_returns_the_services_framed_block(bank):
    block = (
        '<reasoningbank_memories>\nNotes…\n<memory id="mem_1" source="recorded by alice">\n…\n</memory>\n'
        "</reasoningbank_memories>"
    )
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/search").respond(
            200, json={"memories": [{"id": "mem_1"}], "total_found": 1, "tokens_used": 9, "injection_block": block}
        )
        answer = bank.search(query="flaky test", inject=True, token_budget=600, session_id="s", exclude_seen=True)
    assert json.loads(route.calls.last.request.content) == {
        "query": "flaky test", "inject": True, "token_budget": 600, "session_id": "s", "exclude_seen": True
    }
    assert answer["injection_block"] == block


def test_a_token_function_is_asked_on_every_request_so_a_refreshed_oauth_token_is_used():
    tokens = iter(["oauth_first", "oauth_second"])
    with ReasoningBank(URL, lambda: next(tokens)) as client, respx.mock(base_url=URL) as mock:
        route = mock.get(url__regex=r"/api/v1/memories/.+").respond(200, json={"id": "mem_1"})
        client.get("mem_1")
        client.get("mem_1")
    assert [call.request.headers["Authorization"] for call in route.calls] == [
        "Bearer oauth_first",
        "Bearer oauth_second",
    ]


def test_the_url_and_token_come_from_the_environment_when_not_given(monkeypatch):
    monkeypatch.setenv("REASONINGBANK_URL", URL + "/")
    monkeypatch.setenv("REASONINGBANK_TOKEN", TOKEN)
    with ReasoningBank() as client:
        assert client.base_url == URL


def test_a_missing_token_is_refused_before_any_request(monkeypatch):
    monkeypatch.delenv("REASONINGBANK_TOKEN", raising=False)
    with pytest.raises(ValueError, match="no token"):
        ReasoningBank(URL)


def test_a_memory_id_is_quoted_into_its_path_segment(bank):
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/a%2F..%2Fb/feedback").respond(
            200, json={"success": True, "new_confidence": 0.6, "message": "ok"}
        )
        bank.feedback("a/../b", helpful=True)
    assert json.loads(route.calls.last.request.content) == {"helpful": True}


def test_a_get_names_the_reading_session_as_a_query_parameter_only_when_given(bank):
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/memories/mem_1").respond(200, json={"id": "mem_1"})
        bank.get("mem_1")
        bank.get("mem_1", session_id="sess-1")
    assert [dict(call.request.url.params) for call in route.calls] == [{}, {"session_id": "sess-1"}]


STATUSES = [
    (400, "invalid", ValidationError),
    (401, "not_authenticated", AuthenticationError),
    (403, "plan_required", PermissionDenied),
    (404, "not_found", NotFound),
    (409, "conflict", Conflict),
    (413, "too_large", PayloadTooLarge),
    (415, "unsupported_media_type", UnsupportedMediaType),
    (422, "rejected_no_reusable_value", ValidationError),
    (429, "throttled", RateLimited),
    (502, "llm_error", ServerError),
    (503, "database_unavailable", ServiceUnavailable),
]


@pytest.mark.parametrize(("status", "code", "error_class"), STATUSES)
def test_each_error_status_raises_its_typed_exception_with_the_apis_code_detail_and_errors(
    bank, status, code, error_class
):
    body = error_body(code, "Say what to do.", {"title": ["This field is required."]})
    with respx.mock(base_url=URL) as mock:
        mock.post("/api/v1/memories").respond(status, json=body)
        with pytest.raises(error_class) as caught:
            bank.record(title="t", description="d", content="c", outcome="success")
    error = caught.value
    assert (error.status, error.code, error.detail, error.errors) == (status, code, "Say what to do.", body["errors"])
    assert isinstance(error, ReasoningBankError)


def test_a_rate_limited_answer_carries_its_retry_after_in_seconds(bank, monkeypatch):
    import reasoningbank_client.client as client_module

    waited: list[float] = []  # the waits between the retries, taken as asked (not slept)
    monkeypatch.setattr(client_module, "retry_sleep", waited.append)
    with respx.mock(base_url=URL) as mock:
        mock.post("/api/v1/memories/search").respond(429, json=error_body("throttled"), headers={"Retry-After": "17"})
        with pytest.raises(RateLimited) as caught:
            bank.search(query="x")
    assert caught.value.retry_after == pytest.approx(17.0)
    assert waited == [pytest.approx(17.0), pytest.approx(17.0)]


def test_an_error_page_not_in_the_apis_shape_keeps_its_text_and_status(bank):
    with respx.mock(base_url=URL) as mock:
        mock.get(url__regex=r"/api/v1/memories/.+").respond(502, text="<html>Bad gateway</html>")
        with pytest.raises(ServerError) as caught:
            bank.get("mem_1")
    assert (caught.value.status, caught.value.code) == (502, "http_502")
    assert "Bad gateway" in caught.value.detail


def test_a_service_that_does_not_answer_is_a_connection_failed_error(bank):
    with respx.mock(base_url=URL) as mock:
        mock.post("/api/v1/memories/context").mock(side_effect=httpx.ConnectError("refused"))
        with pytest.raises(ConnectionFailed) as caught:
            bank.context(project="web-app")
    assert (caught.value.status, caught.value.code) == (0, "connection_failed")


EXPORT_LINES = [
    {"type": "header", "format": "reasoningbank", "version": 1},
    {"type": "memory", "id": "mem_1", "title": "Pin the toolchain"},
]


def test_export_yields_each_streamed_line_as_a_record_and_passes_its_options(bank):
    text = "".join(json.dumps(line) + "\n" for line in EXPORT_LINES) + "\n"
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/export").respond(200, text=text, headers={"Content-Type": "application/x-ndjson"})
        records = list(bank.export(project="web-app", embeddings=True))
    assert records == EXPORT_LINES
    assert dict(route.calls.last.request.url.params) == {"project": "web-app", "embeddings": "true"}


def test_an_export_refused_raises_its_typed_error_before_any_record(bank):
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/v1/export").respond(403, json=error_body("permission_denied", "Needs admin."))
        with pytest.raises(PermissionDenied, match="Needs admin"):
            next(bank.export())


def test_import_ndjson_sends_the_file_as_it_is_with_its_options_as_query_parameters(bank):
    text = "".join(json.dumps(line) + "\n" for line in EXPORT_LINES)
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/import").respond(200, json={"created": {"memories": 1}})
        bank.import_ndjson(text, project="web-app", dry_run=True, reviewed=True, source_name="acme.jsonl")
    request = route.calls.last.request
    assert request.headers["Content-Type"] == "application/x-ndjson"
    assert request.content.decode() == text
    assert dict(request.url.params) == {
        "project": "web-app", "dry_run": "true", "reviewed": "true", "source_name": "acme.jsonl",
    }  # fmt: skip


def test_import_bank_sends_a_json_body(bank):
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/import").respond(200, json={"created": {}})
        bank.import_bank(text="# CLAUDE.md\n- Use uv.", format="claude-md")
    assert route.calls.last.request.headers["Content-Type"] == "application/json"
    assert json.loads(route.calls.last.request.content) == {"text": "# CLAUDE.md\n- Use uv.", "format": "claude-md"}


async def test_the_async_client_sends_the_same_requests_and_raises_the_same_errors():
    async with AsyncReasoningBank(URL, TOKEN) as client:
        with respx.mock(base_url=URL) as mock:
            route = mock.post("/api/v1/sessions").respond(201, json={"id": "ses_1", "status": "queued"})
            mock.post(url__regex=r"/api/v1/memories/.+/outcome").respond(
                404, json=error_body("not_found", "No such memory.")
            )
            submitted = await client.session_submit(session_id="s-1", outcome="success", trace="did things")
            with pytest.raises(NotFound) as caught:
                await client.outcome("mem_other", succeeded=True)
    assert submitted["status"] == "queued"
    assert json.loads(route.calls.last.request.content) == {
        "session_id": "s-1",
        "outcome": "success",
        "trace": "did things",
    }
    assert (caught.value.status, caught.value.code, caught.value.detail) == (404, "not_found", "No such memory.")


async def test_the_async_export_streams_records_and_import_ndjson_streams_chunks():
    text = "".join(json.dumps(line) + "\n" for line in EXPORT_LINES)
    async with AsyncReasoningBank(URL, TOKEN) as client:
        with respx.mock(base_url=URL) as mock:
            mock.get("/api/v1/export").respond(200, text=text)
            route = mock.post("/api/v1/import").respond(200, json={"created": {}})
            records = [record async for record in client.export()]
            await client.import_ndjson(iter([line.encode() + b"\n" for line in text.splitlines()]))
    assert records == EXPORT_LINES
    assert route.calls.last.request.content.decode() == text


def memory_page(ids: list[str], *, last: bool) -> dict[str, Any]:
    return {
        "count": 5,
        "next": None if last else "http://internal:8000/api/v1/memories?page=9",
        "previous": None,
        "results": [{"id": memory_id} for memory_id in ids],
    }


PAGES = [memory_page(["m1", "m2"], last=False), memory_page(["m3", "m4"], last=False), memory_page(["m5"], last=True)]


def test_a_list_is_iterated_item_by_item_over_every_page_with_its_filters(bank):
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/memories").mock(side_effect=[httpx.Response(200, json=page) for page in PAGES])
        listing = bank.memory_list(project="web-app", tag=["ci", "build"], page_size=2)
        assert route.call_count == 0  # nothing is fetched before it is needed
        ids = [memory["id"] for memory in listing]
    assert ids == ["m1", "m2", "m3", "m4", "m5"]
    # the page number is counted, never `next` followed (it names the service's own idea of its host)
    assert [call.request.url.params.get_list("page") for call in route.calls] == [["1"], ["2"], ["3"]]
    assert [call.request.url.host for call in route.calls] == ["memory.example.com"] * 3
    first = route.calls[0].request.url.params
    assert first.get_list("tag") == ["ci", "build"] and first["project"] == "web-app" and first["page_size"] == "2"


def test_a_list_gives_its_pages_and_starts_at_the_page_asked_for(bank):
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/sessions").mock(side_effect=[httpx.Response(200, json=page) for page in PAGES[1:]])
        pages = list(bank.session_list(status="failed", page=2).pages())
    assert [len(page["results"]) for page in pages] == [2, 1]
    assert [call.request.url.params["page"] for call in route.calls] == ["2", "3"]
    assert route.calls[0].request.url.params["status"] == "failed"


async def test_the_async_client_lists_with_async_for_over_items_and_pages():
    async with AsyncReasoningBank(URL, TOKEN) as client:
        with respx.mock(base_url=URL) as mock:
            route = mock.get("/api/v1/memories").mock(
                side_effect=[httpx.Response(200, json=page) for page in PAGES + PAGES]
            )
            ids = [memory["id"] async for memory in client.memory_list(state="any")]
            sizes = [page["count"] async for page in client.memory_list().pages()]
    assert ids == ["m1", "m2", "m3", "m4", "m5"] and sizes == [5, 5, 5]
    assert route.call_count == 6 and route.calls[0].request.url.params["state"] == "any"
