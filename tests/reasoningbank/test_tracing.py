"""OpenTelemetry traces (reasoningbank/tracing.py; docs/observability.md#traces): the set-up as deployed
processes see it (fresh interpreters), the helpers off and on, the thread hops, the queue hop, and an
incoming W3C ``traceparent`` on HTTP and in an MCP request's ``params._meta``."""

from __future__ import annotations

import contextvars
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils.module_loading import import_string
from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, SpanKind, StatusCode

from reasoningbank import tracing
from reasoningbank.db_threads import run_beside, write_behind, write_behind_wait
from tests.fakes import ScriptedLLM, memory_block
from tests.mcp_harness import MCP_HEADERS, http_client, initialize_body, running
from tests.tracing_capture import Captured, attributes, spans_fixture  # noqa: F401  (the fixture "spans")

BASE_DIR = Path(__file__).resolve().parents[2]
# a remote caller's trace: what an upstream service (or an agent's own tracing) sends along
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
META_TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
META_PARENT_ID = "b7ad6b7169203331"


def hex_trace(span: Any) -> str:
    return format(span.context.trace_id, "032x")


def hex_parent(span: Any) -> str | None:
    return None if span.parent is None else format(span.parent.span_id, "016x")


# --- set-up, as the deployed processes see it --------------------------------------------------------

PROBE = """
import json, os, sys
sys.argv = json.loads(sys.argv[1])
os.environ["DJANGO_SETTINGS_MODULE"] = "reasoningbank.settings"
import reasoningbank.embedded_db as embedded_db
embedded_db.embedded_database_settings = lambda *args, **kwargs: {
    "ENGINE": "django.db.backends.postgresql", "NAME": "postgres", "USER": "postgres", "PASSWORD": "",
    "HOST": "/nonexistent", "PORT": "",
}
import django
django.setup()
from django.conf import settings
from opentelemetry import trace
from reasoningbank import tracing
provider = trace.get_tracer_provider()
resource = getattr(provider, "resource", None)
print(json.dumps({
    "provider": type(provider).__module__ + "." + type(provider).__name__,
    "enabled": tracing.enabled(),
    "role": tracing.process_role(),
    "span_is_invalid": tracing.span("x").__enter__() is trace.INVALID_SPAN,
    "resource": dict(resource.attributes) if resource is not None else None,
    "middleware": [m for m in settings.MIDDLEWARE if "opentelemetry" in m],
}))
"""
WEB = ["/app/.venv/bin/uvicorn", "reasoningbank.asgi:application"]
WORKER = ["manage.py", "qcluster"]


def probe(tmp_path: Path, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("OTEL_") and name not in ("RB_TESTING", "DATABASE_URL", "DEBUG")
    }
    environment.update({"RB_DATA_DIR": str(tmp_path / "data"), "SECRET_KEY": "s" * 50, **env})
    return subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        cwd=BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def probed(tmp_path: Path, argv: list[str] = WEB, **env: str) -> dict[str, Any]:
    finished = probe(tmp_path, argv, **env)
    assert finished.returncode == 0, finished.stderr
    return dict(json.loads(finished.stdout.strip().splitlines()[-1]))


def test_without_otel_variables_no_sdk_provider_is_installed_and_nothing_is_instrumented(tmp_path: Path) -> None:
    seen = probed(tmp_path)
    assert seen["provider"] == "opentelemetry.trace.ProxyTracerProvider"  # the API's no-op default
    assert seen["enabled"] is False and seen["span_is_invalid"] is True
    assert seen["middleware"] == []


