"""The TypeScript client's committed build (clients/typescript/dist, docs/sdks.md) under Node.js against a
real HTTP server on loopback (tests/clients/scripted_server.py): retries of the calls that may be repeated,
honouring Retry-After, none for the others unless asked; the request id on every error; a connection
failure that names its host and code and keeps its cause; a connect timeout apart from the read timeout,
which never cuts an export that keeps streaming; lists with ``for await``; the defaults the Python client has."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reasoningbank_client import retrying

from tests.clients.drift import TS_CLIENT, node_missing
from tests.clients.scripted_server import Answer, ScriptedServer, refused_port, unanswered_listener

pytestmark = pytest.mark.skipif(node_missing(), reason="node is not installed: the TypeScript client needs it")
TOKEN = "rb_test_token"
BUSY = {"detail": "The service is busy.", "code": "database_unavailable", "errors": {}}
HITS = {"memories": [], "total_found": 0, "tokens_used": 0}
PRELUDE = f"""
import * as rb from {json.dumps((TS_CLIENT / "dist" / "index.js").as_uri())};
const url = process.env.RB_URL;
const out = (value) => console.log(JSON.stringify(value));
const failure = (error) => ({{
  name: error.name, message: error.message, status: error.status, code: error.code,
  requestId: error.requestId, attempts: error.attempts, retryAfter: error.retryAfter,
  cause: error.cause ? {{ name: error.cause.name, code: error.cause.code ?? error.cause.cause?.code }} : null,
}});
"""


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def node(program: str, url: str, tmp_path: Path) -> Any:
    """Runs ``program`` (ES module JavaScript after the prelude) and gives back what it printed last, as JSON."""
    script = tmp_path / "program.mjs"
    script.write_text(PRELUDE + program)
    binary = shutil.which("node")
    assert binary is not None
    result = subprocess.run(
        [binary, str(script)], env={"RB_URL": url}, capture_output=True, text=True, timeout=90, cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def busy(seconds: str = "1", request_id: str = "req-busy") -> Answer:
    return Answer(503, BUSY, {"Retry-After": seconds, "X-Request-ID": request_id})


def test_a_503_with_retry_after_then_200_is_retried_after_the_wait_the_service_asked_for(server, tmp_path):
    server.answer("POST", "/api/v1/memories/search", busy("1"), Answer(200, HITS))
    answer = node(
        f"""const bank = new rb.ReasoningBank({{ baseUrl: url, token: "{TOKEN}" }});
        out(await bank.search({{ query: "flaky test" }}));""",
        server.url,
        tmp_path,
    )
    assert answer == HITS
    first, second = server.requests("POST", "/api/v1/memories/search")
    assert second.at - first.at >= 1.0  # never sooner than Retry-After
    assert json.loads(first.body) == json.loads(second.body) == {"query": "flaky test"}
    assert first.headers["X-Request-ID"] == second.headers["X-Request-ID"] and len(first.headers["X-Request-ID"]) == 32
    assert first.headers["Authorization"] == f"Bearer {TOKEN}"


def test_retries_stop_after_max_retries_and_the_error_says_how_many_attempts(server, tmp_path):
    server.answer("GET", "/api/v1/memories/mem_1", busy("0", "req-last"))
    caught = node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t", maxRetries: 3, backoffBaseMs: 1 });
        try { await bank.get("mem_1"); } catch (error) { out(failure(error)); }""",
        server.url,
        tmp_path,
    )
    assert len(server.requests("GET", "/api/v1/memories/mem_1")) == 4
    assert (caught["name"], caught["attempts"], caught["requestId"]) == ("ServiceUnavailable", 4, "req-last")
    assert caught["message"] == "503 database_unavailable: The service is busy. (request id req-last, after 4 attempts)"


