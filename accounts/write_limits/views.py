"""Dashboard actions on write suspensions (docs/security/memory-poisoning.md#write-limits): an owner or
admin lifts a token's (Settings → API tokens) or a connected app's (Settings → Connected apps)
suspension. Another org's id is a 404; a viewer's or member's POST a 403 that changes nothing."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from accounts.access import access_get
from accounts.models import ApiToken, Membership, OAuthConnection
from accounts.views_base import org_view
from accounts.write_limits.services import oauth_connection_write_unsuspend, token_write_unsuspend
from reasoningbank.errors import ServiceError


@require_POST
@org_view(min_role=Membership.ROLE_ADMIN)
def token_unsuspend_view(request: HttpRequest, token_id: int) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    token = access_get(ApiToken, principal, pk=token_id)
    try:
        token_write_unsuspend(token=token, actor=principal)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Token {token.prefix}… ({token.label}) may write again.")
    return redirect("settings-tokens")


@require_POST
@org_view(min_role=Membership.ROLE_ADMIN)
def connected_app_unsuspend_view(request: HttpRequest, connection_id: int) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    connection = access_get(OAuthConnection.objects.select_related("application"), principal, pk=connection_id)
    try:
        oauth_connection_write_unsuspend(connection=connection, actor=principal)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        name = connection.application.name or connection.application.client_id
        messages.success(request, f"{name} may write again.")
    return redirect("settings-connected-apps")
