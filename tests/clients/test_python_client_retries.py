"""The Python client's retries, timeouts and error identity (docs/sdks.md#retries-and-timeouts), against
respx-mocked HTTP and, for what only a socket shows (a refused connection, a connection that never opens),
real sockets on loopback: which calls are repeated and how often, the waits ``Retry-After`` asks for, the
request id on every error, and the cause of a connection failure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
import respx
from reasoningbank_client import (
    AsyncReasoningBank,
    ConnectionFailed,
    NotFound,
    RateLimited,
    ReasoningBank,
    RetryPolicy,
    ServiceUnavailable,
)
from reasoningbank_client import client as client_module
from reasoningbank_client.retrying import retry_after_parse

from tests.clients.scripted_server import refused_port, unanswered_listener

pytestmark = pytest.mark.anyio
URL = "https://memory.example.com"
TOKEN = "rb_test_token"
BUSY = {"detail": "The service is busy.", "code": "database_unavailable", "errors": {}}
HITS = {"memories": [], "total_found": 0, "tokens_used": 0}


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits between attempts, recorded instead of slept (sync and async clients alike)."""
    asked: list[float] = []

    async def no_sleep(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(client_module, "retry_sleep", asked.append)
    monkeypatch.setattr(client_module, "retry_sleep_async", no_sleep)
    return asked


@pytest.fixture
def bank() -> Iterator[ReasoningBank]:
    with ReasoningBank(URL, TOKEN) as client:
        yield client


def busy(seconds: str = "3", request_id: str = "req-busy") -> httpx.Response:
    return httpx.Response(503, json=BUSY, headers={"Retry-After": seconds, "X-Request-ID": request_id})


def test_a_503_with_retry_after_then_200_is_retried_once_after_the_wait_the_service_asked_for(bank, waits):
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/search").mock(side_effect=[busy("3"), httpx.Response(200, json=HITS)])
        answer = bank.search(query="flaky test")
    assert answer["total_found"] == 0
    assert route.call_count == 2
    assert len(waits) == 1 and waits[0] >= 3.0  # never sooner than Retry-After
    first, second = (call.request for call in route.calls)
    assert json.loads(second.content) == json.loads(first.content) == {"query": "flaky test"}
    # one call, one request id over its attempts (the service logs both under it)
    assert first.headers["X-Request-ID"] == second.headers["X-Request-ID"]


def test_a_429_then_200_is_retried_and_an_http_date_retry_after_is_read_as_seconds(bank, waits):
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=20), usegmt=True)
    throttled = httpx.Response(429, json={"detail": "slow down", "code": "throttled", "errors": {}})
    throttled.headers["Retry-After"] = later
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/memories/mem_1").mock(side_effect=[throttled, httpx.Response(200, json={"id": "m"})])
        assert bank.get("mem_1")["id"] == "m"
    assert route.call_count == 2
    assert 15.0 <= waits[0] <= 30.0


def test_retries_stop_after_max_retries_and_the_error_says_how_many_attempts_were_made(waits):
    with ReasoningBank(URL, TOKEN, max_retries=3) as bank, respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/context").mock(return_value=busy("1", "req-last"))
        with pytest.raises(ServiceUnavailable) as caught:
            bank.context(project="web-app")
    assert route.call_count == 4 and len(waits) == 3
    assert caught.value.attempts == 4 and "after 4 attempts" in str(caught.value)


def test_max_retries_zero_turns_retrying_off(waits):
    with ReasoningBank(URL, TOKEN, max_retries=0) as bank, respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/search").mock(side_effect=[busy(), httpx.Response(200, json=HITS)])
        with pytest.raises(ServiceUnavailable):
            bank.search(query="x")
    assert route.call_count == 1 and waits == []


def test_a_non_idempotent_call_is_not_retried(bank, waits):
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/mem_1/feedback").mock(
            side_effect=[busy(), httpx.Response(200, json={"success": True})]
        )
        with pytest.raises(ServiceUnavailable):
            bank.feedback("mem_1", helpful=True)
    assert route.call_count == 1 and waits == []


