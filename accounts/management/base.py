from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError

from accounts.models import Organization
from reasoningbank.errors import ServiceError


def run_service(fn: Callable[..., Any], **kwargs: Any) -> Any:
    """Call a service; anticipated failures become a CommandError (exit 1 with the message)."""
    try:
        return fn(**kwargs)
    except ServiceError as exc:
        raise CommandError(exc.message) from None


def organization_by_slug(slug: str) -> Organization:
    """The organization a command names; a missing one is a CommandError (exit 1 naming the slug)."""
    org = Organization.objects.filter(slug=slug).first()
    if org is None:
        raise CommandError(f"organization {slug!r} does not exist")
    return org
