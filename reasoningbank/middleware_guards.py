"""Request guards that answer before any view runs.

``RequestBodyGuardMiddleware``: the body of a request is refused before anything parses it when it is
larger than its path allows (413, ``REQUEST_MAX_BYTES``, more for the import endpoint), sent
chunked without a length where nothing could read it (411), nested deeper than ``JSON_MAX_DEPTH``
(400), or holds a NUL in a JSON string or a form field (400 naming the field). Under ``/api/``,
``/oauth/`` (token, revocation, registration) and ``/mcp`` the answers are JSON in the one error
shape (``reasoningbank/http_errors.py``); dashboard pages get a small HTML page. Under uvicorn a
chunked body is read (and an over-size one refused) earlier, by ``reasoningbank/asgi_guards.py``.
See docs/security/http-hardening.md.

``NulByteGuardMiddleware``: PostgreSQL cannot store or even compare text that contains a NUL
character, so an id such as ``/api/v1/sessions/ab%00c`` that reaches a query fails inside the
database driver (a 500). No id, slug or filter value of this product can legitimately contain
NUL, so one guard here replaces a check in every view:

* NUL anywhere in the path → 404, exactly like an id that does not exist;
* NUL in a query parameter's name or value → 400 naming the parameter.

Under ``/api/`` and ``/oauth/`` the answers are JSON in the error shape; dashboard pages get Django's
404 page and a small HTML 400. Selectors keep their own NUL checks for callers
that do not come through HTTP (MCP tools, commands).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.utils.html import format_html

from reasoningbank.http_errors import JSONRPC_PARSE_ERROR, area_for_path, refusal_body
from reasoningbank.json_limits import (
    NUL,
    NUL_MESSAGE,
    json_body_nul_field,
    json_depth_exceeds,
    json_depth_message,
)

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
# the registration endpoint's body is client metadata: its refusals say so (RFC 7591 section 3.2.2)
REGISTRATION_PREFIX = "/oauth/register/"


def _printable(name: str) -> str:
    return name.replace(NUL, "\\x00")


# --- limits -------------------------------------------------------------------------------------------


def body_limit_for_path(path: str) -> int:
    """The most bytes a request body to ``path`` may have (``REQUEST_MAX_BYTES``, or the larger
    allowance of an endpoint named in ``REQUEST_MAX_BYTES_BY_PATH``)."""
    by_path: dict[str, int] = settings.REQUEST_MAX_BYTES_BY_PATH
    return int(by_path.get(path.rstrip("/"), settings.REQUEST_MAX_BYTES))


def too_large_message(limit: int) -> str:
    return f"The request body is larger than this endpoint accepts ({limit} bytes)."


LENGTH_REQUIRED_MESSAGE = "A request body needs a Content-Length header here (chunked bodies are not read)."


# --- answers ------------------------------------------------------------------------------------------


def guard_response(
    request: HttpRequest,
    status: int,
    detail: str,
    code: str,
    errors: dict[str, list[str]] | None = None,
    *,
    jsonrpc_code: int | None = None,
) -> HttpResponse:
    """A refusal in the area's flavour: JSON in the error shape for the API, OAuth and MCP paths, a
    small HTML page (or an htmx fragment) for the dashboard."""
    path = request.path_info
    oauth_error = (
        "invalid_client_metadata" if status == 400 and path.startswith(REGISTRATION_PREFIX) else "invalid_request"
    )
    kwargs: dict[str, Any] = {"oauth_error": oauth_error}
    if jsonrpc_code is not None:
        kwargs["jsonrpc_code"] = jsonrpc_code
    body = refusal_body(path, detail, code, errors, **kwargs)
    if body is not None:
        response: HttpResponse = JsonResponse(body, status=status)
        response["Cache-Control"] = "no-store"
        return response
    alert = format_html('<div role="alert" class="alert error">{}</div>', detail)
    if request.headers.get("HX-Request"):
        return HttpResponse(alert, status=status)
    return HttpResponse(
        format_html(
            '<!doctype html><html lang="en"><head><title>{}</title></head><body><main>{}</main></body></html>',
            HTTPStatus(status).phrase,
            alert,
        ),
        status=status,
    )


def _nul_field_response(request: HttpRequest, field: str) -> HttpResponse:
    name = _printable(field) or "body"
    return guard_response(request, 400, f"Invalid input: {name}: {NUL_MESSAGE}", "invalid", {name: [NUL_MESSAGE]})


# --- NUL in the URL -----------------------------------------------------------------------------------


def nul_guard_response(request: HttpRequest) -> HttpResponse | None:
    """The 404/400 answer for a request with NUL in its path or query, or None to carry on."""
    if NUL in request.path or NUL in request.path_info:
        if area_for_path(request.path_info) != "page":
            body = refusal_body(request.path_info, "Not found.", "not_found", oauth_error="not_found")
            return JsonResponse(body, status=404)
        raise Http404("Not found.")  # the project's 404 page, as for any unknown id
    try:
        query = request.GET.lists()
    except TooManyFieldsSent:
        return guard_response(request, 400, "Too many query parameters.", "invalid")
    for name, values in query:
        if NUL in name or any(NUL in value for value in values):
            field = _printable(name)
            if area_for_path(request.path_info) != "page":
                return guard_response(
                    request, 400, f"Invalid input: {field}: {NUL_MESSAGE}", "invalid", {field: [NUL_MESSAGE]}
                )
            return _dashboard_bad_request(request, field)
    return None


def _dashboard_bad_request(request: HttpRequest, field: str) -> HttpResponse:
    """A visible message like the dashboard's own filter errors; htmx swaps get the fragment only.
    Standalone HTML: this runs before authentication, so the site layout cannot be rendered."""
    alert = format_html(
        '<div role="alert" class="alert error">Bad request: the filter {}: Null characters are not allowed. '
        '<a href="{}">Clear the filters</a></div>',
        field,
        request.path,
    )
    if request.headers.get("HX-Request"):
        return HttpResponseBadRequest(alert)
    return HttpResponseBadRequest(
        format_html(
            '<!doctype html><html lang="en"><head><title>Bad request</title></head><body><main>{}</main></body></html>',
            alert,
        )
    )


# --- the body -----------------------------------------------------------------------------------------


def _content_length(request: HttpRequest) -> int | None:
    raw = request.META.get("CONTENT_LENGTH") or ""
    try:
        return max(int(raw), 0) if raw.strip() else None
    except ValueError:
        return None


def body_guard_response(request: HttpRequest) -> HttpResponse | None:
    """The 411/413/400 answer for a request whose body may not be read or parsed, or None."""
    length = _content_length(request)
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    if length is None and chunked:
        # only under a server that hands Django a chunked body without a length (WSGI): Django would
        # read it as empty, silently. Under uvicorn the ASGI guard has read it and set the length.
        return guard_response(request, 411, LENGTH_REQUIRED_MESSAGE, "length_required")
    if not length:
        return None
    limit = body_limit_for_path(request.path_info)
    if length > limit:
        return guard_response(request, 413, too_large_message(limit), "too_large")
    content_type = request.content_type or ""
    try:
        if content_type in FORM_TYPES:
            request.body  # noqa: B018 -- read (bounded above) before the form, so later readers still see it
            for name, values in request.POST.lists():
                if NUL in name or any(NUL in value for value in values):
                    return _nul_field_response(request, name)
            return None
        body = request.body
    except RequestDataTooBig:
        return guard_response(request, 413, too_large_message(limit), "too_large")
    except (TooManyFieldsSent, TooManyFilesSent):
        return guard_response(request, 400, "Too many form fields.", "invalid")
    except MultiPartParserError:
        return guard_response(request, 400, "The multipart body could not be parsed.", "parse_error")
    max_depth = int(settings.JSON_MAX_DEPTH)
    if json_depth_exceeds(body, max_depth):
        return guard_response(
            request, 400, json_depth_message(max_depth), "parse_error", jsonrpc_code=JSONRPC_PARSE_ERROR
        )
    field = json_body_nul_field(body)
    if field is not None:
        return _nul_field_response(request, field)
    return None


# --- the middleware -----------------------------------------------------------------------------------


class _Guard:
    """Sync and async capable, so it adds no thread hop under ASGI."""

    sync_capable = True
    async_capable = True
    check: Callable[[HttpRequest], HttpResponse | None]

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        return type(self).check(request) or self.get_response(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        response = type(self).check(request)
        if response is not None:
            return response
        inner: Awaitable[HttpResponse] = self.get_response(request)
        return await inner


class NulByteGuardMiddleware(_Guard):
    check = staticmethod(nul_guard_response)


class RequestBodyGuardMiddleware(_Guard):
    """After ``NulByteGuardMiddleware``, before sessions, CSRF and authentication: a body that would
    fail a parser is refused before anything reads it. A view that reads a body past Django's own
    limit (``DATA_UPLOAD_MAX_MEMORY_SIZE``) is answered 413 in the same shape."""

    check = staticmethod(body_guard_response)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, RequestDataTooBig):
            limit = body_limit_for_path(request.path_info)
            return guard_response(request, 413, too_large_message(limit), "too_large")
        if isinstance(exception, TooManyFieldsSent | TooManyFilesSent):
            return guard_response(request, 400, "Too many form fields.", "invalid")
        return None
