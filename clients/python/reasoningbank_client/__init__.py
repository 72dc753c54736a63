"""A typed client for the ReasoningBank REST API (docs/sdks.md)."""

from reasoningbank_client.client import AsyncReasoningBank, BearerAuth, ReasoningBank
from reasoningbank_client.errors import (
    AuthenticationError,
    Conflict,
    ConnectionFailed,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ReasoningBankError,
    ServerError,
    ServiceUnavailable,
    UnsupportedMediaType,
    ValidationError,
)
from reasoningbank_client.pagination import AsyncPages, Pages
from reasoningbank_client.retrying import RequestOptions, RetryPolicy
from reasoningbank_client.version import __version__

__all__ = [
    "AsyncPages",
    "AsyncReasoningBank",
    "AuthenticationError",
    "BearerAuth",
    "Conflict",
    "ConnectionFailed",
    "NotFound",
    "Pages",
    "PayloadTooLarge",
    "PermissionDenied",
    "RateLimited",
    "ReasoningBank",
    "ReasoningBankError",
    "RequestOptions",
    "RetryPolicy",
    "ServerError",
    "ServiceUnavailable",
    "UnsupportedMediaType",
    "ValidationError",
    "__version__",
]
