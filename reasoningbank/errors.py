"""Errors that services raise for anticipated failures.

REST views, MCP tools and dashboard views translate these into a clear 4xx / ``isError`` result /
form error. Anything else escaping a service is a bug.
"""

from __future__ import annotations


class ServiceError(Exception):
    """Base for anticipated failures. ``code`` is stable and machine-readable."""

    code = "invalid"
    status = 400

    def __init__(self, message: str, *, field: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        if code:
            self.code = code


class InvalidInput(ServiceError):
    code = "invalid"
    status = 400


class Rejected(InvalidInput):
    """Input of the right shape whose content the write gate refuses (nothing reusable in it): a 422,
    not a 400, because the body conformed to the schema; ``code`` is ``rejected_<reason>``."""

    code = "rejected"
    status = 422


class TooLarge(InvalidInput):
    """Input over a size limit of this service (a body, a file): 413, ``code`` ``too_large``."""

    code = "too_large"
    status = 413


class NotFound(ServiceError):
    code = "not_found"
    status = 404


class Forbidden(ServiceError):
    code = "forbidden"
    status = 403


class PlanRequired(ServiceError):
    """The org's plan lacks a feature; the message names the plan that has it."""

    code = "plan_required"
    status = 403


class LimitExceeded(ServiceError):
    code = "limit_exceeded"
    status = 403


class RateLimited(ServiceError):
    """Too many requests of one kind within a window (a token's or an organization's writes): 429, with
    the seconds to wait as ``retry_after`` (REST's ``Retry-After`` header; the message says it too, for
    MCP, whose tool errors carry only text)."""

    code = "rate_limited"
    status = 429

    def __init__(self, message: str, *, retry_after: int, field: str | None = None, code: str | None = None) -> None:
        super().__init__(message, field=field, code=code)
        self.retry_after = max(1, int(retry_after))


class Conflict(ServiceError):
    code = "conflict"
    status = 409


class UpstreamFailed(ServiceError):
    """A service the operation depends on (the LLM provider) answered with something unusable or
    refused the request: 502, with a ``code`` naming which (``llm_error``, ``llm_reply_invalid``)."""

    code = "upstream_failed"
    status = 502


class Unavailable(ServiceError):
    """Something the operation needs is missing or down for now (no LLM configured, the provider not
    answering): 503, with a ``code`` naming which (``llm_not_configured``, ``llm_unavailable``)."""

    code = "unavailable"
    status = 503
