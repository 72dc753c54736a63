"""Structured logs (docs/observability.md#logs): JSON lines carrying the request id, org, token prefix
and trace ids, from REST, the dashboard and MCP alike; never a token or a memory's content; LLM bodies
only at TRACE, scrubbed."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from reasoningbank.ai.llm import LLMResult
from reasoningbank.ai.metered import llm_complete
from reasoningbank.logging_json import TRACE, formatter, log_body, log_format_from_env, log_level_number
from reasoningbank.request_context import request_context_end, request_context_start, request_id_accept
from tests.factories import MemoryFactory
from tests.mcp_harness import MCP_HEADERS, http_client, initialize_body

SECRET_CONTENT = "Rotate the frobnicator keys every Tuesday before the quarterly audit."


class Lines:
    """The JSON lines our formatter wrote while the fixture was active."""

    def __init__(self, stream: io.StringIO) -> None:
        self.stream = stream

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def all(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text.splitlines() if line.strip()]

    def access(self, path: str) -> dict[str, Any]:
        (line,) = [entry for entry in self.all() if entry["logger"] == "reasoningbank.access" and entry["path"] == path]
        return line


@pytest.fixture
def json_lines() -> Iterator[Lines]:
    """The root logger at TRACE through the production JSON formatter into a buffer."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter("json"))
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(TRACE)
    try:
        yield Lines(stream)
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)


def test_a_rest_request_logs_json_with_its_request_id_org_and_token_prefix(cast, make_token, json_lines):
    from rest_framework.test import APIClient

    raw, principal = make_token(cast.org_a, projects=[cast.project_a])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    body = {
        "title": "Frobnicator key rotation",
        "description": "When auditing",
        "content": SECRET_CONTENT,
        "outcome": "success",
        "project": "web-app",
    }
    recorded = client.post("/api/v1/memories", body, format="json")
    found = client.post("/api/v1/memories/search", {"query": "frobnicator keys", "min_confidence": 0}, format="json")

    assert recorded.status_code == 201 and found.json()["memories"]
    line = json_lines.access("/api/v1/memories/search")
    assert list(line)[:4] == ["timestamp", "level", "logger", "message"]
    assert line["level"] == "INFO" and line["message"].startswith("POST /api/v1/memories/search 200 ")
    assert line["request_id"] == found["X-Request-ID"] and len(line["request_id"]) == 32
    assert line["org"] == "acme" and line["token_prefix"] == principal.token.prefix
    assert line["status"] == 200 and line["transport"] == "rest" and line["duration_ms"] > 0
    assert json_lines.access("/api/v1/memories")["request_id"] == recorded["X-Request-ID"] != found["X-Request-ID"]
    # every line, DEBUG and TRACE included: never the token, never what the memory says
    assert raw not in json_lines.text and raw[len(principal.token.prefix) :] not in json_lines.text
    assert SECRET_CONTENT not in json_lines.text and "frobnicator keys" not in json_lines.text.lower()


def test_a_sane_incoming_request_id_is_kept_and_an_unsafe_one_replaced(client, db, json_lines):
    kept = client.get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a9c.42")
    replaced = client.get("/healthz", HTTP_X_REQUEST_ID='x" injected="1\nfake line')
    assert kept["X-Request-ID"] == "lb-7f3a9c.42"
    assert replaced["X-Request-ID"] != 'x" injected="1\nfake line' and len(replaced["X-Request-ID"]) == 32
    ids = [line["request_id"] for line in json_lines.all() if line["logger"] == "reasoningbank.access"]
    assert ids == ["lb-7f3a9c.42", replaced["X-Request-ID"]]
    assert all(line["level"] == "DEBUG" for line in json_lines.all() if line["logger"] == "reasoningbank.access")


@pytest.mark.parametrize("incoming", ["", "a" * 129, "has space", "-starts-with-dash", "ünicode"])
def test_request_ids_that_are_not_plain_are_never_echoed(incoming):
    assert request_id_accept(incoming) != incoming


def test_a_dashboard_page_logs_the_org_of_the_signed_in_member(client, cast, json_lines):
    client.force_login(cast.alice)
    assert client.get("/memories/").status_code == 200
    line = json_lines.access("/memories/")
    assert line["org"] == "acme" and line["transport"] == "dashboard" and "token_prefix" not in line


