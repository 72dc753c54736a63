"""Reads of API tokens: the settings page's list, the one-statement lookup every request starts with,
and what ``GET /api/v1/me`` describes."""

from __future__ import annotations

import functools
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from accounts.access import Principal, access_filter
from accounts.joined_rows import model_columns, models_from_row
from accounts.models import ApiToken, Organization, Project


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


@functools.cache
def _token_sql() -> str:
    projects, teams = ApiToken.projects.field, ApiToken.teams.field
    return (
        f"SELECT {model_columns(ApiToken, 't')}, {model_columns(Organization, 'o')}, {model_columns(Project, 'p')}, "
        f"ARRAY(SELECT {projects.m2m_reverse_name()} FROM {projects.m2m_db_table()} "
        f"WHERE {projects.m2m_column_name()} = t.id), "
        f"ARRAY(SELECT {teams.m2m_reverse_name()} FROM {teams.m2m_db_table()} WHERE {teams.m2m_column_name()} = t.id) "
        f"FROM {ApiToken._meta.db_table} t JOIN {Organization._meta.db_table} o ON o.id = t.organization_id "
        # the token's project when it is its only one (what a single-project token's calls are about)
        f"LEFT JOIN {Project._meta.db_table} p ON p.organization_id = t.organization_id AND p.id = ("
        f"SELECT min({projects.m2m_reverse_name()}) FROM {projects.m2m_db_table()} "
        f"WHERE {projects.m2m_column_name()} = t.id HAVING count(*) = 1) "
        "WHERE t.digest = %s"
    )


def token_by_digest(digest: str) -> ApiToken | None:
    """The token with this digest, its organization, restriction (``project_id_list`` /
    ``team_id_list``) and, for a single-project token, that project (``only_project``) — in one
    statement without the ORM's query building: every API and MCP request starts here."""
    with connection.cursor() as cursor:
        cursor.execute(_token_sql(), [digest])
        row = cursor.fetchone()
    if row is None:
        return None
    loaded, start = models_from_row(row, (ApiToken, Organization, Project))
    token, organization, project = loaded
    assert isinstance(token, ApiToken) and isinstance(organization, Organization)
    token.organization = organization
    token.project_id_list, token.team_id_list = row[start], row[start + 1]  # type: ignore[attr-defined]
    if project is not None:
        project.organization = organization  # the token's, by the join: read on every record, never queried
    token.only_project = project  # type: ignore[attr-defined]
    return token
