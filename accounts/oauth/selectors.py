"""Reads of OAuth: the connected apps of an organization, the clients (not tenant data), and the
one-statement lookup of an access token every OAuth request starts with."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection as db_connection
from django.db.models import F, QuerySet

from accounts.access import access_filter
from accounts.joined_rows import model_columns, models_from_row
from accounts.models import Membership, OAuthConnection, OAuthTokenLink, Organization, Project


def oauth_connections_of_org(*, organization: Organization) -> QuerySet[OAuthConnection]:
    """Settings → Connected apps: the org's connected apps, live ones first, newest first."""
    return (
        access_filter(OAuthConnection, organization)
        .select_related("application", "user")
        .prefetch_related("projects", "teams")
        .order_by(F("revoked_at").desc(nulls_first=True), "-created_at")
    )


def oauth_application(client_id: str) -> Any:
    """The OAuth client (django-oauth-toolkit ``Application``) with this client id, or None. Clients
    are not tenant data: any org's member may connect any client."""
    from oauth2_provider.models import get_application_model

    if not client_id or "\x00" in client_id:
        return None
    return get_application_model().objects.filter(client_id=client_id).first()


@dataclass(frozen=True)
class OAuthAccess:
    """An access token of a connected app with what its principal is made of: the connection (its org,
    user and application loaded), the user's role in that org now (None once they left or were
    deactivated), the restriction, and the project of a single-project connection."""

    access_token: Any
    connection: OAuthConnection
    role: str | None
    project_ids: frozenset[int]
    team_ids: frozenset[int]
    only_project: Project | None


def _access_models() -> tuple[type[Any], ...]:
    from oauth2_provider.models import get_access_token_model, get_application_model

    return (get_access_token_model(), OAuthConnection, Organization, get_user_model(), get_application_model(), Project)


@functools.cache
def _access_sql() -> str:
    access, _, _, user, application, _ = _access_models()
    projects, teams = OAuthConnection.projects.field, OAuthConnection.teams.field
    project_ids = (
        f"SELECT {projects.m2m_reverse_name()} FROM {projects.m2m_db_table()} WHERE {projects.m2m_column_name()} = c.id"
    )
    return (
        f"SELECT {model_columns(access, 'a')}, {model_columns(OAuthConnection, 'c')}, "
        f"{model_columns(Organization, 'o')}, {model_columns(user, 'u')}, {model_columns(application, 'app')}, "
        f"{model_columns(Project, 'p')}, "
        f"(SELECT m.role FROM {Membership._meta.db_table} m WHERE m.user_id = c.user_id "
        "AND m.organization_id = c.organization_id AND m.deactivated_at IS NULL ORDER BY m.id LIMIT 1), "
        f"ARRAY({project_ids}), "
        f"ARRAY(SELECT {teams.m2m_reverse_name()} FROM {teams.m2m_db_table()} WHERE {teams.m2m_column_name()} = c.id) "
        f"FROM {access._meta.db_table} a "
        f"JOIN {OAuthTokenLink._meta.db_table} l ON l.access_token_id = a.id "
        f"JOIN {OAuthConnection._meta.db_table} c ON c.id = l.connection_id "
        f"JOIN {Organization._meta.db_table} o ON o.id = c.organization_id "
        f"JOIN {user._meta.db_table} u ON u.id = c.user_id "
        f"JOIN {application._meta.db_table} app ON app.id = c.application_id "
        # the connection's project when it is its only one (what a single-project app's calls are about)
        f"LEFT JOIN {Project._meta.db_table} p ON p.organization_id = c.organization_id AND p.id = ("
        f"SELECT min(x) FROM ({project_ids}) AS restriction(x) HAVING count(*) = 1) "
        "WHERE a.token_checksum = %s"
    )


def oauth_access_by_checksum(checksum: str) -> OAuthAccess | None:
    """The access token with this checksum and what its principal needs (``OAuthAccess``), or None for no
    such token or one of no connected app — in one statement without the ORM's query building: every
    OAuth request starts here, and the ORM's five lookups cost it several milliseconds of CPU."""
    with db_connection.cursor() as cursor:
        cursor.execute(_access_sql(), [checksum])
        row = cursor.fetchone()
    if row is None:
        return None
    (access, connection, organization, user, application, project), start = models_from_row(row, _access_models())
    connection.organization, connection.user, connection.application = organization, user, application
    if project is not None:
        project.organization = organization  # the connection's, by the join
    role, project_ids, team_ids = row[start], frozenset(row[start + 1]), frozenset(row[start + 2])
    return OAuthAccess(access, connection, role, project_ids, team_ids, project if not team_ids else None)