def test_lines_carry_the_trace_and_span_ids_while_a_span_is_active(json_lines):
    span = NonRecordingSpan(
        SpanContext(
            trace_id=0x0AF7651916CD43DD8448EB211C80319C,
            span_id=0x00F067AA0BA902B7,
            is_remote=False,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    )
    log = logging.getLogger("consolidation")
    with trace.use_span(span):
        log.info("inside a span")
    log.info("outside any span")
    inside, outside = json_lines.all()
    assert inside["trace_id"] == "0af7651916cd43dd8448eb211c80319c" and inside["span_id"] == "00f067aa0ba902b7"
    assert "trace_id" not in outside and "span_id" not in outside


def test_extra_fields_come_after_the_context_and_cannot_overwrite_it(json_lines):
    token = request_context_start(request_id="req-1", transport="rest")
    try:
        logging.getLogger("consolidation").info("Memory tier changed", extra={"to_tier": "cold", "request_id": "spoof"})
    finally:
        request_context_end(token)
    (line,) = json_lines.all()
    assert line["request_id"] == "req-1" and line["to_tier"] == "cold"
    assert list(line) == ["timestamp", "level", "logger", "message", "request_id", "to_tier"]


def test_the_plain_format_appends_the_request_context():
    record = logging.LogRecord("consolidation", logging.INFO, __file__, 1, "run %s done", ("r1",), None)
    token = request_context_start(request_id="req-2", transport="mcp")
    try:
        line = formatter("plain").format(record)
    finally:
        request_context_end(token)
    assert line.endswith("INFO consolidation run r1 done [request_id=req-2]")


def test_json_is_the_default_without_debug_and_plain_with_it(monkeypatch):
    monkeypatch.delenv("LOG_FORMAT", raising=False)
    monkeypatch.setenv("DEBUG", "false")
    assert log_format_from_env() == "json"
    monkeypatch.setenv("DEBUG", "true")
    assert log_format_from_env() == "plain"
    monkeypatch.setenv("LOG_FORMAT", "json")
    assert log_format_from_env() == "json"
    assert log_level_number("trace") == TRACE == 5 and log_level_number("info") == logging.INFO


# --- MCP -----------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_mcp_request_logs_its_request_id_org_and_token_prefix(app, cast, make_token, json_lines, monkeypatch):
    from django.db import connection

    from tests.mcp_harness import in_thread

    # the token lookup runs on a worker thread: its connection must not outlive the test (test_mcp.py)
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    raw, principal = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    async with http_client(app, raw, **{"X-Request-ID": "agent-run-17"}) as http:
        response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
    assert response.status_code == 200 and response.headers["x-request-id"] == "agent-run-17"
    line = json_lines.access("/mcp")
    assert line["request_id"] == "agent-run-17" and line["transport"] == "mcp" and line["status"] == 200
    assert line["org"] == "acme" and line["token_prefix"] == principal.token.prefix
    assert raw not in json_lines.text


# --- LLM bodies ----------------------------------------------------------------------------------------

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


class EchoLLM:
    provider, model = "openai", "gpt-test"

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2048, temperature: float = 0.0) -> LLMResult:
        return LLMResult(f"reply mentioning {AWS_KEY}", self.provider, self.model, 10, 5, 50.0, 1)


def test_llm_bodies_appear_only_at_trace_scrubbed_and_truncated(cast, json_lines):
    prompt = f"aws_access_key_id = {AWS_KEY}\n" + "x" * 5000
    logging.getLogger().setLevel(logging.DEBUG)
    llm_complete(organization=cast.org_a, purpose="distill", system="s", prompt=prompt, llm=EchoLLM())
    debug_text = json_lines.text
    assert "aws_access_key_id" not in debug_text and "reply mentioning" not in debug_text
    (call,) = [line for line in json_lines.all() if line["logger"] == "reasoningbank.llm"]
    assert call["level"] == "DEBUG" and call["purpose"] == "distill" and call["input_tokens"] == 10

    logging.getLogger().setLevel(TRACE)
    llm_complete(organization=cast.org_a, purpose="distill", system="s", prompt=prompt, llm=EchoLLM())
    bodies = {line["message"]: line for line in json_lines.all() if line["level"] == "TRACE"}
    assert set(bodies) == {"LLM prompt", "LLM response"}
    assert AWS_KEY not in json_lines.text and "[REDACTED:" in bodies["LLM prompt"]["prompt"]
    assert len(bodies["LLM prompt"]["prompt"]) < 1100 and bodies["LLM prompt"]["prompt"].endswith("more characters]")
    assert bodies["LLM response"]["response"].startswith("reply mentioning [REDACTED:")


def test_log_body_scrubs_before_it_cuts():
    text = "y" * 990 + " token=ghp_" + "a" * 36
    assert "ghp_" not in log_body(text)


def test_memory_content_stays_out_of_info_and_debug_lines_of_a_consolidation(cast, agent, json_lines):
    from tests.consolidation.vectors import cycle_llm, run_cycle

    logging.getLogger().setLevel(logging.DEBUG)
    for n in range(3):
        MemoryFactory(principal=agent, title=f"Frobnicator rotation {n}", content=f"{SECRET_CONTENT} Variant {n}.")
    run_cycle(agent, cast.project_a, cycle_llm())
    assert json_lines.all() and SECRET_CONTENT not in json_lines.text


def test_uvicorns_log_config_uses_the_same_formatter_and_drops_its_colour_codes():
    config = json.loads((Path(__file__).resolve().parents[2] / "reasoningbank" / "uvicorn_logging.json").read_text())
    factory = config["formatters"]["default"]["()"]
    assert factory == "reasoningbank.logging_json.formatter"
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, "Started server process [%d]", (7,), None)
    record.color_message = "Started server process [\x1b[36m%d\x1b[0m]"
    assert json.loads(formatter("json").format(record)) == {
        "timestamp": json.loads(formatter("json").format(record))["timestamp"],
        "level": "INFO",
        "logger": "uvicorn.error",
        "message": "Started server process [7]",
    }
