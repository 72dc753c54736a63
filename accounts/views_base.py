"""The base of every dashboard page (as ``api_base`` is of every REST view): which org a signed-in user
is acting in, with which role, and the frame of the settings pages.

``@org_view(min_role=...)`` wraps every dashboard view: it requires login, resolves the current
org from the session (the org switcher sets it) among the user's memberships, builds the
``Principal`` (``request.principal``) and refuses roles below ``min_role`` with a 403. Views then
load rows only through services/selectors that take that principal. ``settings_context`` is the
frame every settings page renders in (its sections, the role's rights): the other apps' settings pages
(trust, webhooks) use it too.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from accounts.access import principal_for_membership
from accounts.mfa.selectors import mfa_enrolment_required
from accounts.models import Membership
from accounts.organizations.selectors import memberships_of_user
from reasoningbank.errors import ServiceError
from reasoningbank.request_context import request_principal_note

SESSION_ORG_KEY = "rb_org"
MFA_ENROL_MESSAGE = (
    "Your organization requires two-factor sign-in: add an authenticator app or a passkey below to "
    "continue to the dashboard."
)


def current_membership(request: HttpRequest) -> Membership | None:
    memberships = list(memberships_of_user(user=request.user))
    if not memberships:
        return None
    wanted = request.session.get(SESSION_ORG_KEY)
    for membership in memberships:
        if membership.organization.slug == wanted:
            return membership
    return memberships[0]


def org_view(
    min_role: str = Membership.ROLE_VIEWER,
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if mfa_enrolment_required(request.user):
                # an organization of theirs requires a second factor and they have none: enrolment first
                # (allauth's pages are no org_view, so they stay reachable)
                messages.warning(request, MFA_ENROL_MESSAGE)
                return redirect("mfa_index")
            membership = current_membership(request)
            if membership is None:
                return render(request, "accounts/no_org.html", status=403)
            if not membership.has_role(min_role):
                raise PermissionDenied(f"this page needs the {min_role} role or above")
            request.membership = membership  # type: ignore[attr-defined]
            request_principal_note(org=membership.organization.slug)  # the log lines of this page name the org
            request.principal = principal_for_membership(membership)  # type: ignore[attr-defined]
            request.memberships = memberships_of_user(user=request.user)  # type: ignore[attr-defined]
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


ADMIN = Membership.ROLE_ADMIN
OWNER = Membership.ROLE_OWNER

SECTIONS = [
    ("members", "Members & roles", "/settings/"),
    ("teams", "Teams", "/settings/teams/"),
    ("projects", "Projects", "/settings/projects/"),
    ("tokens", "API tokens", "/settings/tokens/"),
    ("apps", "Connected apps", "/settings/connected-apps/"),
    ("trust", "Trust", "/settings/trust/"),
    ("webhooks", "Webhooks", "/settings/webhooks/"),
    ("provisioning", "Provisioning (SCIM)", "/settings/provisioning/"),
    ("usage", "LLM spend", "/settings/usage/"),
    ("plan", "Plan & limits", "/settings/plan/"),
    ("sso", "Single sign-on", "/settings/sso/"),
    ("audit", "Audit log", "/settings/audit/"),
    ("mfa", "Two-factor", "/settings/mfa/"),
    # every member's own second factors (allauth.mfa's pages, not an org setting)
    ("my-mfa", "Your two-factor", "/accounts/2fa/"),
]
ADMIN_SECTIONS = {"webhooks", "audit", "mfa", "provisioning", "sso"}


def require_role(request: HttpRequest, role: str) -> None:
    """A change on a page that everyone may read needs ``role``: a lower role is a 403."""
    if not request.membership.has_role(role):  # type: ignore[attr-defined]
        raise PermissionDenied(f"this change needs the {role} role or above")


def settings_context(request: HttpRequest, section: str, **extra: Any) -> dict[str, Any]:
    membership: Membership = request.membership  # type: ignore[attr-defined]
    return {
        "nav": "settings",
        "section": section,
        # admin-only sections (webhooks) are not offered to the roles that would get a 403 there
        "sections": [s for s in SECTIONS if s[0] not in ADMIN_SECTIONS or membership.has_role(ADMIN)],
        "org": membership.organization,
        "can_admin": membership.has_role(ADMIN),
        "is_owner": membership.has_role(OWNER),
        "errors": {},
        "values": {},
        **extra,
    }


def errors_of(exc: ServiceError) -> dict[str, str]:
    """A service's refusal as the form's errors: under its field, or the form's."""
    return {exc.field or "form": exc.message}
