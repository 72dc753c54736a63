"""The dashboard's quarantine actions (docs/security/memory-poisoning.md#quarantine): an admin approves or
deletes a memory or a summary the instruction-smell detector held, from the review queue's page
(``consolidation.review.views``, which lists them with ``selectors_quarantine.quarantine_context``).

Admins only (a member's or viewer's POST is a 403 and changes nothing). Rows come only through the
selectors taking ``request.principal``, so another organization's memory is a 404. An htmx request is
answered with the decided card, a plain one with a redirect and a flash message; a service error is a
message with status 400 (409 when it was decided meanwhile), never a 500.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from accounts.models import Membership
from accounts.views_base import org_view
from memories.trust.selectors_quarantine import quarantined_get, summary_held_get
from memories.trust.services_quarantine import (
    quarantine_approve,
    quarantine_delete,
    summary_held_approve,
    summary_held_delete,
)
from reasoningbank.errors import NotFound, ServiceError

ADMIN = Membership.ROLE_ADMIN


def _decide(request: HttpRequest, anchor: str, act: Callable[[], str]) -> HttpResponse:
    try:
        message, error, status = act(), False, 200
    except NotFound:
        raise Http404("Not found.") from None
    except ServiceError as exc:
        message, error, status = exc.message, True, exc.status if exc.status in (403, 409) else 400
    if request.htmx:  # type: ignore[attr-defined]
        context = {"anchor": anchor, "message": message, "error": error}
        return render(request, "memories/_quarantine.html#decided", context, status=status)
    (messages.error if error else messages.success)(request, message)
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        target = reverse("consolidation-reviews")
    return HttpResponseRedirect(target)


@org_view(min_role=ADMIN)
@require_POST
def quarantine_approve_action(request: HttpRequest, memory_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]

    def act() -> str:
        memory = quarantine_approve(principal=principal, memory=quarantined_get(principal, memory_id))
        return f"Approved: “{memory.title}” is active, and the detector will not hold the same text again."

    return _decide(request, f"quarantine-{memory_id}", act)


@org_view(min_role=ADMIN)
@require_POST
def quarantine_delete_action(request: HttpRequest, memory_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]

    def act() -> str:
        memory = quarantined_get(principal, memory_id)
        quarantine_delete(principal=principal, memory=memory)
        return f"Deleted “{memory.title}”."

    return _decide(request, f"quarantine-{memory_id}", act)


@org_view(min_role=ADMIN)
@require_POST
def summary_held_approve_action(request: HttpRequest, summary_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]

    def act() -> str:
        summary_held_approve(principal=principal, summary=summary_held_get(principal, summary_id))
        return "Approved: the summary is served with its memory again."

    return _decide(request, f"held-{summary_id}", act)


@org_view(min_role=ADMIN)
@require_POST
def summary_held_delete_action(request: HttpRequest, summary_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]

    def act() -> str:
        summary_held_delete(principal=principal, summary=summary_held_get(principal, summary_id))
        return "Deleted the summary; a later consolidation run may summarise the cluster again."

    return _decide(request, f"held-{summary_id}", act)