def test_a_non_idempotent_call_is_not_retried_unless_the_caller_says_it_may_be(server, tmp_path):
    server.answer("POST", "/api/v1/memories/mem_1/feedback", busy("0"), busy("0"), Answer(200, {"success": True}))
    answer = node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t", backoffBaseMs: 1 });
        let refused = null;
        try { await bank.feedback("mem_1", { helpful: true }); } catch (error) { refused = failure(error); }
        const later = await bank.feedback("mem_1", { helpful: true }, { idempotent: true });
        out({ refused, later });""",
        server.url,
        tmp_path,
    )
    # the first call was answered 503 once and not repeated; the second, allowed, got a 503 and then the 200
    assert answer["refused"]["name"] == "ServiceUnavailable" and answer["refused"]["attempts"] == 1
    assert answer["later"] == {"success": True}
    assert len(server.requests("POST", "/api/v1/memories/mem_1/feedback")) == 3


def test_max_retries_zero_turns_retrying_off_and_an_answer_waiting_does_not_fix_is_not_retried(server, tmp_path):
    server.answer("POST", "/api/v1/memories/search", busy("0"), Answer(200, HITS))
    no_llm = {"detail": "No LLM is configured.", "code": "llm_not_configured", "errors": {}}
    server.answer("POST", "/api/v1/memories/ask", Answer(503, no_llm), Answer(200, {}))
    answer = node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t", maxRetries: 0 });
        const codes = [];
        try { await bank.search({ query: "x" }); } catch (error) { codes.push(error.code); }
        const patient = new rb.ReasoningBank({ baseUrl: url, token: "t", backoffBaseMs: 1 });
        try { await patient.ask({ question: "why?" }); } catch (error) { codes.push(error.code); }
        out(codes);""",
        server.url,
        tmp_path,
    )
    assert answer == ["database_unavailable", "llm_not_configured"]
    assert len(server.requests("POST", "/api/v1/memories/search")) == 1
    assert len(server.requests("POST", "/api/v1/memories/ask")) == 1


def test_every_error_carries_the_request_id_the_services_or_else_the_one_sent(server, tmp_path):
    server.answer(
        "GET", "/api/v1/memories/mem_x", Answer(404, {"detail": "No.", "code": "not_found"}, {"X-Request-ID": "r-9"})
    )
    server.answer("GET", "/api/v1/sessions/s-1", Answer(502, "<html>Bad gateway</html>"))
    answer = node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t" });
        const errors = [];
        for (const call of [() => bank.get("mem_x"), () => bank.sessionGet("s-1")]) {
          try { await call(); } catch (error) { errors.push(failure(error)); }
        }
        out(errors);""",
        server.url,
        tmp_path,
    )
    missing, gateway = answer
    assert (missing["name"], missing["requestId"], missing["message"]) == (
        "NotFound",
        "r-9",
        "404 not_found: No. (request id r-9)",
    )
    sent = server.requests("GET", "/api/v1/sessions/s-1")[0].headers["X-Request-ID"]
    assert gateway["requestId"] == sent and sent in gateway["message"] and gateway["code"] == "http_502"


def test_a_refused_connection_names_host_and_code_keeps_its_cause_and_is_retried_for_a_read(tmp_path):
    port = refused_port()
    caught = node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t", backoffBaseMs: 1 });
        try { await bank.search({ query: "x" }); } catch (error) { out(failure(error)); }""",
        f"http://127.0.0.1:{port}",
        tmp_path,
    )
    assert (caught["name"], caught["status"], caught["code"], caught["attempts"]) == (
        "ConnectionFailed",
        0,
        "connection_failed",
        3,
    )
    assert f"cannot reach 127.0.0.1:{port}: ECONNREFUSED" in caught["message"]
    assert caught["cause"]["code"] == "ECONNREFUSED" and caught["requestId"] in caught["message"]


def test_a_callers_fetch_failure_keeps_fetchs_error_as_the_cause_and_names_the_code(tmp_path):
    port = refused_port()
    caught = node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t", fetch: globalThis.fetch, maxRetries: 0 });
        try { await bank.consolidate({}); } catch (error) { out(failure(error)); }""",
        f"http://127.0.0.1:{port}",
        tmp_path,
    )
    assert caught["cause"] == {"name": "TypeError", "code": "ECONNREFUSED"}  # fetch's "fetch failed", its cause kept
    assert (
        f"cannot reach 127.0.0.1:{port}: ECONNREFUSED" in caught["message"] and "fetch failed" not in caught["message"]
    )


def test_the_connect_timeout_is_apart_from_the_read_timeout_and_overridable_per_call(tmp_path):
    with unanswered_listener() as (host, port):
        caught = node(
            """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t",
              timeoutMs: 60000, connectTimeoutMs: 60000 });
            try { await bank.get("mem_1", { connectTimeoutMs: 300, maxRetries: 0 }); }
            catch (error) { out(failure(error)); }""",
            f"http://{host}:{port}",
            tmp_path,
        )
    assert caught["name"] == "ConnectionFailed" and caught["cause"]["code"] == "CONNECT_TIMEOUT"
    assert f"cannot reach {host}:{port}: CONNECT_TIMEOUT" in caught["message"]


def test_the_read_timeout_bounds_a_silent_answer_but_not_an_export_that_keeps_streaming(server, tmp_path):
    server.answer("GET", "/api/v1/memories/mem_1", Answer(200, {"id": "mem_1"}, delay=3.0))
    lines = [{"type": "header", "format": "reasoningbank-export", "version": 1}] + [
        {"type": "link", "source": f"m{n}", "target": "m0"} for n in range(7)
    ]
    chunks = [(json.dumps(line) + "\n").encode() for line in lines] + [b'{"type": "end"}\n']
    server.answer("GET", "/api/v1/export", Answer(200, chunks=chunks, gap=0.3))  # 2.7 s in all, 0.3 s a gap
    answer = node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t", timeoutMs: 1500, maxRetries: 0 });
        let silent = null;
        try { await bank.get("mem_1"); } catch (error) { silent = failure(error); }
        const types = [];
        for await (const record of bank.export({ project: "web-app" })) types.push(record.type);
        out({ silent, types });""",
        server.url,
        tmp_path,
    )
    assert answer["silent"]["name"] == "ConnectionFailed" and "(read timeout)" in answer["silent"]["message"]
    assert answer["types"] == ["header"] + ["link"] * 7 + ["end"]
    assert server.requests("GET", "/api/v1/export")[0].query == {"project": ["web-app"]}


