"""Settings → Provisioning (SCIM): the SCIM base URL, the org's SCIM tokens, making one (its raw value
shown once) and revoking one. Owners and admins only: viewers and members get a 403, as on the other
admin-only settings pages."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts.access import access_get
from accounts.models import ScimToken
from accounts.scim.selectors import scim_tokens_of_org
from accounts.scim.services_tokens import scim_token_create, scim_token_revoke
from accounts.views_base import ADMIN, errors_of, org_view, settings_context
from reasoningbank.errors import ServiceError


def scim_base_url(request: HttpRequest) -> str:
    return request.build_absolute_uri(reverse("scim-service-provider-config")).rsplit("/", 1)[0]


def _page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    context = settings_context(
        request,
        "provisioning",
        tokens=scim_tokens_of_org(organization=principal.organization),
        base_url=scim_base_url(request),
        **extra,
    )
    response = render(request, "accounts/settings_scim.html", context, status=status)
    if "raw_token" in extra:
        response["Cache-Control"] = "no-store"  # the raw token is shown once and never cached
    return response


@org_view(min_role=ADMIN)
def settings_scim(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _page(request)
    principal = request.principal  # type: ignore[attr-defined]
    label = request.POST.get("label", "").strip()
    try:
        token, raw = scim_token_create(organization=principal.organization, label=label, actor=principal)
    except ServiceError as exc:
        return _page(request, status=400, errors=errors_of(exc), values={"label": label})
    return _page(request, created=token, raw_token=raw)


@require_POST
@org_view(min_role=ADMIN)
def scim_token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    token = access_get(ScimToken, principal, pk=token_id)
    scim_token_revoke(token=token, actor=principal)
    messages.success(request, f"SCIM token {token.prefix}… ({token.label}) was revoked.")
    return redirect("settings-scim")
