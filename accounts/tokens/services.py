"""Writes of API tokens: create (the raw value exists only then), revoke, and the authentication of a
raw token (``token_authenticate``; the bearer check for both kinds of token is ``accounts.tokens.authentication``)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.access import Principal, scopes_validate
from accounts.audit import audit_record
from accounts.models import DEFAULT_TOKEN_SCOPES, TOKEN_DISPLAY_CHARS, ApiToken, Organization, Project, Team
from accounts.tokens.selectors import token_by_digest
from reasoningbank.errors import InvalidInput

TOKEN_PREFIX = "rb_"


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@transaction.atomic
def token_create(
    *,
    organization: Organization,
    label: str,
    scopes: Iterable[str] | None = None,
    projects: Sequence[Project] = (),
    teams: Sequence[Team] = (),
    expires_at: datetime | None = None,
    created_by: Any = None,
    actor: Principal | None = None,
) -> tuple[ApiToken, str]:
    """Create a token and return it with its raw value — the only time the raw value exists."""
    label = (label or "").strip()
    if not label or len(label) > 100:
        raise InvalidInput("label is required (1-100 characters)", field="label")
    scope_list = scopes_validate(DEFAULT_TOKEN_SCOPES if scopes is None else scopes)
    restriction: list[Project | Team] = [*projects, *teams]
    for item in restriction:
        if item.organization_id != organization.id:
            raise InvalidInput("token restrictions must be projects/teams of this organization", field="projects")
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("expires_at must be in the future", field="expires_at")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)  # 32 random bytes → 43 url-safe characters
    token = ApiToken.objects.create(
        organization=organization,
        label=label,
        prefix=raw[:TOKEN_DISPLAY_CHARS],
        digest=token_digest(raw),
        scopes=scope_list,
        created_by=created_by,
        expires_at=expires_at,
    )
    # the restriction rows carry the token's org: PostgreSQL refuses one of another org (reasoningbank/sharding.py)
    if projects:
        token.projects.set(projects, through_defaults={"organization": organization})
    if teams:
        token.teams.set(teams, through_defaults={"organization": organization})
    audit_record(
        organization=organization, actor=actor, verb="token.create", target=token,
        data={"label": label, "scopes": scope_list, "projects": [p.slug for p in projects],
              "teams": [t.slug for t in teams]},
    )
    return token, raw


@transaction.atomic
def token_revoke(*, token: ApiToken, actor: Principal | None) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(organization=token.organization, actor=actor, verb="token.revoke", target=token,
                     data={"label": token.label})
    return token


def tokens_revoke_created_by(*, organization: Organization, user: Any) -> int:
    """Revoke every live token ``user`` created in ``organization`` (a departure: the person saw their raw
    values); how many. Not audited one by one: the caller's audit row counts them."""
    return ApiToken.objects.filter(organization=organization, created_by=user, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )


def token_authenticate(raw: str) -> ApiToken | None:
    """The active token for ``raw``, or None. Touches ``last_used_at`` at most every few minutes."""
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token = token_by_digest(token_digest(raw))
    now = timezone.now()
    if token is None or not token.is_active(now):
        return None
    interval = timedelta(seconds=settings.TOKEN_LAST_USED_INTERVAL_SECONDS)
    if token.last_used_at is None or now - token.last_used_at >= interval:
        # conditional update: concurrent requests write once per interval, not once each
        ApiToken.objects.filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - interval), pk=token.pk
        ).update(last_used_at=now)
        token.last_used_at = now
    return token
