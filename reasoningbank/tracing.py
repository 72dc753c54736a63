"""OpenTelemetry traces (docs/observability.md#traces): the one helper every module uses, and the
per-process setup.

* ``span(name, **attributes)`` — a context manager around a piece of work; ``traced(name)`` the same as
  a decorator (``result=`` turns the return value into attributes); ``current_set(**attributes)`` adds
  to the span a ``traced`` function runs in.
* ``bind(fn)`` — ``fn`` to be run on another thread inside the caller's trace (thread pools do not
  copy context variables): search's parallel leg, the write-behind, the LLM fan-out.
* ``task_carrier()`` / ``task_traced(name)`` — the queue hop: the enqueuing side passes the W3C
  ``traceparent`` as a task keyword argument, the task's span continues that trace in the worker.
* ``setup()`` — once per process (``ReasoningBankConfig.ready``: the uvicorn web workers, the
  ``qcluster`` worker, commands): the SDK provider with a batch exporter, Django's instrumentation
  (incoming HTTP ``traceparent``), a span per SQL statement inside a trace.

Off unless configured (``settings.TRACING_ENABLED``: the standard ``OTEL_*`` variables name an exporter
or an OTLP endpoint). Off, no SDK provider is installed and every helper above returns after one
module-level flag check, so the instrumented code paths cost next to nothing. On, a request its sampler
left out costs one more check per helper: no span is started and no attribute computed inside it.

What spans carry: ids, counts, lengths, names, durations. Never memory content, queries, prompts, LLM
replies or secrets — nor an exception's message, which may quote any of them (its type only). Incoming
URLs lose their query string values (a dashboard search puts its query there).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import socket
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.propagate import extract, inject
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

TRACER_NAME = "reasoningbank"
# the keyword argument a queued task receives its caller's trace context in (``task_carrier``)
TASK_CONTEXT_KWARG = "trace_context"
# URL paths without a server span: probes and scrapes every few seconds, static files
DEFAULT_EXCLUDED_URLS = "healthz,readyz,metrics,static/"
SQL_TEXT_MAX = 2000  # characters of a statement kept on its span (placeholders only, never values)

_tracer = trace.get_tracer(TRACER_NAME)
_enabled = False  # read by every helper: the whole cost of tracing when it is off
_role = "command"


def enabled() -> bool:
    return _enabled


def process_role() -> str:
    return _role


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes str/bool/int/float (and sequences of one of them); None means "not known"."""
    clean: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, str | bool | int | float):
            clean[key] = value
        elif isinstance(value, list | tuple | set | frozenset):
            clean[key] = [v if isinstance(v, str | bool | int | float) else str(v) for v in value]
        else:
            clean[key] = str(value)
    return clean


def _unsampled() -> bool:
    """Inside a trace its sampler dropped (an incoming ``traceparent`` flagged not sampled, a ratio that
    said no at the root): its spans would all be dropped too (parent-based sampling, the SDK's default),
    so none is started and no attribute is computed. Only the trace's context travels on, for ``bind``
    and ``task_carrier`` to pass the decision along. The sampled flag, not ``is_recording()``: a span that
    has ended records nothing more, yet the write-behind's span after it belongs in its trace."""
    context = trace.get_current_span().get_span_context()
    return context.is_valid and not context.trace_flags.sampled


def _fail(current: Span, exc: BaseException) -> None:
    """ERROR with the exception's type only: its message may quote content (a prompt, a memory, input)."""
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    current.set_attribute("error.type", name)
    current.add_event("exception", {"exception.type": name})
    current.set_status(Status(StatusCode.ERROR, name))


class span:
    """``with span("memory.search", limit=5) as s: ... s.set_attribute("result_count", n)``.

    A child of the current span (or a new trace); an exception leaving the block marks it ERROR with
    the exception's type. Off, ``__enter__`` hands back the API's invalid span, whose methods do nothing.
    """

    __slots__ = ("_attributes", "_name", "_span", "_token")

    def __init__(self, name: str, /, **attributes: Any) -> None:
        self._name = name
        self._attributes = attributes
        self._token: object | None = None
        self._span: Span = INVALID_SPAN

    def __enter__(self) -> Span:
        if not _enabled or _unsampled():
            return INVALID_SPAN
        self._span = _tracer.start_span(self._name, attributes=_clean(self._attributes))
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(self, exc_type: Any, exc: BaseException | None, traceback: Any) -> None:
        if self._token is None:
            return
        try:
            if exc is not None:
                _fail(self._span, exc)
        finally:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self._token = None
            self._span.end()


