"""Writes and the bearer check for OAuth connected apps (docs/oauth.md#connected-apps-and-revocation).

* ``oauth_connection_grant`` — the consent page's decision: the org (one of the user's), the
  scopes (never above the user's role, never ``admin``) and an optional project/team restriction.
* ``oauth_connection_revoke`` — Settings → Connected apps: the connection and every token of it
  stop at once (the next request is a 401).
* ``oauth_tokens_clear`` — the scheduled cleanup (``rb:oauth-cleartokens``): expired codes and
  tokens, and refresh tokens past their lifetime, are deleted (django-oauth-toolkit's
  ``cleartokens``).
* ``oauth_authenticate`` — an OAuth access token → the same ``Principal`` an API token gives
  (org, scopes, restriction), for the resource the request is for; a token bound to another
  resource, expired, revoked, or whose user left the org, is refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from oauth2_provider.models import (
    clear_expired,
    get_access_token_model,
    get_grant_model,
    get_refresh_token_model,
    revoke_access_token,
)

from accounts.access import ROLE_SCOPES, Principal
from accounts.audit import audit_record
from accounts.models import Membership, OAuthConnection, Project, Team
from accounts.oauth.protocol import ACCESS_TOKEN_PREFIX, OAUTH_SCOPES, canonical_resource
from accounts.oauth.selectors import oauth_access_by_checksum
from reasoningbank.errors import Forbidden, InvalidInput


def oauth_scopes_for_role(role: str) -> list[str]:
    """The app scopes a member with this role may grant."""
    return [scope for scope in OAUTH_SCOPES if scope in ROLE_SCOPES[role]]


@transaction.atomic
def oauth_connection_grant(
    *,
    membership: Membership,
    application: Any,
    scopes: Iterable[str],
    projects: Sequence[Project] = (),
    teams: Sequence[Team] = (),
    actor: Principal | None,
) -> OAuthConnection:
    """Record (or update) what ``membership.user`` lets ``application`` do in ``membership``'s org."""
    organization = membership.organization
    wanted = sorted({scope.strip() for scope in scopes if scope and scope.strip()})
    if not wanted:
        raise InvalidInput("choose at least one scope", field="scopes")
    unknown = [scope for scope in wanted if scope not in OAUTH_SCOPES]
    if unknown:
        raise InvalidInput(f"unknown scope(s): {', '.join(unknown)}", field="scopes")
    allowed = set(oauth_scopes_for_role(membership.role))
    above = [scope for scope in wanted if scope not in allowed]
    if above:
        raise Forbidden(f"your role ({membership.role}) does not allow {', '.join(above)}")
    restriction: list[Project | Team] = [*projects, *teams]
    for item in restriction:
        if item.organization_id != organization.id:
            raise InvalidInput("choose projects and teams of this organization", field="projects")
    now = timezone.now()
    connection = (
        OAuthConnection.objects.select_for_update()
        .filter(user=membership.user, application=application, organization=organization, revoked_at__isnull=True)
        .first()
    )
    if connection is None:
        connection = OAuthConnection.objects.create(
            organization=organization,
            user=membership.user,
            application=application,
            scopes=wanted,
            created_at=now,
            updated_at=now,
        )
    else:
        connection.scopes = wanted
        connection.updated_at = now
        connection.save(update_fields=["scopes", "updated_at"])
    # the rows carry the org: PostgreSQL refuses one of another org (accounts migration 0005)
    connection.projects.set(projects, through_defaults={"organization": organization})
    connection.teams.set(teams, through_defaults={"organization": organization})
    audit_record(
        organization=organization,
        actor=actor,
        verb="oauth.grant",
        target=connection,
        data={
            "client": application.name or application.client_id,
            "client_id": application.client_id,
            "scopes": wanted,
            "projects": [p.slug for p in projects],
            "teams": [t.slug for t in teams],
        },
    )
    return connection


@transaction.atomic
def oauth_connection_revoke(*, connection: OAuthConnection, actor: Principal | None) -> OAuthConnection:
    """Revoke a connected app: the connection, and every access and refresh token issued under it."""
    locked = OAuthConnection.objects.select_for_update().get(pk=connection.pk)
    if locked.revoked_at is not None:
        return locked
    locked.revoked_at = timezone.now()
    locked.save(update_fields=["revoked_at"])
    AccessToken = get_access_token_model()
    for access_token in AccessToken.objects.filter(rb_link__connection=locked):
        revoke_access_token(access_token)  # deletes it and revokes its refresh token
    audit_record(
        organization=locked.organization,
        actor=actor,
        verb="oauth.revoke",
        target=locked,
        data={
            "client": locked.application.name or locked.application.client_id,
            "client_id": locked.application.client_id,
        },
    )
    return locked


