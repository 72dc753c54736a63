"""A typed client for the ReasoningBank REST API (docs/sdks.md)."""

from reasoningbank_client.client import AsyncReasoningBank, BearerAuth, ReasoningBank, __version__
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

__all__ = [
    "AsyncReasoningBank",
    "AuthenticationError",
    "BearerAuth",
    "Conflict",
    "ConnectionFailed",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "RateLimited",
    "ReasoningBank",
    "ReasoningBankError",
    "ServerError",
    "ServiceUnavailable",
    "UnsupportedMediaType",
    "ValidationError",
    "__version__",
]