def test_an_export_is_retried_until_its_stream_starts(server, tmp_path):
    server.answer("GET", "/api/v1/export", busy("0"), Answer(200, chunks=[b'{"type": "header"}\n{"type": "end"}\n']))
    answer = node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t", backoffBaseMs: 1 });
        const types = [];
        for await (const record of bank.export()) types.push(record.type);
        out(types);""",
        server.url,
        tmp_path,
    )
    assert answer == ["header", "end"] and len(server.requests("GET", "/api/v1/export")) == 2


def page(ids: list[str], *, last: bool) -> Answer:
    following = None if last else "http://internal:8000/api/v1/memories?page=9"
    return Answer(200, {"count": 5, "next": following, "previous": None, "results": [{"id": i} for i in ids]})


def test_a_list_is_iterated_with_for_await_over_every_page_with_its_filters(server, tmp_path):
    server.answer("GET", "/api/v1/memories", page(["m1", "m2"], last=False), page(["m3"], last=True))
    server.answer("GET", "/api/v1/sessions", page(["s2"], last=True))
    answer = node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t" });
        const ids = [];
        for await (const memory of bank.memoryList({ project: "web-app", tag: ["ci", "build"] })) ids.push(memory.id);
        const pages = [];
        const listing = bank.sessionList({ status: "failed", page: 2 });
        for await (const found of listing.pages()) pages.push(found.results.length);
        out({ ids, pages });""",
        server.url,
        tmp_path,
    )
    assert answer == {"ids": ["m1", "m2", "m3"], "pages": [1]}
    memory_pages = server.requests("GET", "/api/v1/memories")
    assert [seen.query["page"] for seen in memory_pages] == [["1"], ["2"]]
    assert memory_pages[0].query["tag"] == ["ci", "build"] and memory_pages[0].query["project"] == ["web-app"]
    assert server.requests("GET", "/api/v1/sessions")[0].query == {"status": ["failed"], "page": ["2"]}


def test_a_get_names_the_reading_session_as_a_query_parameter_only_when_given(server, tmp_path):
    server.answer("GET", "/api/v1/memories/mem_1", Answer(200, {"id": "mem_1"}), Answer(200, {"id": "mem_1"}))
    node(
        """const bank = new rb.ReasoningBank({ baseUrl: url, token: "t" });
        await bank.get("mem_1");
        await bank.get("mem_1", {}, { session_id: "sess-1" });
        out({});""",
        server.url,
        tmp_path,
    )
    assert [seen.query for seen in server.requests("GET", "/api/v1/memories/mem_1")] == [{}, {"session_id": ["sess-1"]}]


def test_the_defaults_are_the_python_clients(tmp_path):
    answer = node(
        """out({ timeout: rb.DEFAULT_TIMEOUT_MS, connect: rb.DEFAULT_CONNECT_TIMEOUT_MS,
        retries: rb.DEFAULT_MAX_RETRIES, base: rb.DEFAULT_BACKOFF_BASE_MS, cap: rb.DEFAULT_BACKOFF_CAP_MS });""",
        "http://127.0.0.1:1",
        tmp_path,
    )
    assert answer == {
        "timeout": retrying.DEFAULT_TIMEOUT * 1000,
        "connect": retrying.DEFAULT_CONNECT_TIMEOUT * 1000,
        "retries": retrying.DEFAULT_MAX_RETRIES,
        "base": retrying.DEFAULT_BACKOFF_BASE * 1000,
        "cap": retrying.DEFAULT_BACKOFF_CAP * 1000,
    }