def oauth_connections_revoke_for_member(*, organization: Any, user: Any) -> tuple[int, int]:
    """Revoke every connected app ``user`` has in ``organization`` (a departure), with their access
    tokens, refresh tokens and unexchanged authorization codes: (apps, access tokens) revoked. Not
    audited one by one: the caller's audit row counts them."""
    connections = list(
        OAuthConnection.objects.select_for_update().filter(
            organization=organization, user=user, revoked_at__isnull=True
        )
    )
    if not connections:
        return 0, 0
    OAuthConnection.objects.filter(pk__in=[c.pk for c in connections]).update(revoked_at=timezone.now())
    access_tokens = list(get_access_token_model().objects.filter(rb_link__connection__in=connections))
    for access_token in access_tokens:
        revoke_access_token(access_token)  # deletes it and revokes its refresh token
    get_grant_model().objects.filter(rb_link__connection__in=connections).delete()
    return len(connections), len(access_tokens)


def oauth_tokens_clear() -> dict[str, int]:
    """Delete what can never be used again — expired authorization codes, expired access tokens
    without a refresh token, refresh tokens idle past ``OAUTH_REFRESH_TOKEN_LIFETIME`` (revoked ones
    once they would have expired: reuse detection needs them until then) — with the library's own
    ``cleartokens``, in its batches. Without it every sign-in and every hourly refresh leaves rows
    behind for good. Returns how many of each went (approximately, under concurrent sign-ins)."""
    models = {
        "grants": get_grant_model(),
        "access_tokens": get_access_token_model(),
        "refresh_tokens": get_refresh_token_model(),
    }
    before = {name: model.objects.count() for name, model in models.items()}
    clear_expired()
    return {name: max(0, before[name] - model.objects.count()) for name, model in models.items()}


# --- the bearer check -----------------------------------------------------------------------------


@dataclass(frozen=True)
class OAuthRefused:
    """A recognised OAuth access token that may not be used here (401 ``invalid_token``)."""

    description: str


def oauth_authenticate(raw: str, *, resource: str) -> Principal | OAuthRefused | None:
    """The principal of an OAuth access token for a request to ``resource`` (one of
    ``accounts.oauth.protocol.known_resources()``); ``OAuthRefused`` with the reason; None for no such token."""
    if not raw or not raw.startswith(ACCESS_TOKEN_PREFIX) or len(raw) > 200:
        return None
    found = oauth_access_by_checksum(hashlib.sha256(raw.encode("utf-8")).hexdigest())
    if found is None:
        return None  # unknown, or not an access token of a connected app (e.g. a DCR registration token)
    access_token, connection = found.access_token, found.connection
    if connection.revoked_at is not None:
        return OAuthRefused("This app's access was revoked.")
    if access_token.is_expired():
        return OAuthRefused("The access token has expired.")
    bound = {canonical_resource(value) for value in (access_token.resource or [])}
    if canonical_resource(resource) not in bound:
        return OAuthRefused("The access token was issued for another resource.")
    if found.role is None:  # left, or deactivated (accounts/departures/services.py)
        return OAuthRefused("The user who connected this app is no longer a member of the organization.")
    scopes = frozenset(access_token.scope.split()) & frozenset(connection.scopes) & ROLE_SCOPES[found.role]
    project_ids, team_ids = found.project_ids, found.team_ids
    restricted = bool(project_ids or team_ids)
    _touch(connection)
    return Principal(
        organization=connection.organization,
        scopes=frozenset(scopes - {"admin"}),
        user=connection.user,
        project_ids=project_ids if restricted else None,
        team_ids=team_ids if restricted else None,
        only_project=found.only_project,
        oauth_connection=connection,
    )


def _touch(connection: OAuthConnection) -> None:
    """``last_used_at``, written at most every ``TOKEN_LAST_USED_INTERVAL_SECONDS`` (as API tokens)."""
    now = timezone.now()
    interval = timedelta(seconds=settings.TOKEN_LAST_USED_INTERVAL_SECONDS)
    if connection.last_used_at is None or now - connection.last_used_at >= interval:
        OAuthConnection.objects.filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - interval), pk=connection.pk
        ).update(last_used_at=now)
        connection.last_used_at = now