def test_an_otlp_endpoint_turns_tracing_on_with_the_service_name_and_the_process_role(tmp_path: Path) -> None:
    web = probed(tmp_path, WEB, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert web["provider"] == "opentelemetry.sdk.trace.TracerProvider" and web["enabled"] is True
    assert web["resource"]["service.name"] == "reasoningbank"
    assert web["resource"]["reasoningbank.process.role"] == "web" == web["role"]
    assert web["resource"]["service.instance.id"].startswith("web-")
    assert web["middleware"] == ["opentelemetry.instrumentation.django.middleware.otel_middleware._DjangoMiddleware"]
    worker = probed(
        tmp_path,
        WORKER,
        OTEL_TRACES_EXPORTER="console",
        OTEL_SERVICE_NAME="rb-eu",
        OTEL_RESOURCE_ATTRIBUTES="deployment.environment=staging",
    )
    assert worker["enabled"] is True and worker["role"] == "worker"
    assert worker["resource"]["service.name"] == "rb-eu"
    assert worker["resource"]["deployment.environment"] == "staging"


def test_otel_sdk_disabled_and_exporter_none_keep_tracing_off(tmp_path: Path) -> None:
    assert (
        probed(tmp_path, WEB, OTEL_EXPORTER_OTLP_ENDPOINT="http://x:4318", OTEL_SDK_DISABLED="true")["enabled"] is False
    )
    assert (
        probed(tmp_path, WEB, OTEL_EXPORTER_OTLP_ENDPOINT="http://x:4318", OTEL_TRACES_EXPORTER="none")["enabled"]
        is False
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_TRACES_EXPORTER", "jaeger"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
        ("OTEL_TRACES_SAMPLER", "sometimes"),
        ("OTEL_TRACES_SAMPLER_ARG", "2"),
    ],
)
def test_a_malformed_otel_variable_stops_the_process_naming_it(tmp_path: Path, variable: str, value: str) -> None:
    finished = probe(tmp_path, WEB, **{variable: value})
    assert finished.returncode != 0
    assert "ImproperlyConfigured" in finished.stderr and variable in finished.stderr


# --- the helpers -----------------------------------------------------------------------------------


def test_off_the_helpers_return_at_once_and_change_nothing() -> None:
    assert not tracing.enabled()

    def work(x: int) -> int:
        return x + 1

    assert tracing.bind(work) is work
    assert tracing.task_carrier() == {}
    with tracing.span("memory.search", limit=5) as current:
        assert current is INVALID_SPAN
    assert tracing.traced("x")(work)(1) == 2
    assert trace.get_current_span() is INVALID_SPAN


def test_a_failure_marks_the_span_error_with_the_exception_type_and_never_its_message(spans: Captured) -> None:
    with pytest.raises(ValueError), tracing.span("work", items=3):
        raise ValueError("the memory says: deploy on Fridays")
    (span,) = spans.all()
    assert span.status.status_code == StatusCode.ERROR
    assert attributes(span) == {"items": 3, "error.type": "ValueError"}
    assert [dict(e.attributes or {}) for e in span.events] == [{"exception.type": "ValueError"}]
    assert "Fridays" not in spans.attribute_text()


def test_none_attributes_are_left_out_and_the_result_callback_adds_attributes(spans: Captured) -> None:
    @tracing.traced("op", result=lambda value: {"count": value, "missing": None})
    def op() -> int:
        tracing.current_set(project_id=7, nothing=None)
        return 3

    assert op() == 3
    assert attributes(spans.one("op")) == {"project_id": 7, "count": 3}


def test_work_on_the_parallel_pool_and_the_write_behind_stays_in_the_callers_trace(spans: Captured) -> None:
    def leg() -> str:
        with tracing.span("leg"):
            return "rows"

    def usage_write() -> None:
        with tracing.span("usage"):
            pass

    ended = threading.Event()

    def until_the_search_ended() -> None:
        ended.wait(10)

    with tracing.span("search") as outer:
        assert run_beside(leg).result() == "rows"
        assert write_behind(until_the_search_ended)  # the one writer thread waits: the next write runs after
        assert write_behind(usage_write)
    ended.set()
    write_behind_wait()
    search = spans.one("search")
    assert outer.get_span_context().span_id == search.context.span_id
    assert spans.parent_of(spans.one("leg")) == search
    (behind,) = [s for s in spans.named("db.write_behind") if attributes(s)["work"] == "usage_write"]
    assert spans.parent_of(behind) == search
    assert spans.parent_of(spans.one("usage")) == behind


def test_sql_inside_a_trace_gets_a_span_with_the_statement_never_its_values(spans: Captured, cast: Any) -> None:
    secret = "quokka-ledger-7731"
    with tracing.span("request"):
        with connection.cursor() as cursor:
            cursor.execute("/* probe:one */ SELECT %s::text", [secret])
        list(type(cast.org_a).objects.filter(slug=secret))
    with connection.cursor() as cursor:  # outside any trace: no span
        cursor.execute("SELECT 1")
    request = spans.one("request")
    tagged = spans.one("probe:one")
    assert spans.parent_of(tagged) == request and tagged.kind == SpanKind.CLIENT
    assert attributes(tagged)["db.system.name"] == "postgresql"
    assert attributes(tagged)["db.query.text"] == "/* probe:one */ SELECT %s::text"
    assert spans.one("SELECT accounts_organization").parent.span_id == request.context.span_id
    assert secret not in spans.attribute_text()
    assert len(spans.all()) == 3


