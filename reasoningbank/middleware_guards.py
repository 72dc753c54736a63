"""Request guards that answer before any view runs.

``NulByteGuardMiddleware``: PostgreSQL cannot store or even compare text that contains a NUL
character, so an id such as ``/api/v1/sessions/ab%00c`` that reaches a query fails inside the
database driver (a 500). No id, slug or filter value of this product can legitimately contain
NUL, so one guard here replaces a check in every view:

* NUL anywhere in the path → 404, exactly like an id that does not exist;
* NUL in a query parameter's name or value → 400 naming the parameter.

Under ``/api/`` the answers use the REST error shape (``{"detail", "code", "errors"}``); dashboard
pages get Django's 404 page and a plain-text 400. Selectors keep their own NUL checks for callers
that do not come through HTTP (MCP tools, commands).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.html import format_html

NUL = "\x00"
API_PREFIX = "/api/"
NUL_MESSAGE = "must not contain NUL characters"


def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def _printable(name: str) -> str:
    return name.replace(NUL, "\\x00")


def nul_guard_response(request: HttpRequest) -> HttpResponse | None:
    """The 404/400 answer for a request with NUL in its path or query, or None to carry on."""
    if NUL in request.path or NUL in request.path_info:
        if _is_api(request):
            return JsonResponse({"detail": "Not found.", "code": "not_found", "errors": {}}, status=404)
        raise Http404("Not found.")  # the project's 404 page, as for any unknown id
    for name, values in request.GET.lists():
        if NUL in name or any(NUL in value for value in values):
            field = _printable(name)
            if _is_api(request):
                return JsonResponse(
                    {
                        "detail": f"Invalid input: {field}: {NUL_MESSAGE}",
                        "code": "invalid",
                        "errors": {field: [NUL_MESSAGE]},
                    },
                    status=400,
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


class NulByteGuardMiddleware:
    """Sync and async capable, so it adds no thread hop under ASGI."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        return nul_guard_response(request) or self.get_response(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        response = nul_guard_response(request)
        if response is not None:
            return response
        inner: Awaitable[HttpResponse] = self.get_response(request)
        return await inner
