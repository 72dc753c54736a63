"""Template context for every dashboard page: product-level problems (a dead worker, no LLM, the
organization's LLM budget past its alert threshold or reached; for its admins, a token suspended from
writing), and
whether the user may open the system page they link to.

Lazy: the health read happens only when a template shows ``status_banners`` (the base layout
does; htmx partials do not), and it is cached for a few seconds (``system.selectors``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from reasoningbank.health import Banner
from reasoningbank.health import status_banners as banners_for

logger = logging.getLogger(__name__)


def _banners(request: HttpRequest) -> list[Banner]:
    from reasoningbank.ai.llm import llm_health_get
    from system.selectors import worker_health_cached

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return []  # an operator's message, not for the sign-in page
    try:
        worker = worker_health_cached()
    except DatabaseError:  # a banner must never break a page (the database itself is /readyz's job)
        logger.warning("status banner: the worker heartbeat could not be read", exc_info=True)
        return []
    return banners_for(worker=worker, llm=llm_health_get()) + _budget_banners(request) + _suspension_banners(request)


def _budget_banners(request: HttpRequest) -> list[Banner]:
    """The current organization's LLM budget: a cap past its alert threshold, or reached."""
    from reasoningbank.ai.budget import budget_banners, budget_status

    membership = getattr(request, "membership", None)  # set by the dashboard's org_view
    if membership is None:
        return []
    try:
        return budget_banners(budget_status(membership.organization))
    except DatabaseError:  # a banner must never break a page
        logger.warning("status banner: the LLM budget could not be read", exc_info=True)
        return []


def _suspension_banners(request: HttpRequest) -> list[Banner]:
    """For the organization's owners and admins: a token or connected app suspended from writing
    (docs/security/memory-poisoning.md#write-limits)."""
    from accounts.selectors import write_suspension_banners

    try:
        return write_suspension_banners(getattr(request, "membership", None))  # set by the dashboard's org_view
    except DatabaseError:  # a banner must never break a page
        logger.warning("status banner: the write suspensions could not be read", exc_info=True)
        return []


def _system_page_visible(request: HttpRequest) -> bool:
    """Whether the nav and the banner link to the system page: org owners/admins and staff (the page
    refuses everyone else, so nobody is sent to a 403)."""
    from system.selectors_system import system_scope

    membership = getattr(request, "membership", None)  # set by the dashboard's org_view before rendering
    return system_scope(user=getattr(request, "user", None), membership=membership) is not None


def status_banners(request: HttpRequest) -> dict[str, Any]:
    return {
        "status_banners": SimpleLazyObject(lambda: _banners(request)),
        "system_page_visible": SimpleLazyObject(lambda: _system_page_visible(request)),
    }