def test_a_requests_query_string_keeps_its_names_and_loses_its_values(
    spans: Captured, cast: Any, token_client: Any
) -> None:
    client = token_client(cast.org_a, projects=[cast.project_a])
    assert client.get("/api/v1/memories?tag=zanzibar-flamingo&scope=all").status_code == 200
    (server,) = [s for s in spans.all() if s.kind == SpanKind.SERVER]
    urls = {k: v for k, v in attributes(server).items() if k in ("http.url", "url.full", "http.target", "url.query")}
    assert urls and all("tag=…&scope=…" in value for value in urls.values()), urls
    assert "zanzibar" not in spans.attribute_text()


# --- the queue hop -----------------------------------------------------------------------------------


def _run_queued_tasks_like_the_worker() -> list[Any]:
    """Take the queued tasks off django-q2's ORM broker and run each the way a worker process does:
    in a fresh context, which knows nothing of the request that queued it."""
    from django_q.brokers import get_broker
    from django_q.signing import SignedPackage

    broker = get_broker()
    results = []
    for ack_id, payload in broker.dequeue() or []:
        task = SignedPackage.loads(payload)
        fn = import_string(task["func"])
        results.append(contextvars.Context().run(fn, *task["args"], **task["kwargs"]))
        broker.acknowledge(ack_id)
    return results


