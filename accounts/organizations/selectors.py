"""Reads of organizations, memberships and users."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from accounts.access import Principal, reachable_projects
from accounts.models import Membership, Organization, Project
from accounts.plans.catalogue import PLANS
from reasoningbank.repositories import repository_normalise


def memberships_of_user(*, user: Any) -> QuerySet[Membership]:
    """The orgs ``user`` may act in: a deactivated membership opens nothing (the dashboard, the org
    switcher and the OAuth consent page all read this), docs/identity.md#provisioning-and-departure."""
    return (
        Membership.objects.filter(user=user, deactivated_at__isnull=True)
        .select_related("organization")
        .order_by("organization__slug")
    )


def organizations_with_feature(feature: str) -> QuerySet[Organization]:
    """Every organization whose plan has ``feature`` (accounts/plans/catalogue.py), oldest first: what a
    scheduled job that is gated by plan walks through."""
    plans = [name for name, plan in PLANS.items() if feature in plan.features]
    return Organization.objects.filter(plan__in=plans).order_by("id")


def project_by_repository(principal: Principal, repository: str) -> Project | None:
    """The project the principal reaches that is tied to ``repository`` (any spelling of its remote:
    docs/code-memory.md#projects-by-repository), or None."""
    normalised = repository_normalise(repository) if isinstance(repository, str) else ""
    if not normalised:
        return None
    return reachable_projects(principal).filter(repository=normalised).first()


def user_password_link(*, user: Any) -> str:
    """A one-time link on SITE_URL where ``user`` sets a password: allauth's password-reset link,
    made here instead of mailed (the token holds the current password's hash, so it works once, and
    for PASSWORD_RESET_TIMEOUT seconds)."""
    from allauth.account.forms import default_token_generator
    from allauth.account.utils import user_pk_to_url_str
    from django.conf import settings
    from django.urls import reverse

    path = reverse(
        "account_reset_password_from_key",
        kwargs={"uidb36": user_pk_to_url_str(user), "key": default_token_generator.make_token(user)},
    )
    return settings.SITE_URL.rstrip("/") + path
