"""Capture the spans a test produces: the SDK provider with an in-memory exporter, installed once per
test session (OpenTelemetry's global provider can be set only once per process), switched on for one
test by the ``spans`` fixture and off again after it. Shared by the tracing test modules."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reasoningbank import tracing


class _WhileTracing(SimpleSpanProcessor):
    """Exports only while a test captures: the MCP SDK's own spans of later tests are not kept."""

    def on_end(self, span: ReadableSpan) -> None:
        if tracing.enabled():
            super().on_end(span)


@dataclass
class Captured:
    exporter: InMemorySpanExporter

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all() if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {sorted(s.name for s in self.all())}"
        return found[0]

    def parent_of(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        return next((s for s in self.all() if s.context.span_id == span.parent.span_id), None)

    def children(self, span: ReadableSpan) -> list[ReadableSpan]:
        return [s for s in self.all() if s.parent is not None and s.parent.span_id == span.context.span_id]

    def is_descendant(self, span: ReadableSpan, ancestor: ReadableSpan) -> bool:
        current: ReadableSpan | None = span
        while current is not None:
            if current.parent is not None and current.parent.span_id == ancestor.context.span_id:
                return True
            current = self.parent_of(current)
        return False

    def attribute_text(self) -> str:
        """Every attribute value and event attribute of every span, as one text to search."""
        parts: list[str] = []
        for span in self.all():
            parts += [span.name, str(span.status.description or "")]
            parts += [f"{k}={v}" for k, v in (span.attributes or {}).items()]
            for event in span.events:
                parts += [event.name] + [f"{k}={v}" for k, v in (event.attributes or {}).items()]
        return "\n".join(parts)


_exporter = InMemorySpanExporter()
_provider: TracerProvider | None = None


def _session_provider() -> TracerProvider:
    global _provider
    if _provider is None:
        _provider = TracerProvider(resource=Resource.create({"service.name": "reasoningbank-tests"}))
        _provider.add_span_processor(_WhileTracing(_exporter))
    return _provider


@pytest.fixture(name="spans")
def spans_fixture() -> Iterator[Captured]:
    """Tracing on (the in-memory provider, Django's instrumentation, SQL spans) for this test."""
    _exporter.clear()
    tracing.install(_session_provider(), role="web")
    try:
        yield Captured(_exporter)
    finally:
        tracing.uninstall()
        _exporter.clear()


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})