def test_a_non_idempotent_call_is_retried_when_the_caller_says_it_may_be(bank, waits):
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/mem_1/feedback").mock(
            side_effect=[busy("1"), httpx.Response(200, json={"success": True})]
        )
        assert bank.feedback("mem_1", helpful=True, request_options={"idempotent": True})["success"] is True
    assert route.call_count == 2
    assert json.loads(route.calls.last.request.content) == {"helpful": True}  # the option is no body field


def test_an_idempotent_call_is_not_retried_when_the_caller_says_so(bank, waits):
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/search").mock(side_effect=[busy(), httpx.Response(200, json=HITS)])
        with pytest.raises(ServiceUnavailable):
            bank.search(query="x", request_options={"idempotent": False})
    assert route.call_count == 1


def test_an_answer_waiting_does_not_fix_is_not_retried(bank, waits):
    no_llm = {"detail": "No LLM is configured.", "code": "llm_not_configured", "errors": {}}
    with respx.mock(base_url=URL) as mock:
        ask = mock.post("/api/v1/memories/ask").respond(503, json=no_llm)
        missing = mock.get("/api/v1/memories/mem_x").respond(404, json={"detail": "No.", "code": "not_found"})
        with pytest.raises(ServiceUnavailable):
            bank.ask(question="why?")
        with pytest.raises(NotFound):
            bank.get("mem_x")
    assert ask.call_count == missing.call_count == 1 and waits == []


def test_a_retry_after_longer_than_the_backoff_cap_is_raised_at_once_with_its_wait(waits):
    with ReasoningBank(URL, TOKEN, backoff_cap=10.0) as bank, respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/memories/search").respond(
            429, json={"detail": "blocked", "code": "throttled"}, headers={"Retry-After": "300"}
        )
        with pytest.raises(RateLimited) as caught:
            bank.search(query="x")
    assert route.call_count == 1 and waits == []
    assert caught.value.retry_after == pytest.approx(300.0)


def test_the_backoff_grows_exponentially_within_its_cap_and_is_jittered():
    policy = RetryPolicy(max_retries=6, backoff_base=0.5, backoff_cap=4.0)
    lowest = [policy.wait(retry, None, rand=lambda: 0.0) for retry in range(1, 7)]
    highest = [policy.wait(retry, None, rand=lambda: 1.0) for retry in range(1, 7)]
    assert lowest == pytest.approx([0.25, 0.5, 1.0, 2.0, 2.0, 2.0])
    assert highest == pytest.approx([0.5, 1.0, 2.0, 4.0, 4.0, 4.0])
    assert policy.wait(7, None) is None  # past max_retries


def test_retry_after_is_read_as_seconds_or_an_http_date_and_nonsense_is_ignored():
    now = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_parse("5", now) == pytest.approx(5.0)
    assert retry_after_parse("Sun, 01 Mar 2026 12:00:42 GMT", now) == pytest.approx(42.0)
    assert retry_after_parse("Sun, 01 Mar 2026 11:00:00 GMT", now) == pytest.approx(0.0)  # in the past: now
    assert retry_after_parse("soon", now) is None and retry_after_parse(None, now) is None


def test_every_error_carries_the_services_request_id_and_shows_it(bank, waits):
    with respx.mock(base_url=URL) as mock:
        mock.get("/api/v1/memories/mem_x").respond(
            404, json={"detail": "No such memory.", "code": "not_found"}, headers={"X-Request-ID": "req-404"}
        )
        with pytest.raises(NotFound) as caught:
            bank.get("mem_x")
    assert caught.value.request_id == "req-404"
    assert str(caught.value) == "404 not_found: No such memory. (request id req-404)"


def test_an_answer_without_a_request_id_gets_the_one_the_client_sent(bank, waits):
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/memories/mem_x").respond(502, text="<html>Bad gateway</html>")
        with pytest.raises(Exception) as caught:
            bank.get("mem_x")
    sent = route.calls.last.request.headers["X-Request-ID"]
    assert len(sent) == 32 and caught.value.request_id == sent and sent in str(caught.value)


