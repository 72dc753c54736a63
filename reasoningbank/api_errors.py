"""One error shape for the whole REST API: ``{"detail": str, "code": str, "errors": {field: [str, ...]}}``.

Every error answer of the API has all three keys (``errors`` is ``{}`` when no field is at fault),
whatever raised it: a service's ``ServiceError``, a serializer's ``ValidationError`` (nested list or
dict errors are flattened into sentences under their top-level field), Django's ``ValidationError``
or one of DRF's own (401, 403, 404, 405, 415, 429). The ``Error`` component of the OpenAPI schema
(``ErrorSerializer``) documents exactly this shape, and ``error_responses`` declares it per status.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.template import loader
from django.views import csrf as csrf_views
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from reasoningbank.errors import RateLimited, ServiceError
from reasoningbank.http_errors import MISSING_BEARER_TOKEN, refusal_body
from reasoningbank.http_errors import error_body as http_error_body
from reasoningbank.request_context import request_context_get

NON_FIELD = "non_field_errors"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ServiceError):
        errors = {exc.field: [exc.message]} if exc.field else {}
        response = Response(error_body(exc.message, exc.code, errors), status=exc.status)
        if isinstance(exc, RateLimited):
            response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(detail=exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        errors = field_errors(response.data)
        response.data = error_body(_validation_summary(errors), "invalid", errors)
    else:
        data = response.data
        detail = data.get("detail", data) if isinstance(data, dict) else data
        code = getattr(detail, "code", None) or getattr(exc, "default_code", None) or "error"
        text = _plain_text(detail)
        if isinstance(exc, exceptions.NotAuthenticated) and text == str(exceptions.NotAuthenticated.default_detail):
            # what to send, in the words /mcp uses (docs/agent-api.md#authentication-errors)
            text = MISSING_BEARER_TOKEN
        response.data = error_body(text, str(code), {})
    if response.status_code == status.HTTP_401_UNAUTHORIZED and "WWW-Authenticate" not in response:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response


@csrf_exempt  # a POST to a wrong URL is a 404, not the CSRF failure page (the API uses tokens, not cookies)
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Any other URL under ``/api/`` (an id with a ``/`` in it, a typo): a JSON 404 in the error
    shape rather than Django's HTML page, whatever the method."""
    return JsonResponse(
        error_body(f"No API endpoint at {request.path!r}: see /api/docs/.", "not_found", {}), status=404
    )


