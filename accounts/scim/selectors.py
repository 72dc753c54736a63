"""The reads SCIM makes: the token's organization's members and teams, found by id or listed with a
filter and a page. Every query is of the one organization the SCIM token belongs to: another org's
member or team is a 404 exactly like a missing one."""

from __future__ import annotations

from django.db.models import F, Q, QuerySet

from accounts.access import access_filter, access_get
from accounts.models import Membership, Organization, ScimToken, Team


def scim_users(*, organization: Organization, where: Q | None = None) -> QuerySet[Membership]:
    """Members of the org (deactivated ones too: ``active: false``), oldest first: a stable order for paging."""
    qs = access_filter(Membership, organization).select_related("user", "organization")
    return (qs.filter(where) if where is not None else qs).distinct().order_by("pk")


def scim_user(*, organization: Organization, membership_id: str) -> Membership:
    return access_get(Membership.objects.select_related("user", "organization"), organization, pk=membership_id)


def scim_groups(*, organization: Organization, where: Q | None = None) -> QuerySet[Team]:
    qs = access_filter(Team, organization)
    return (qs.filter(where) if where is not None else qs).distinct().order_by("pk")


def scim_group(*, organization: Organization, team_id: str) -> Team:
    return access_get(Team.objects.select_related("organization"), organization, pk=team_id)


def scim_group_members(*, team: Team) -> list[Membership]:
    return list(
        access_filter(Membership, team.organization)
        .filter(team_memberships__team=team)
        .select_related("user")
        .order_by("pk")
    )


def scim_groups_members(*, organization: Organization, teams: list[Team]) -> dict[int, list[Membership]]:
    """The members of a page of teams in one query (a list of groups must not read each team's apart)."""
    found: dict[int, list[Membership]] = {team.pk: [] for team in teams}
    rows = (
        access_filter(Membership, organization)
        .filter(team_memberships__team__in=teams)
        .annotate(listed_team=F("team_memberships__team_id"))
        .select_related("user")
        .order_by("pk")
    )
    for membership in rows:
        found[membership.listed_team].append(membership)
    return found


def scim_tokens_of_org(*, organization: Organization) -> QuerySet[ScimToken]:
    """Settings → Provisioning: the org's SCIM tokens, live ones first, newest first."""
    return access_filter(ScimToken, organization).order_by(F("revoked_at").desc(nulls_first=True), "-created_at")
