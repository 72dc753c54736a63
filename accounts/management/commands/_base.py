from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError

from reasoningbank.errors import ServiceError


def run_service(fn: Callable[..., Any], **kwargs: Any) -> Any:
    """Call a service; anticipated failures become a CommandError (exit 1 with the message)."""
    try:
        return fn(**kwargs)
    except ServiceError as exc:
        raise CommandError(exc.message) from None
