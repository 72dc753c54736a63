"""SCIM tokens: the bearer token an identity provider provisions one organization with. Made and
revoked by the org's owners and admins on Settings → Provisioning; the raw value exists only when made
(shown once), only its SHA-256 digest is kept, as for API tokens."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.access import Principal
from accounts.audit import audit_record
from accounts.models import SCOPE_ADMIN, TOKEN_DISPLAY_CHARS, Organization, ScimToken
from reasoningbank.errors import Forbidden, InvalidInput

SCIM_TOKEN_PREFIX = "rbscim_"
# "rbscim_" + 7 characters: more of it than an API token's, whose prefix is shorter
SCIM_DISPLAY_CHARS = TOKEN_DISPLAY_CHARS + 4


def scim_token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _admin_check(actor: Principal | None) -> None:
    if actor is not None and not actor.has_scope(SCOPE_ADMIN):
        raise Forbidden("SCIM tokens are made and revoked by owners and admins")


@transaction.atomic
def scim_token_create(*, organization: Organization, label: str, actor: Principal | None) -> tuple[ScimToken, str]:
    """A new SCIM token and its raw value — the only time the raw value exists."""
    _admin_check(actor)
    label = (label or "").strip()
    if not label or len(label) > 100:
        raise InvalidInput("label is required (1-100 characters), e.g. the identity provider's name", field="label")
    raw = SCIM_TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ScimToken.objects.create(
        organization=organization,
        label=label,
        prefix=raw[:SCIM_DISPLAY_CHARS],
        digest=scim_token_digest(raw),
        created_by=actor.user if actor is not None else None,
    )
    audit_record(organization=organization, actor=actor, verb="scim.token_create", target=token, data={"label": label})
    return token, raw


@transaction.atomic
def scim_token_revoke(*, token: ScimToken, actor: Principal | None) -> ScimToken:
    _admin_check(actor)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(
            organization=token.organization, actor=actor, verb="scim.token_revoke", target=token,
            data={"label": token.label},
        )  # fmt: skip
    return token


def scim_token_authenticate(raw: str) -> ScimToken | None:
    """The live SCIM token for ``raw`` (with its org), or None. Touches ``last_used_at`` at most every
    ``TOKEN_LAST_USED_INTERVAL_SECONDS``, as API tokens do."""
    if not raw or not raw.startswith(SCIM_TOKEN_PREFIX) or len(raw) > 200 or "\x00" in raw:
        return None
    token = (
        ScimToken.objects.select_related("organization")
        .filter(digest=scim_token_digest(raw), revoked_at__isnull=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    interval = timedelta(seconds=settings.TOKEN_LAST_USED_INTERVAL_SECONDS)
    if token.last_used_at is None or now - token.last_used_at >= interval:
        ScimToken.objects.filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - interval), pk=token.pk
        ).update(last_used_at=now)
        token.last_used_at = now
    return token


def scim_principal(token: ScimToken) -> Principal:
    """What a SCIM request acts as: the token's org, with the rights to manage its members, audited as
    the token (``scim:<prefix>``)."""
    return Principal(organization=token.organization, scopes=frozenset({SCOPE_ADMIN}), scim_token=token)