def test_a_refused_connection_names_the_host_keeps_its_cause_and_is_retried_for_a_read(waits):
    port = refused_port()
    with ReasoningBank(f"http://127.0.0.1:{port}", TOKEN, max_retries=2) as bank:
        with pytest.raises(ConnectionFailed) as caught:
            bank.search(query="x")
    error = caught.value
    assert (error.status, error.code, error.attempts) == (0, "connection_failed", 3)
    assert f"127.0.0.1:{port}" in str(error) and "ConnectError" in str(error)
    assert isinstance(error.__cause__, httpx.ConnectError)
    assert error.request_id and error.request_id in str(error)
    assert len(waits) == 2


def test_a_connection_failure_of_a_non_idempotent_call_is_not_retried(waits):
    with ReasoningBank(f"http://127.0.0.1:{refused_port()}", TOKEN) as bank, pytest.raises(ConnectionFailed) as caught:
        bank.consolidate(project="web-app")
    assert caught.value.attempts == 1 and waits == []


@pytest.fixture
def unanswered() -> Iterator[tuple[str, int]]:
    with unanswered_listener() as address:
        yield address


def test_the_connect_timeout_is_apart_from_the_read_timeout_and_overridable_per_call(unanswered, waits):
    host, port = unanswered
    with ReasoningBank(f"http://{host}:{port}", TOKEN, timeout=60.0, connect_timeout=30.0, max_retries=0) as bank:
        with pytest.raises(ConnectionFailed) as caught:
            bank.get("mem_1", request_options={"connect_timeout": 0.3})
    assert isinstance(caught.value.__cause__, httpx.ConnectTimeout)
    assert f"cannot reach {host}:{port}" in str(caught.value)


def test_the_timeouts_reach_every_request(bank):
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/memories/mem_1").respond(200, json={"id": "mem_1"})
        bank.get("mem_1")
        bank.get("mem_1", request_options={"timeout": 5.0, "connect_timeout": 1.5})
    first, second = (call.request.extensions["timeout"] for call in route.calls)
    assert (first["connect"], first["read"], first["write"]) == (10.0, 60.0, 60.0)
    assert (second["connect"], second["read"]) == (1.5, 5.0)


async def test_the_async_client_retries_the_same_way_and_shows_the_request_id(waits):
    async with AsyncReasoningBank(URL, TOKEN) as bank:
        with respx.mock(base_url=URL) as mock:
            search = mock.post("/api/v1/memories/search").mock(side_effect=[busy("2"), httpx.Response(200, json=HITS)])
            outcome = mock.post("/api/v1/memories/mem_1/outcome").mock(return_value=busy("1", "req-outcome"))
            await bank.search(query="x")
            with pytest.raises(ServiceUnavailable) as caught:
                await bank.outcome("mem_1", succeeded=True)
    assert search.call_count == 2 and outcome.call_count == 1
    assert waits[0] >= 2.0 and len(waits) == 1
    assert caught.value.request_id == "req-outcome" and "req-outcome" in str(caught.value)


async def test_the_async_client_keeps_the_cause_of_a_refused_connection(waits):
    async with AsyncReasoningBank(f"http://127.0.0.1:{refused_port()}", TOKEN, max_retries=1) as bank:
        with pytest.raises(ConnectionFailed) as caught:
            await bank.get("mem_1")
    assert isinstance(caught.value.__cause__, httpx.ConnectError) and caught.value.attempts == 2


def test_an_export_is_retried_until_its_stream_starts(bank, waits):
    lines = '{"type": "header", "format": "reasoningbank-export", "version": 1}\n{"type": "end"}\n'
    with respx.mock(base_url=URL) as mock:
        route = mock.get("/api/v1/export").mock(side_effect=[busy("1"), httpx.Response(200, text=lines)])
        records = list(bank.export())
    assert [record["type"] for record in records] == ["header", "end"] and route.call_count == 2


def test_a_streamed_import_body_is_never_sent_twice(bank, waits):
    with respx.mock(base_url=URL) as mock:
        route = mock.post("/api/v1/import").mock(side_effect=[busy("1"), httpx.Response(200, json={"created": {}})])
        with pytest.raises(ServiceUnavailable):
            bank.import_ndjson(iter([b'{"type": "header"}\n']), request_options={"idempotent": True})
    assert route.call_count == 1
