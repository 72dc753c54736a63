"""Settings → Two-factor (owners and admins): the organization's "require MFA" policy and who among the
members enrolled which second factor, when. The enrolment pages themselves are allauth.mfa's, under
``/accounts/2fa/``, rendered in the dashboard's frame (``templates/mfa/``)."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.mfa.selectors import mfa_enrolled, mfa_enrolment_rows, mfa_members
from accounts.mfa.services import mfa_policy_set
from accounts.views_base import ADMIN, org_view, settings_context
from reasoningbank.errors import ServiceError

PAGE_SIZE = 25


@org_view(min_role=ADMIN)
def settings_mfa(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    page = Paginator(mfa_members(principal), PAGE_SIZE).get_page(request.GET.get("page"))
    rows = mfa_enrolment_rows(list(page.object_list))
    context = settings_context(request, "mfa", page=page, rows=rows, you_enrolled=mfa_enrolled(request.user))
    return render(request, "accounts/settings_mfa.html", context)


@org_view(min_role=ADMIN)
@require_POST
def settings_mfa_policy(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    required = request.POST.get("mfa_required") == "on"
    try:
        mfa_policy_set(organization=principal.organization, required=required, actor=principal)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            "Every member now needs a second factor: members without one are sent to enrol at their next page."
            if required
            else "A second factor is now up to each member.",
        )
    return redirect("settings-mfa")
