"""Dashboard views of the review for injection (docs/security/memory-poisoning.md#injection-policy): an
admin clears a memory waiting for review for injection (from the review queue, where the list is shown:
``injection_review_context``); the policy itself is on Settings → Trust (``views_policy``). Thin:
selectors to read, services to write, render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from accounts.access import Principal
from accounts.models import SCOPE_ADMIN, Membership
from accounts.views_base import org_view
from memories.core.selectors import memory_get
from memories.trust.selectors_injection import injection_pending_list, memory_label
from memories.trust.services_injection import memory_injection_clear
from reasoningbank.errors import NotFound, ServiceError

ADMIN = Membership.ROLE_ADMIN
PENDING_SHOWN = 50
CLEARED_MESSAGE = "Cleared for injection: the hooks and memory_context may now inject it."


def injection_review_context(principal: Principal) -> dict[str, Any]:
    """What the review queue's "Waiting for review before injection" section shows: for an admin, the
    oldest pending memories (with their source labels) and how many there are; for anyone else, nothing."""
    if not principal.has_scope(SCOPE_ADMIN):
        return {"injection_review": False}
    pending = injection_pending_list(principal)
    shown = list(pending[:PENDING_SHOWN])
    return {
        "injection_review": True,
        "injection_pending": [(memory, memory_label(memory)) for memory in shown],
        "injection_pending_total": pending.count() if len(shown) == PENDING_SHOWN else len(shown),
    }


@org_view(min_role=ADMIN)
@require_POST
def memory_injection_clear_action(request: HttpRequest, memory_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    try:
        memory = memory_get(principal, memory_id)
    except NotFound:
        raise Http404("Not found.") from None
    try:
        memory = memory_injection_clear(principal=principal, memory=memory)
    except ServiceError as exc:
        message, error = exc.message, True
    else:
        message, error = CLEARED_MESSAGE, False
    if request.htmx:  # type: ignore[attr-defined]
        context = {"memory": memory, "message": message, "error": error}
        return render(request, "memories/trust/_review_injection.html#cleared", context, status=400 if error else 200)
    (messages.error if error else messages.success)(request, message)
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        target = reverse("consolidation-reviews")
    return HttpResponseRedirect(target + "#injection-review")
