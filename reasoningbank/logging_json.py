"""Log lines: JSON (one object a line, the default without DEBUG) or plain text (``LOG_FORMAT=plain``,
for a developer's terminal), both carrying the request's context (docs/observability.md#logs).

A JSON line holds ``timestamp`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, then — when known
— ``request_id``, ``org`` (slug), ``token_prefix`` (the display prefix, never the token), ``trace_id``
and ``span_id`` (hex, while an OpenTelemetry span is recording) and every ``extra={...}`` field of the
call. Used by Django's ``LOGGING`` (reasoningbank/settings/observability.py) and by uvicorn's ``--log-config``
(``reasoningbank/uvicorn_logging.json``, before Django is set up, so: no Django here).

Levels: INFO for key decisions (tier changes, merges, promotions, a run's outcome), DEBUG for details,
and ``TRACE`` (5, below DEBUG) for LLM request and response bodies, which go through ``log_body``
(secrets scrubbed, truncated) and never appear above TRACE.
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from typing import Any

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

from reasoningbank.request_context import request_context_get
from reasoningbank.scrubbing import scrub_secrets

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

TRACE = 5
logging.addLevelName(TRACE, "TRACE")
LOG_FORMATS = ("json", "plain")
LOG_BODY_MAX_CHARS = 1000  # a body in a TRACE line (a prompt, a reply) is cut to this many characters

try:  # the API package only (the tracing SDK is optional): without it there are no trace ids to log
    from opentelemetry import trace as _otel_trace
except ImportError:  # pragma: no cover - opentelemetry-api is installed with the project
    _otel_trace = None  # type: ignore[assignment]


def log_body(text: str, limit: int = LOG_BODY_MAX_CHARS) -> str:
    """An LLM prompt or reply as a TRACE line may hold it: credentials replaced, at most ``limit``
    characters (scrubbed first, so a secret cut in half by the limit is still found)."""
    clean = scrub_secrets(text).text
    return clean if len(clean) <= limit else clean[:limit] + f"… [{len(clean) - limit} more characters]"


def log_context() -> dict[str, str]:
    """The fields every line of the current request carries (empty ones left out)."""
    fields: dict[str, str] = {}
    context = request_context_get()
    if context is not None:
        fields["request_id"] = context.request_id
        if context.org:
            fields["org"] = context.org
        if context.token_prefix:
            fields["token_prefix"] = context.token_prefix
    if _otel_trace is not None:
        span_context = _otel_trace.get_current_span().get_span_context()
        if span_context.is_valid:
            fields["trace_id"] = format(span_context.trace_id, "032x")
            fields["span_id"] = format(span_context.span_id, "016x")
    return fields


class JsonLineFormatter(JsonFormatter):
    """python-json-logger's formatter with our field names and order: timestamp, level, logger,
    message, the request's context, then the call's ``extra`` fields (which may not override those)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            "%(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "name": "logger"},
            # uvicorn adds the message again with terminal colour codes: not for a log pipeline
            reserved_attrs=[*RESERVED_ATTRS, "color_message"],
            json_ensure_ascii=False,
            **kwargs,
        )

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        log_data["timestamp"] = datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds")
        super().add_fields(log_data, record, message_dict)
        context = log_context()
        for key in ("level", "logger", "message"):  # keep the core fields first
            log_data[key] = log_data.pop(key)
        extras = {k: v for k, v in log_data.items() if k not in ("timestamp", "level", "logger", "message")}
        for key in extras:
            del log_data[key]
        log_data.update(context)
        log_data.update({k: v for k, v in extras.items() if k not in context})


class PlainFormatter(logging.Formatter):
    """``2026-01-01 12:00:00,000 INFO consolidation message [request_id=… org=acme]``: the classic
    line, with the request's context appended when there is one."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        context = log_context()
        if not context:
            return line
        suffix = " ".join(f"{k}={v}" for k, v in context.items())
        head, sep, rest = line.partition("\n")  # after the message, before a traceback
        return f"{head} [{suffix}]{sep}{rest}"


def log_format_default(debug: bool) -> str:
    """``LOG_FORMAT``'s default, for the settings (observability.py) and for uvicorn's log configuration alike:
    plain text for a developer's terminal (``DEBUG``), JSON lines otherwise."""
    return "plain" if debug else "json"


def log_format_from_env() -> str:
    """``LOG_FORMAT`` if set, else its default: uvicorn's log configuration is read before Django and its
    settings, so this reads the environment itself (the settings refuse a bad value at start-up)."""
    value = os.environ.get("LOG_FORMAT", "").strip().lower()
    if value:
        return value if value in LOG_FORMATS else "json"
    return log_format_default(os.environ.get("DEBUG", "").strip().lower() in {"1", "true", "yes", "on"})


def formatter(kind: str | None = None) -> logging.Formatter:
    """The formatter factory of ``LOGGING`` and of uvicorn's log config (``"()"`` in ``dictConfig``)."""
    return PlainFormatter() if (kind or log_format_from_env()) == "plain" else JsonLineFormatter()


def log_level_number(name: str) -> int:
    """``trace``, ``debug``, … → the logging level (``TRACE`` is ours)."""
    return TRACE if name.lower() == "trace" else int(logging.getLevelName(name.upper()))