def error_body(detail: str, code: str, errors: dict[str, list[str]]) -> dict[str, Any]:
    return http_error_body(detail, code, errors)


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: under ``/api/``, ``/oauth/`` and ``/mcp`` a JSON 500 in the error shape (an
    API client cannot read Django's HTML page), elsewhere the dashboard's page. The traceback is logged as
    always: a 500 is a bug to fix, never an answer to bad input."""
    body = refusal_body(request.path_info, "Internal server error.", "server_error", oauth_error="server_error")
    if body is None:
        # the dashboard's page (templates/500.html) with the id the log lines carry; rendered without the
        # request, as Django renders its own: no context processor touches what may have failed
        current = request_context_get()
        page = loader.render_to_string("500.html", {"request_id": current.request_id if current else ""})
        return HttpResponseServerError(page)
    return JsonResponse(body, status=500)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler400`` (Django's suspicious requests: a Host not allowed, a malformed body it could not
    read): the same split as ``server_error``."""
    body = refusal_body(request.path_info, "Bad request.", "bad_request")
    if body is None:
        return defaults.bad_request(request, exception)
    return JsonResponse(body, status=400)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: a URL nothing serves under ``/mcp/…`` (``/api/``, ``/oauth/`` and
    ``/.well-known/`` have catch-all routes of their own), or an ``Http404`` a view raised under any
    of the machine paths: a JSON 404 in the error shape; elsewhere the dashboard's page (templates/404.html)."""
    detail = f"Nothing is served at {request.path!r}."
    body = refusal_body(request.path_info, detail, "not_found", oauth_error="not_found")
    if body is None:
        return defaults.page_not_found(request, exception)
    return JsonResponse(body, status=404)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler403``: a ``PermissionDenied`` raised by a view or library under the machine paths."""
    body = refusal_body(request.path_info, "Forbidden.", "permission_denied", oauth_error="access_denied")
    if body is None:
        return defaults.permission_denied(request, exception)
    return JsonResponse(body, status=403)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: a POST that carries a session cookie but no CSRF token. Under the
    machine paths (which take tokens, never cookies) a JSON 403 saying so; on the dashboard Django's
    page, which tells a person to reload the form."""
    detail = (
        f"CSRF verification failed ({reason.rstrip('.')}): this endpoint authenticates by token, not by "
        "cookie; send the request without the session cookie."
    )
    body = refusal_body(request.path_info, detail, "csrf_failed", oauth_error="invalid_request")
    if body is None:
        return csrf_views.csrf_failure(request, reason)
    return JsonResponse(body, status=403)


def field_errors(data: Any) -> dict[str, list[str]]:
    """``{field: [sentence, ...]}`` from any DRF error structure (never a repr of ``ErrorDetail``)."""
    if isinstance(data, dict):
        return {str(field): _sentences(value) for field, value in data.items()}
    return {NON_FIELD: _sentences(data)}


def _sentences(value: Any, prefix: str = "") -> list[str]:
    """Nested errors (a list field's items, a dict field's keys) as flat sentences saying where."""
    if isinstance(value, dict):
        out: list[str] = []
        for key, inner in value.items():
            where = f"item {key}" if isinstance(key, int) else str(key)
            out += _sentences(inner, f"{prefix}{where}: ")
        return out
    if isinstance(value, list | tuple):
        return [sentence for inner in value for sentence in _sentences(inner, prefix)]
    return [f"{prefix}{value}"]


def _plain_text(value: Any) -> str:
    return "; ".join(_sentences(value)) if isinstance(value, dict | list | tuple) else str(value)


def _validation_summary(errors: dict[str, list[str]]) -> str:
    """One sentence naming the first bad field (and how many more there are)."""
    if not errors:
        return "Invalid input."
    field, messages = next(iter(errors.items()))
    first = messages[0] if messages else "invalid"
    where = "" if field == NON_FIELD else f"{field}: "
    more = len(errors) - 1
    return f"Invalid input: {where}{first}" + (f" (and {more} more field{'s' * (more > 1)})" if more else "")


# --- the schema of errors ------------------------------------------------------------------------


class ErrorSerializer(serializers.Serializer):
    """Documentation only: the body of every 4xx answer."""

    detail = serializers.CharField(help_text="one sentence saying what is wrong")
    code = serializers.CharField(
        help_text="stable machine-readable code: invalid, parse_error, not_authenticated, authentication_failed, "
        "permission_denied, plan_required, limit_exceeded, write_suspended, not_found, conflict, method_not_allowed, "
        "unsupported_media_type, throttled, write_limited, too_large, length_required, database_unavailable; for "
        "operations that ask an LLM: "
        "llm_not_configured, llm_unavailable (503), llm_error, llm_reply_invalid (502)"
    )
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="the fields at fault, each with its messages; empty when no field is at fault "
        "(non_field_errors for the body as a whole)",
    )


ERROR_DESCRIPTIONS = {
    400: "Bad input: `errors` names every field or query parameter at fault (unknown ones included).",
    401: "The bearer token is missing, malformed, unknown, expired or revoked (`WWW-Authenticate: Bearer`).",
    403: (
        "The token lacks the scope this operation needs, or the organization's plan lacks the feature; for a write, "
        "the token's writes may be suspended (`write_suspended`)."
    ),
    404: "No such object within the token's reach (another organization's objects are reported the same way).",
    409: "The request conflicts with the object's current state.",
    413: "The body (or the file in it) is larger than this endpoint accepts (`code` `too_large`).",
    415: "The body is not `application/json`.",
    422: (
        "The body had the right shape but its content is refused (the write gate found nothing reusable "
        "in it, or a rule between fields the schema cannot state): `code` is `rejected_<reason>` and "
        "`errors` names the field."
    ),
    429: (
        "Too many failed authentications from this address or with this token prefix (`throttled`), or, for a "
        "write, the token's or the organization's write limit is reached (`write_limited`): wait `Retry-After` s."
    ),
    503: "The database is unreachable for the moment: retry after `Retry-After` seconds.",
}


def error_responses(
    *codes: int, conflict: str | None = None, described: dict[int, str] | None = None
) -> dict[int, OpenApiResponse]:
    """``extend_schema(responses=...)`` entries for these error statuses, all with the ``Error`` body;
    ``conflict`` says what a 409 means for this operation, ``described`` what other statuses mean for it
    (e.g. a 502/503 from its LLM). Wherever a token is checked (401) a 429 can answer too
    (``accounts/throttling.py``), so it is added, and so is the 503 every operation answers while the
    database is unreachable (``reasoningbank/middleware.py``)."""
    texts = {**ERROR_DESCRIPTIONS, **({409: conflict} if conflict else {}), **(described or {})}
    codes = (*codes, 429) if 401 in codes and 429 not in codes else codes
    codes = (*codes, 503) if 503 not in codes else codes
    return {code: OpenApiResponse(ErrorSerializer, description=texts[code]) for code in codes}
