"""Typed exceptions for the API's one error shape, ``{"detail", "code", "errors"}`` (docs/api.md#conventions):
one class per family of HTTP status, each carrying the status, the machine-readable ``code``, the sentence
``detail``, the per-field ``errors`` and the request's id (the service's ``X-Request-ID``, which its logs
carry: quote it when you report a failure)."""

from __future__ import annotations

from typing import Any

import httpx

from reasoningbank_client.retrying import retry_after_parse

REQUEST_ID_HEADER = "X-Request-ID"


class ReasoningBankError(Exception):
    """Any error answer of the API (or no answer: :class:`ConnectionFailed`)."""

    def __init__(
        self,
        detail: str,
        *,
        status: int,
        code: str,
        errors: dict[str, list[str]] | None = None,
        retry_after: float | None = None,
        response: httpx.Response | None = None,
        request_id: str | None = None,
        attempts: int = 1,
    ) -> None:
        said = f"{status} {code}: {detail}" if status else f"{code}: {detail}"
        about = [f"request id {request_id}"] if request_id else []
        if attempts > 1:
            about.append(f"after {attempts} attempts")
        super().__init__(f"{said} ({', '.join(about)})" if about else said)
        self.detail = detail
        self.status = status
        self.code = code
        self.errors: dict[str, list[str]] = errors or {}
        self.retry_after = retry_after
        self.response = response
        # the service's id of the request (its logs carry it); for a request that got no answer, the id the
        # client sent, which the service logs too if the request reached it
        self.request_id = request_id
        self.attempts = attempts


class ValidationError(ReasoningBankError):
    """400 or 422: a field is missing, unknown or invalid (``errors`` names it), or the write gate refused
    a memory without reusable value (422, code ``rejected_<reason>``)."""


class AuthenticationError(ReasoningBankError):
    """401: no token, or a token that is unknown, expired or revoked."""


class PermissionDenied(ReasoningBankError):
    """403: the token lacks the scope, the plan does not include the operation (``plan_required``) or a
    limit is used up (``limit_exceeded``)."""


class NotFound(ReasoningBankError):
    """404: no such object in reach of the token (another organization's object is a 404 too)."""


class Conflict(ReasoningBankError):
    """409: the object's state forbids the request; ``detail`` says what to do."""


class PayloadTooLarge(ReasoningBankError):
    """413: the body is larger than the service accepts (``REQUEST_MAX_BYTES`` / ``IMPORT_MAX_BYTES``)."""


class UnsupportedMediaType(ReasoningBankError):
    """415: the body's content type is not one the operation takes."""


class RateLimited(ReasoningBankError):
    """429: too many requests or failed tokens; wait ``retry_after`` seconds."""


class ServerError(ReasoningBankError):
    """5xx: the service failed (502 ``llm_error``) or a part it needs is down."""


class ServiceUnavailable(ServerError):
    """503: the database or the LLM is unavailable or not configured; ``retry_after`` when the service
    gave one."""


class ConnectionFailed(ReasoningBankError):
    """The service did not answer (refused, timed out, broken connection); ``status`` is 0. The message
    names the host and the reason; the transport's own exception is ``__cause__``."""


_BY_STATUS: dict[int, type[ReasoningBankError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: ValidationError,
    429: RateLimited,
    503: ServiceUnavailable,
}


def error_class_for(status: int) -> type[ReasoningBankError]:
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else ReasoningBankError


def retry_after_of(response: httpx.Response) -> float | None:
    return retry_after_parse(response.headers.get("Retry-After"))


def error_from(response: httpx.Response, *, request_id: str | None = None, attempts: int = 1) -> ReasoningBankError:
    """The typed exception for an error answer; a body not in the API's shape (a proxy's page) keeps its
    text as ``detail`` and ``http_<status>`` as ``code``. The request id is the one the answer carries, else
    ``request_id`` (the one sent: a proxy's answer may not echo it)."""
    body: Any
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        detail, code = body["detail"], str(body.get("code") or f"http_{response.status_code}")
        errors = body.get("errors") if isinstance(body.get("errors"), dict) else {}
    else:
        detail, code, errors = response.text[:500] or response.reason_phrase, f"http_{response.status_code}", {}
    return error_class_for(response.status_code)(
        detail,
        status=response.status_code,
        code=code,
        errors=errors,
        retry_after=retry_after_of(response),
        response=response,
        request_id=response.headers.get(REQUEST_ID_HEADER) or request_id,
        attempts=attempts,
    )


def connection_failed(exc: httpx.TransportError, url: httpx.URL, *, request_id: str, attempts: int) -> ConnectionFailed:
    """The error for a request that got no answer, naming the host and why (httpx's own message often
    names neither: "[Errno 111] Connection refused", "timed out"); raise it ``from exc``."""
    host = f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
    reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        what = f"cannot reach {host} ({reason})"
    elif isinstance(exc, httpx.TimeoutException):
        what = f"no answer from {host} in time ({reason})"
    else:
        what = f"the connection to {host} failed ({reason})"
    return ConnectionFailed(what, status=0, code="connection_failed", request_id=request_id, attempts=attempts)
