"""Template context for every dashboard page: product-level problems (a dead worker, no LLM).

Lazy: the health read happens only when a template shows ``status_banners`` (the base layout
does; htmx partials do not), and it is cached for a few seconds (``reasoningbank.selectors``).
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
    from reasoningbank.selectors import worker_health_cached

    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return []  # an operator's message, not for the sign-in page
    try:
        worker = worker_health_cached()
    except DatabaseError:  # a banner must never break a page (the database itself is /healthz's job)
        logger.warning("status banner: the worker heartbeat could not be read", exc_info=True)
        return []
    return banners_for(worker=worker, llm=llm_health_get())


def status_banners(request: HttpRequest) -> dict[str, Any]:
    return {"status_banners": SimpleLazyObject(lambda: _banners(request))}
