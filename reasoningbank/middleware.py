"""Database loss → a fast, clear 503 instead of a traceback page, for every part of the service.

With PostgreSQL gone, a request fails within ``DB_CONNECT_TIMEOUT`` (settings: libpq's connect
timeout and the pool's wait) and is answered ``503`` with ``Retry-After``: JSON
``{"detail", "code": "database_unavailable", "errors": {}}`` under ``/api/``, ``/oauth/`` and
``/.well-known/`` (the error shape; OAuth's ``temporarily_unavailable`` too) and a small plain page
for the dashboard. ``accounts/mcp_auth.py`` answers ``/mcp`` with the same
JSON when the token cannot be checked, and a tool whose own work finds no connection answers
``DATABASE_UNAVAILABLE_TOOL_TEXT`` (``reasoningbank/mcp_registry.py``). Nothing needs restarting:
the next request after the database is back reconnects.

Only errors that mean "cannot reach the database" count (connection refused or lost, no pooled
connection in time, server shutting down); a failing query (deadlock, constraint, timeout of a
statement) stays an ordinary error.

Also here: ``RequestContextMiddleware``, the request id, org and token prefix of every log line.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

import psycopg
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

from reasoningbank.http_errors import refusal_body
from reasoningbank.request_context import (
    REQUEST_ID_HEADER,
    access_log,
    request_context_end,
    request_context_get,
    request_context_start,
    request_id_accept,
    transport_for_path,
)

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
DATABASE_UNAVAILABLE_BODY: dict[str, Any] = {
    "detail": "The database is unavailable right now; try again in a few seconds.",
    "code": "database_unavailable",
    "errors": {},
}
# what an MCP tool call answers in the same case (an ``isError`` result: tools have no HTTP status)
DATABASE_UNAVAILABLE_TOOL_TEXT = (
    f"database_unavailable: The database is unavailable right now (no connection was free in time); "
    f"retry this call in {RETRY_AFTER_SECONDS} seconds."
)
_PAGE = (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Service unavailable</title></head>\n'
    "<body><h1>Service unavailable</h1>\n<p>ReasoningBank cannot reach its database right now. Nothing is "
    "lost: reload this page in a few seconds.</p></body></html>\n"
)
# SQLSTATEs of a server that is going away or not accepting connections yet (class 08 is
# "connection exception"): admin_shutdown, crash_shutdown, cannot_connect_now
_SERVER_GONE = frozenset({"57P01", "57P02", "57P03"})
_MARK = "_rb_database_unavailable"


def database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database cannot be reached, as opposed to a query failing."""
    if not isinstance(exc, (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)):
        return False
    cause = exc.__cause__ if isinstance(exc, (OperationalError, InterfaceError)) and exc.__cause__ else exc
    sqlstate = getattr(cause, "sqlstate", None)  # None: a client-side failure (refused, lost, pool timeout)
    return sqlstate is None or sqlstate.startswith("08") or sqlstate in _SERVER_GONE


def database_unavailable_response(request: HttpRequest) -> HttpResponse:
    response: HttpResponse
    body = refusal_body(
        request.path_info,
        DATABASE_UNAVAILABLE_BODY["detail"],
        DATABASE_UNAVAILABLE_BODY["code"],
        oauth_error="temporarily_unavailable",
    )
    if body is not None:  # /api/, /oauth/, /.well-known/: JSON in the area's flavour of the error shape
        response = JsonResponse(body, status=503)
    else:
        response = HttpResponse(_PAGE, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def _mark_request(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    exc = sys.exc_info()[1]
    if request is not None and exc is not None and database_unavailable(exc):
        setattr(request, _MARK, True)


class DatabaseUnavailableMiddleware:
    """First in ``MIDDLEWARE``. A view (DRF included: its handler re-raises database errors) or template
    that cannot reach the database is answered 503 here (``process_exception``); an error raised in
    another middleware has already become Django's 500 by the time it gets here, so the
    ``got_request_exception`` signal marks the request and the 500 is replaced on the way out."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        got_request_exception.connect(_mark_request, dispatch_uid="reasoningbank.database_unavailable")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code == 500 and getattr(request, _MARK, False):
            return database_unavailable_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not database_unavailable(exception):
            return None
        logger.warning("database unavailable: %s %s answered 503 (%s)", request.method, request.path, exception)
        return database_unavailable_response(request)


class RequestContextMiddleware:
    """Outermost in ``MIDDLEWARE``: the request's id (its ``X-Request-ID`` when sane, else a fresh one,
    echoed in the response's ``X-Request-ID``), transport and, once authentication has noted them, org
    and token prefix, for every log line of the request (``reasoningbank/request_context.py``); then
    one access line. The MCP endpoint, outside Django, gets the same from ``RequestContextASGI``."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_accept(request.headers.get(REQUEST_ID_HEADER))
        token = request_context_start(
            request_id=request_id,
            transport=transport_for_path(request.path),
            user_agent=request.headers.get("User-Agent", ""),
            client_ip=request.META.get("REMOTE_ADDR") or "",
        )
        context = request_context_get()
        assert context is not None
        status = 500
        try:
            response = self.get_response(request)
            status = response.status_code
            response[REQUEST_ID_HEADER] = request_id
            return response
        finally:
            access_log(context, method=request.method or "", path=request.path, status=status)
            request_context_end(token)
