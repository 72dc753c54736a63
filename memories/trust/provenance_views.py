"""Dashboard: trusting an OAuth client from Settings → Connected apps (admins;
docs/security/memory-poisoning.md#trusted-oauth-clients). The page is the accounts app's; the action is here
because trusting a client clears its waiting memories."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.models import Membership
from accounts.views_base import org_view
from memories.trust.provenance_services import oauth_client_trust_set
from reasoningbank.errors import ServiceError


@require_POST
@org_view(min_role=Membership.ROLE_ADMIN)
def oauth_client_trust_action(request: HttpRequest) -> HttpResponse:
    trusted = request.POST.get("trusted") == "true"
    try:
        change = oauth_client_trust_set(
            principal=request.principal,  # type: ignore[attr-defined]
            client_id=request.POST.get("client_id", ""),
            trusted=trusted,
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect("settings-connected-apps")
    if change.trusted:
        cleared = change.memories_cleared
        messages.success(
            request,
            f"{change.client_id} is trusted: what its agents write is injected without a review"
            + (f"; {cleared} of its waiting memor{'y' if cleared == 1 else 'ies'} cleared." if cleared else "."),
        )
    else:
        messages.success(request, f"{change.client_id} is no longer trusted: its new memories wait for review.")
    return redirect("settings-connected-apps")
