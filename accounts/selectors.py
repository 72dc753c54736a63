"""Reads for tenancy."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from accounts.access import Principal, access_filter
from accounts.models import ApiToken, Membership, Organization


def memberships_of_user(*, user: Any) -> QuerySet[Membership]:
    return Membership.objects.filter(user=user).select_related("organization").order_by("organization__slug")


def tokens_of_org(*, organization: Organization) -> QuerySet[ApiToken]:
    return (
        access_filter(ApiToken, organization)
        .select_related("created_by")
        .prefetch_related("projects", "teams")
        .order_by("-created_at")
    )


def principal_describe(principal: Principal) -> dict[str, Any]:
    """What ``GET /api/v1/me`` returns: enough for an agent to check its configuration."""
    from accounts.access import reachable_projects

    token = principal.token
    return {
        "organization": {
            "slug": principal.organization.slug,
            "name": principal.organization.name,
            "plan": principal.organization.plan,
        },
        "token": None
        if token is None
        else {
            "prefix": token.prefix,
            "label": token.label,
            "expires_at": token.expires_at,
            "restricted": principal.is_restricted,
        },
        "scopes": sorted(principal.scopes),
        "projects": [
            {"slug": p.slug, "name": p.name, "team": p.team.slug if p.team else None}
            for p in reachable_projects(principal)
        ],
    }