@pytest.mark.django_db(transaction=True)
def test_a_queued_distillation_continues_the_trace_of_the_request_that_submitted_it(
    spans: Captured, cast: Any, token_client: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reasoningbank.ai import metered

    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"  # configured: the session queues
    reply = memory_block(1, "Pin flaky seeds in setUp", "When tests flake", "Seed the random generator in setUp.")
    monkeypatch.setattr(metered, "llm_from_settings", lambda: ScriptedLLM([reply]))
    trace_text = "agent: the zanzibar-test flaked; seeded the RNG and it passed"
    client = token_client(cast.org_a, projects=[cast.project_a])

    created = client.post(
        "/api/v1/sessions", {"session_id": "run-7", "outcome": "success", "trace": trace_text}, format="json"
    )
    assert created.status_code == 201, created.content
    assert spans.named("task.session_distill") == []  # queued, not run
    assert _run_queued_tasks_like_the_worker() == ["done"]

    (request,) = [s for s in spans.all() if s.kind == SpanKind.SERVER]
    task = spans.one("task.session_distill")
    assert task.kind == SpanKind.CONSUMER and hex_trace(task) == hex_trace(request)
    assert spans.is_descendant(task, request)
    distill = spans.one("session.distill")
    assert spans.parent_of(distill) == task
    assert attributes(distill)["status"] == "done" and attributes(distill)["memories_created"] == 1
    assert attributes(distill)["trace_length"] == len(trace_text)
    llm = spans.one("llm.distill")
    assert spans.parent_of(llm) == distill
    assert {k: attributes(llm)[k] for k in ("provider", "model", "purpose")} == {
        "provider": "fake",
        "model": "scripted-1",
        "purpose": "distill",
    }
    assert attributes(llm)["prompt_tokens"] > 0 and attributes(llm)["completion_tokens"] > 0
    text = spans.attribute_text()
    assert "zanzibar" not in text and "random generator" not in text and "Pin flaky" not in text


def test_a_task_queued_outside_any_trace_starts_its_own(spans: Captured) -> None:
    @tracing.task_traced("task.example")
    def example(x: int) -> int:
        return x * 2

    assert tracing.task_carrier() == {}  # nothing to carry: the arguments stay as they were
    assert contextvars.Context().run(example, 21) == 42
    assert spans.one("task.example").parent is None


# --- incoming traceparent: HTTP header, MCP params._meta ---------------------------------------------------

pytest_anyio = pytest.mark.anyio


@pytest.fixture
def agent_token(cast: Any, make_token: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A raw token of org A for web-app. The ASGI app's ORM work runs on worker threads, whose
    connections must not outlive the test (CONN_MAX_AGE 0: the tools close them)."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    return str(make_token(cast.org_a, projects=[cast.project_a])[0])


@pytest_anyio
@pytest.mark.django_db(transaction=True)
async def test_an_incoming_traceparent_header_is_continued_by_the_rest_request_and_its_search(
    spans: Captured, agent_token: str
) -> None:
    from reasoningbank.asgi import build_application

    raw = agent_token
    query = "zanzibar flamingo rollout"
    async with running(build_application()) as app, http_client(app, raw) as http:
        answer = await http.post("/api/v1/memories/search", json={"query": query}, headers={"traceparent": TRACEPARENT})
    assert answer.status_code == 200, answer.text
    (server,) = [s for s in spans.all() if s.kind == SpanKind.SERVER]
    assert hex_trace(server) == TRACE_ID and hex_parent(server) == PARENT_ID
    assert server.name == "POST api/v1/memories/search"
    search = spans.one("memory.search")
    assert hex_trace(search) == TRACE_ID and spans.is_descendant(search, server)
    assert "zanzibar" not in spans.attribute_text()


@pytest_anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("flags", ["00", "01"])
async def test_a_request_its_caller_did_not_sample_starts_no_span_and_computes_no_attribute(
    spans: Captured, agent_token: str, monkeypatch: pytest.MonkeyPatch, flags: str
) -> None:
    from reasoningbank.asgi import build_application

    cleaned: list[Any] = []
    clean = tracing._clean
    monkeypatch.setattr(tracing, "_clean", lambda attributes: cleaned.append(attributes) or clean(attributes))
    async with running(build_application()) as app, http_client(app, agent_token) as http:
        answer = await http.post(
            "/api/v1/memories/search",
            json={"query": "zanzibar flamingo rollout"},
            headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-{flags}"},
        )
    assert answer.status_code == 200, answer.text
    if flags == "01":  # the same request sampled: the work below is real, so its absence is the skipping
        assert spans.one("memory.search") and cleaned
        return
    assert spans.all() == [] and cleaned == []


@pytest_anyio
@pytest.mark.django_db(transaction=True)
async def test_an_mcp_request_continues_the_traceparent_in_its_params_meta_or_else_its_header(
    spans: Captured, agent_token: str
) -> None:
    from reasoningbank.asgi import build_application

    raw = agent_token

    def call(request_id: int, meta: dict[str, str] | None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": "memory_search", "arguments": {"query": "zanzibar flamingo"}}
        if meta is not None:
            params["_meta"] = meta
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

    async with running(build_application()) as app, http_client(app, raw) as http:
        init = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
        headers = MCP_HEADERS | {"MCP-Protocol-Version": init.json()["result"]["protocolVersion"]}
        by_meta = await http.post(
            "/mcp", json=call(2, {"traceparent": f"00-{META_TRACE_ID}-{META_PARENT_ID}-01"}), headers=headers
        )
        by_header = await http.post("/mcp", json=call(3, None), headers=headers | {"traceparent": TRACEPARENT})
    assert by_meta.json()["result"]["isError"] is False and by_header.json()["result"]["isError"] is False

    tools = spans.named("mcp.tool.memory_search")
    assert len(tools) == 2
    via_meta = next(t for t in tools if hex_trace(t) == META_TRACE_ID)
    sdk_span = spans.parent_of(via_meta)
    assert sdk_span is not None and sdk_span.name == "tools/call memory_search"
    assert hex_parent(sdk_span) == META_PARENT_ID  # the SDK's span continues params._meta.traceparent
    assert any(spans.is_descendant(search, via_meta) for search in spans.named("memory.search"))
    via_header = next(t for t in tools if hex_trace(t) == TRACE_ID)
    (http_span,) = [s for s in spans.named("POST /mcp") if hex_trace(s) == TRACE_ID]  # the ASGI instrumentation
    assert http_span.kind == SpanKind.SERVER and hex_parent(http_span) == PARENT_ID
    assert spans.is_descendant(via_header, http_span)
    assert attributes(via_header)["mcp.tool.name"] == "memory_search"
    assert "zanzibar" not in spans.attribute_text()


@pytest_anyio
async def test_the_apps_lifespan_shutdown_exports_the_queued_spans_before_it_completes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # uvicorn re-raises SIGTERM after the lifespan shutdown: the SDK's exit handler would never run
    from reasoningbank import asgi

    flushed: list[str] = []
    monkeypatch.setattr(asgi, "flush", lambda: flushed.append("flushed"))
    async with running(asgi.build_application()):
        assert flushed == []
    assert flushed == ["flushed"]
