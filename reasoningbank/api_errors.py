"""One error shape for the whole REST API: ``{"detail": ..., "code": ..., "errors": {field: [..]}}``."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from reasoningbank.errors import ServiceError


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ServiceError):
        body: dict[str, Any] = {"detail": exc.message, "code": exc.code}
        if exc.field:
            body["errors"] = {exc.field: [exc.message]}
        return Response(body, status=exc.status)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(detail=exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(exc, exceptions.ValidationError):
        errors = data if isinstance(data, dict) else {"non_field_errors": data}
        first_field, first_messages = next(iter(errors.items()), ("", [""]))
        first = first_messages[0] if isinstance(first_messages, list) and first_messages else first_messages
        where = "" if first_field == "non_field_errors" else f"{first_field}: "
        response.data = {
            "detail": f"Invalid input: {where}{first}",
            "code": "invalid",
            "errors": errors,
        }
    elif isinstance(data, dict) and "detail" in data:
        code = getattr(data["detail"], "code", None) or getattr(exc, "default_code", "error")
        response.data = {"detail": str(data["detail"]), "code": code}
    if response.status_code == status.HTTP_401_UNAUTHORIZED and "WWW-Authenticate" not in response:
        response["WWW-Authenticate"] = 'Bearer realm="api"'
    return response
