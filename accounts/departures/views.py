"""Settings → Members: deactivating a member (a confirm step, then the one-step departure) and letting
them back in. Admins and owners only; only an owner deactivates an owner, and the last owner never."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.access import access_get
from accounts.departures.services import member_deactivate, member_reactivate
from accounts.models import Membership
from accounts.views_base import ADMIN, OWNER, org_view, require_role, settings_context
from reasoningbank.errors import ServiceError


@org_view(min_role=ADMIN)
def member_deactivate_view(request: HttpRequest, membership_id: int) -> HttpResponse:
    """GET: what deactivating this member will revoke, and a confirm button; POST: do it."""
    principal = request.principal  # type: ignore[attr-defined]
    membership = access_get(Membership.objects.select_related("user", "organization"), principal, pk=membership_id)
    if membership.role == OWNER:
        require_role(request, OWNER)  # an admin cannot deactivate an owner
    if request.method != "POST":
        context = settings_context(request, "members", target=membership)
        return render(request, "accounts/member_deactivate_confirm.html", context)
    reason = request.POST.get("reason", "")
    try:
        departure = member_deactivate(
            organization=principal.organization, user=membership.user, actor=principal, reason=reason
        )
    except ServiceError as exc:
        context = settings_context(request, "members", target=membership, errors={"form": exc.message})
        return render(request, "accounts/member_deactivate_confirm.html", context, status=400)
    counts = departure.counts()
    messages.success(
        request,
        f"{membership.user.email} was deactivated: {counts['api_tokens_revoked']} API token(s) and "
        f"{counts['oauth_apps_revoked']} connected app(s) revoked. What they wrote stays, attributed to them.",
    )
    return redirect("settings-members")


@require_POST
@org_view(min_role=ADMIN)
def member_reactivate_view(request: HttpRequest, membership_id: int) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    membership = access_get(Membership.objects.select_related("user", "organization"), principal, pk=membership_id)
    if membership.role == OWNER:
        require_role(request, OWNER)
    member_reactivate(organization=principal.organization, user=membership.user, actor=principal)
    messages.success(
        request, f"{membership.user.email} can sign in again; they create new tokens and reconnect their apps."
    )
    return redirect("settings-members")
