"""Dashboard views of the injection policy (docs/security/memory-poisoning.md#injection-policy): an admin
clears a memory waiting for review for injection (from the review queue, where the list is shown:
``injection_review_context``), and Settings → Trust shows the organization's policy, which admins and
owners change. Thin: selectors to read, services to write, render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from accounts.access import Principal
from accounts.decorators import org_view
from accounts.models import SCOPE_ADMIN, Membership, Organization
from accounts.views import settings_context
from memories.core.selectors import memory_get
from memories.trust.selectors_injection import injection_pending_list, memory_label
from memories.trust.services_injection import injection_policy_set, memory_injection_clear
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


@org_view()
def settings_trust(request: HttpRequest) -> HttpResponse:
    """Settings → Trust: the injection policy (everyone reads it; admins and owners change it)."""
    principal = request.principal  # type: ignore[attr-defined]
    status, errors = 200, {}
    if request.method == "POST":
        try:
            injection_policy_set(principal=principal, policy=request.POST.get("injection_policy", ""))
        except ServiceError as exc:
            status, errors = exc.status, {exc.field or "form": exc.message}
        else:
            messages.success(request, "Injection policy saved.")
            return HttpResponseRedirect(reverse("settings-trust"))
    context = settings_context(
        request,
        "trust",
        errors=errors,
        injection_policy=principal.organization.injection_policy,
        injection_choices=Organization.INJECTION_CHOICES,
        injection_pending_total=injection_pending_list(principal).count() if principal.has_scope(SCOPE_ADMIN) else None,
    )
    return render(request, "memories/trust/settings_trust.html", context, status=status)
