"""Reads of write suspensions (docs/security/memory-poisoning.md#write-limits): which tokens and
connected apps of an organization may not write, for its admins' REST list and dashboard banner."""

from __future__ import annotations

from typing import Any

from accounts.access import access_filter
from accounts.models import ApiToken, Membership, OAuthConnection, Organization
from reasoningbank.health import Banner

BANNER_NAMES_SHOWN = 3


def write_suspensions(organization: Organization) -> list[ApiToken | OAuthConnection]:
    """The organization's live (not revoked) tokens and connected apps whose writes are suspended,
    most recent suspension first."""
    tokens = access_filter(ApiToken, organization).filter(write_suspended_at__isnull=False, revoked_at__isnull=True)
    apps = (
        access_filter(OAuthConnection, organization)
        .filter(write_suspended_at__isnull=False, revoked_at__isnull=True)
        .select_related("application", "user")
    )
    rows: list[Any] = [*tokens, *apps]
    return sorted(rows, key=lambda row: row.write_suspended_at, reverse=True)


def _name(row: ApiToken | OAuthConnection) -> str:
    if isinstance(row, ApiToken):
        return f"{row.prefix}… ({row.label})"
    return str(row.application.name or row.application.client_id)[:60]


def write_suspension_banners(membership: Membership | None) -> list[Banner]:
    """The dashboard's banner for the organization's owners and admins (who can lift it) while a token
    or connected app is suspended from writing; nothing for other roles. Two small indexed queries."""
    if membership is None or not membership.has_role(Membership.ROLE_ADMIN):
        return []
    suspended = write_suspensions(membership.organization)
    if not suspended:
        return []
    tokens = [row for row in suspended if isinstance(row, ApiToken)]
    apps = [row for row in suspended if not isinstance(row, ApiToken)]
    names = ", ".join(_name(row) for row in suspended[:BANNER_NAMES_SHOWN])
    more = len(suspended) - BANNER_NAMES_SHOWN
    what = " and ".join(
        part
        for part in (
            f"{len(tokens)} API token{'s' * (len(tokens) != 1)}" if tokens else "",
            f"{len(apps)} connected app{'s' * (len(apps) != 1)}" if apps else "",
        )
        if part
    )
    message = (
        f"{what} may not write after a burst of writes the instruction-smell detector flagged: {names}"
        + (f" and {more} more" if more > 0 else "")
        + "."
    )
    page = "/settings/tokens/" if tokens else "/settings/connected-apps/"
    return [
        Banner(
            "suspension",
            message,
            "Review what they wrote in the review queue, then lift the suspension or revoke the token.",
            link=page,
            link_text="Settings → API tokens" if tokens else "Settings → Connected apps",
        )
    ]