def traced(
    name: str, *, result: Callable[[Any], Mapping[str, Any]] | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: the function runs in a span ``name``; ``result(return value)`` adds attributes."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if not _enabled or _unsampled():
                return fn(*args, **kwargs)
            with span(name) as current:
                value = fn(*args, **kwargs)
                if result is not None:
                    current.set_attributes(_clean(result(value)))
                return value

        return wrapper

    return decorate


def current_set(**attributes: Any) -> None:
    """Attributes on the current span: call it only in the body of a ``traced`` function (elsewhere the
    current span is whatever encloses the call, a request's for instance)."""
    if _enabled:
        current = trace.get_current_span()
        if current.is_recording():
            current.set_attributes(_clean(attributes))


def bind(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` carrying the caller's trace context to whichever thread runs it (a ``ThreadPoolExecutor``
    does not copy context variables, so its spans would start new traces)."""
    if not _enabled:
        return fn
    captured = otel_context.get_current()

    @functools.wraps(fn)
    def in_context(*args: P.args, **kwargs: P.kwargs) -> R:
        token = otel_context.attach(captured)
        try:
            return fn(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return in_context


# --- the queue hop ---------------------------------------------------------------------------------


def task_carrier() -> dict[str, Any]:
    """Keyword arguments for ``async_task``: the current trace as W3C ``traceparent`` (and
    ``tracestate``), so the queued task's span is a child of the request that enqueued it. Empty when
    tracing is off or nothing is being traced: the task's arguments stay as they were."""
    if not _enabled or not trace.get_current_span().get_span_context().is_valid:
        return {}
    carrier: dict[str, str] = {}
    inject(carrier)
    return {TASK_CONTEXT_KWARG: carrier} if carrier else {}


def task_traced(name: str) -> Callable[[Callable[P, R]], Callable[..., R]]:
    """Decorator for a django-q2 task function: takes the ``trace_context`` keyword (``task_carrier``)
    off the call and runs the task in a consumer span ``name`` continuing that trace. In the worker
    the spans are flushed after each task: its forked processes end without running exit handlers."""

    def decorate(fn: Callable[P, R]) -> Callable[..., R]:
        @functools.wraps(fn)
        def wrapper(*args: Any, trace_context: Mapping[str, str] | None = None, **kwargs: Any) -> R:
            if not _enabled:
                return fn(*args, **kwargs)
            parent = extract(dict(trace_context)) if trace_context else None
            try:
                with _tracer.start_as_current_span(
                    name,
                    context=parent,
                    kind=SpanKind.CONSUMER,
                    attributes={"messaging.system": "django-q2", "task.function": fn.__name__},
                    record_exception=False,
                    set_status_on_exception=False,
                ) as current:
                    try:
                        return fn(*args, **kwargs)
                    except BaseException as exc:
                        _fail(current, exc)
                        raise
            finally:
                if _role == "worker":
                    flush()

        return wrapper

    return decorate


def flush() -> None:
    """Export the spans still queued, now (blocking; each batch bounded by the exporter's timeout,
    ``OTEL_EXPORTER_OTLP_TIMEOUT``): where a process ends without running exit handlers — a forked
    worker, uvicorn re-raising SIGTERM after its lifespan shutdown."""
    if not _enabled:
        return
    provider = trace.get_tracer_provider()
    force_flush = getattr(provider, "force_flush", None)
    if force_flush is not None:
        try:
            force_flush(5000)
        except Exception:  # the collector being away must never fail a task
            logger.warning("could not flush spans to the exporter", exc_info=True)


# --- setup -----------------------------------------------------------------------------------------


def setup(*, exporters: Sequence[str], role: str) -> bool:
    """Install the SDK provider for this process when tracing is configured: one batch processor per
    exporter (``otlp`` — OTLP over HTTP, the SDK reads ``OTEL_EXPORTER_OTLP_*`` —, ``console``). Called
    once per process (``ReasoningBankConfig.ready``); True when tracing is on.

    The ``qcluster`` worker sets up in its parent process and forks: the SDK restarts the batch
    processor's export thread in each child (``os.register_at_fork``), and ``task_traced`` flushes
    after every task because forked children exit without exit handlers."""
    names = [name for name in exporters if name != "none"]
    if _enabled or not names:
        return _enabled
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    provider = TracerProvider(resource=process_resource(role))  # the sampler from OTEL_TRACES_SAMPLER
    for name in names:
        exporter: SpanExporter
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        else:
            exporter = ConsoleSpanExporter()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    install(provider, role=role)
    logger.info("tracing on: exporters %s, role %s", ",".join(names), role)
    return True


def process_resource(role: str) -> Any:
    """``service.name`` (``OTEL_SERVICE_NAME``, default reasoningbank), ``OTEL_RESOURCE_ATTRIBUTES``,
    and which process this is: ``service.instance.id`` (role, host, pid) and
    ``reasoningbank.process.role`` (web, worker or command)."""
    from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, OTELResourceDetector, Resource

    from_env = OTELResourceDetector().detect().attributes
    ours: dict[str, Any] = {
        SERVICE_NAME: "reasoningbank",
        SERVICE_INSTANCE_ID: f"{role}-{socket.gethostname()}-{os.getpid()}",
        "reasoningbank.process.role": role,
    }
    # Resource.create lets the given attributes win over the environment's: give only what it lacks
    return Resource.create({key: value for key, value in ours.items() if key not in from_env})


def install(provider: Any, *, role: str) -> None:
    """Make ``provider`` the process's tracer provider and turn the instrumentation on. The global
    provider can be set once per process; tests install theirs once and switch with ``uninstall``."""
    global _enabled, _role
    if trace.get_tracer_provider() is not provider:
        trace.set_tracer_provider(provider)
    _role = role
    _enabled = True
    _django_instrument()
    _sql_spans_connect()


def uninstall() -> None:
    """Tracing off again (tests): our helpers stop at once, Django's middleware from the next handler."""
    global _enabled
    _enabled = False
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    DjangoInstrumentor().uninstrument()


# --- Django: incoming requests and SQL -------------------------------------------------------------


def _django_instrument() -> None:
    """The kept Django instrumentation: a server span per request, continuing an incoming W3C
    ``traceparent``. Under ASGI it needs opentelemetry-instrumentation-asgi, which also serves ``/mcp``
    (``asgi_wrap``). ``OTEL_PYTHON_DJANGO_INSTRUMENT=false`` turns it off."""
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    instrumentor = DjangoInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        return
    excluded = (
        os.environ.get("OTEL_PYTHON_DJANGO_EXCLUDED_URLS")
        or os.environ.get("OTEL_PYTHON_EXCLUDED_URLS")
        or DEFAULT_EXCLUDED_URLS
    )
    instrumentor.instrument(excluded_urls=excluded, request_hook=_django_request_hook)


def _django_request_hook(current: Span, request: Any) -> None:
    _url_redact(current)


def asgi_wrap(app: Any) -> Any:
    """``app`` (the MCP app, which Django's middleware never sees) behind the kept ASGI instrumentation
    when tracing is on: a server span per request, an incoming ``traceparent`` header continued. The
    MCP SDK's own span per JSON-RPC message nests inside it and prefers a ``traceparent`` in the
    request's ``params._meta`` (the 2026-07-28 protocol's place for it)."""
    if not _enabled:
        return app
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(
        app,
        excluded_urls=os.environ.get("OTEL_PYTHON_ASGI_EXCLUDED_URLS") or None,
        server_request_hook=lambda current, scope: _url_redact(current),
        exclude_spans=["receive", "send"],  # one span per request, not one per ASGI message
    )


_QUERY_VALUES = re.compile(r"=[^&]*")


def _url_redact(current: Span) -> None:
    """The request's URL attributes without query string values (``?q=…`` is a search's text)."""
    attributes = getattr(current, "attributes", None)
    if not attributes or not current.is_recording():
        return
    for key in ("http.url", "url.full", "http.target"):
        value = attributes.get(key)
        if isinstance(value, str) and "?" in value:
            path, _, query = value.partition("?")
            current.set_attribute(key, f"{path}?{_QUERY_VALUES.sub('=…', query)}")
    value = attributes.get("url.query")
    if isinstance(value, str) and value:
        current.set_attribute("url.query", _QUERY_VALUES.sub("=…", value))


_SQL_SHAPE = re.compile(r"[\s(]*(?:/\*\s*([\w:.-]+)\s*\*/\s*)?(\w+)", re.ASCII)
_SQL_TABLE = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+\"?(\w+)", re.ASCII | re.IGNORECASE)


def _sql_span_name(sql: str) -> str:
    """``SELECT memories_memory``, or the statement's leading ``/* tag */`` (``search:vector``)."""
    shape = _SQL_SHAPE.match(sql)
    if shape is None:
        return "SQL"
    if shape.group(1):
        return shape.group(1)
    verb = shape.group(2).upper()
    table = _SQL_TABLE.search(sql)
    return f"{verb} {table.group(1)}" if table else verb


def _sql_span(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
    """Django's ``execute_wrapper``: a client span per statement, only inside a recorded trace (the
    worker's broker polls and other untraced work make none). The statement's text has placeholders,
    never the parameter values."""
    if not _enabled or not trace.get_current_span().is_recording():
        return execute(sql, params, many, context)
    with _tracer.start_as_current_span(
        _sql_span_name(sql),
        kind=SpanKind.CLIENT,
        attributes={
            "db.system.name": "postgresql",
            "db.query.text": sql[:SQL_TEXT_MAX],
            "db.operation.batch.size": len(params) if many and isinstance(params, list | tuple) else 1,
        },
        record_exception=False,
        set_status_on_exception=False,
    ) as current:
        try:
            return execute(sql, params, many, context)
        except BaseException as exc:
            _fail(current, exc)
            raise


def _sql_spans_add(connection: Any, **kwargs: Any) -> None:
    if _sql_span not in connection.execute_wrappers:
        connection.execute_wrappers.append(_sql_span)


def _sql_spans_connect() -> None:
    """Every database connection this process opens from now on (and the current thread's, already
    open) runs its statements through ``_sql_span``. In place of opentelemetry-instrumentation-psycopg,
    whose newest release pins an older SDK than ours."""
    from django.db import connections
    from django.db.backends.signals import connection_created

    connection_created.connect(_sql_spans_add, dispatch_uid="reasoningbank.tracing.sql")
    for connection in connections.all(initialized_only=True):
        _sql_spans_add(connection)
