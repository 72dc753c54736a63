"""The dashboard's access layer: which org a signed-in user is acting in, and with which role.

``@org_view(min_role=...)`` wraps every dashboard view: it requires login, resolves the current
org from the session (the org switcher sets it) among the user's memberships, builds the
``Principal`` (``request.principal``) and refuses roles below ``min_role`` with a 403. Views then
load rows only through services/selectors that take that principal.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from accounts.access import principal_for_membership
from accounts.models import Membership
from accounts.selectors import memberships_of_user
from reasoningbank.request_context import request_principal_note

SESSION_ORG_KEY = "rb_org"


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
