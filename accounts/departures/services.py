"""The one-step departure (docs/identity.md#provisioning-and-departure): ``member_deactivate`` ends
what a person can do in one organization, in one transaction and one audit row, and
``member_reactivate`` lets them back in. Called by the members page, by SCIM (``active: false``,
``DELETE``) and by single sign-on when the identity provider refuses a known member.

What is revoked where:

* **This organization**: the API tokens the person created here (they saw the raw values), their
  connected apps here with every access token, refresh token and unexchanged authorization code, and
  the membership itself is marked inactive, so every dashboard request, the org switcher and the OAuth
  consent page refuse the org from the next request on.
* **Their dashboard sessions** (Django sessions, which belong to the person, not to an organization)
  are ended only when no other active membership is left. A person who still belongs to another
  organization keeps their sign-in there: one organization's admin cannot sign them out of another's,
  and the deactivated organization is already unreachable because every page resolves the membership
  from the database on each request (``accounts.views_base.org_view``).
* **Nothing they wrote is deleted**: memories, sessions and audit rows keep pointing at the user and
  the (inactive) membership, so their attribution stays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.models import Session
from django.db import transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.audit import audit_record
from accounts.models import Membership, Organization
from accounts.oauth.services import oauth_connections_revoke_for_member
from accounts.tokens.services import tokens_revoke_created_by
from reasoningbank.errors import Forbidden, InvalidInput, LimitExceeded, NotFound

REASON_MAX = 300


@dataclass(frozen=True)
class Departure:
    """What one deactivation did; the counts are the audit row's data."""

    membership: Membership
    api_tokens_revoked: int = 0
    oauth_apps_revoked: int = 0
    oauth_access_tokens_revoked: int = 0
    sessions_ended: int = 0
    already_inactive: bool = False

    def counts(self) -> dict[str, int]:
        return {
            "api_tokens_revoked": self.api_tokens_revoked,
            "oauth_apps_revoked": self.oauth_apps_revoked,
            "oauth_access_tokens_revoked": self.oauth_access_tokens_revoked,
            "sessions_ended": self.sessions_ended,
        }


def _membership_locked(organization: Organization, user: Any) -> Membership:
    membership = (
        Membership.objects.select_for_update()
        .select_related("user", "organization")
        .filter(organization=organization, user=user)
        .first()
    )
    if membership is None:
        raise NotFound("this person is not a member of the organization")
    return membership


def _deactivation_check(membership: Membership, actor: Principal | None) -> None:
    """The rules every caller shares: never the last active owner; an owner only by an owner (or the
    identity provider, which speaks for the organization); never oneself from the dashboard."""
    if membership.role == Membership.ROLE_OWNER:
        others = Membership.objects.filter(
            organization_id=membership.organization_id, role=Membership.ROLE_OWNER, deactivated_at__isnull=True
        ).exclude(pk=membership.pk)
        if not others.exists():
            raise Forbidden("the last owner of an organization cannot be deactivated: make another member owner first")
        if actor is not None and actor.role is not None and actor.role != Membership.ROLE_OWNER:
            raise Forbidden("only an owner can deactivate an owner")
    if actor is not None and actor.user is not None and actor.user.pk == membership.user_id and actor.role:
        raise Forbidden("you cannot deactivate yourself: ask another admin")


def user_sessions_end(*, user: Any) -> int:
    """End every dashboard session of ``user``; how many. Django's database sessions keep the user id
    only inside their encoded data, so the live ones are read and decoded: a scan of the signed-in
    sessions, paid only on a departure."""
    ended = [
        session.session_key
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator(chunk_size=500)
        if session.get_decoded().get(SESSION_KEY) == str(user.pk)
    ]
    if ended:
        Session.objects.filter(session_key__in=ended).delete()
    return len(ended)


@transaction.atomic
def member_deactivate(*, organization: Organization, user: Any, actor: Principal | None, reason: str) -> Departure:
    """Deactivate ``user`` in ``organization`` (see the module's text for what that revokes). Calling it
    again revokes whatever is left and writes no second audit row."""
    reason = (reason or "").strip()
    if len(reason) > REASON_MAX:
        raise InvalidInput(f"the reason is at most {REASON_MAX} characters", field="reason")
    membership = _membership_locked(organization, user)
    already = not membership.is_active
    if not already:
        _deactivation_check(membership, actor)
    tokens = tokens_revoke_created_by(organization=organization, user=user)
    apps, access_tokens = oauth_connections_revoke_for_member(organization=organization, user=user)
    if not already:
        now = timezone.now()
        membership.deactivated_at = now
        membership.deactivated_reason = reason
        membership.updated_at = now
        membership.save(update_fields=["deactivated_at", "deactivated_reason", "updated_at"])
    still_member_elsewhere = Membership.objects.filter(user=user, deactivated_at__isnull=True).exists()
    sessions = 0 if still_member_elsewhere else user_sessions_end(user=user)
    departure = Departure(
        membership=membership,
        api_tokens_revoked=tokens,
        oauth_apps_revoked=apps,
        oauth_access_tokens_revoked=access_tokens,
        sessions_ended=sessions,
        already_inactive=already,
    )
    if not already:
        audit_record(
            organization=organization, actor=actor, verb="member.deactivate", target=membership,
            data={"user": user.email, "reason": reason, **departure.counts()},
        )  # fmt: skip
    return departure


@transaction.atomic
def member_reactivate(*, organization: Organization, user: Any, actor: Principal | None) -> Membership:
    """Let a deactivated member back in with the role they had. What the departure revoked stays
    revoked: they sign in again, create new tokens and connect their apps again."""
    membership = _membership_locked(organization, user)
    if membership.is_active:
        return membership
    # a deactivated member holds no seat of the plan's member limit (membership_add counts active ones),
    # so coming back takes one
    limit = organization.limit("members")
    active = Membership.objects.filter(organization=organization, deactivated_at__isnull=True).count()
    if limit is not None and active >= limit:
        raise LimitExceeded(f"the {organization.plan} plan allows {limit} active members", field="email")
    previous_reason = membership.deactivated_reason
    membership.deactivated_at = None
    membership.deactivated_reason = ""
    membership.updated_at = timezone.now()
    membership.save(update_fields=["deactivated_at", "deactivated_reason", "updated_at"])
    audit_record(
        organization=organization, actor=actor, verb="member.reactivate", target=membership,
        data={"user": user.email, "deactivated_for": previous_reason},
    )  # fmt: skip
    return membership
