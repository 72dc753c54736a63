"""Writes of multi-factor state: the organization's "require MFA" policy, and the audit rows of every
enrolment, removal and new set of recovery codes (allauth makes the changes; its signals bring them here)."""

from __future__ import annotations

from typing import Any

from allauth.mfa.models import Authenticator
from django.db import transaction

from accounts.access import Principal, principal_for_membership
from accounts.audit import audit_record
from accounts.mfa.selectors import mfa_enrolled
from accounts.models import Membership, Organization
from accounts.organizations.selectors import memberships_of_user
from reasoningbank.errors import Forbidden, InvalidInput


def mfa_policy_set(*, organization: Organization, required: bool, actor: Principal) -> Organization:
    """Turn the organization's "require MFA" policy on or off (owners and admins), audited
    ``mfa.policy_change``. Members without a second factor are sent to enrolment from their next page."""
    if not actor.has_role(Membership.ROLE_ADMIN):
        raise Forbidden("changing the MFA policy needs the admin role or above", field="mfa_required")
    if required and not mfa_enrolled(actor.user):
        # the policy would send its own author to enrolment at their next page: enrol first, then require
        raise InvalidInput(
            "add a second factor to your own account first (Settings → Two-factor → Your second factors), "
            "then require it of everyone",
            field="mfa_required",
        )
    with transaction.atomic():
        locked = Organization.objects.select_for_update().get(pk=organization.pk)
        previous = locked.mfa_required
        if previous != required:
            locked.mfa_required = required
            locked.save(update_fields=["mfa_required"])
            audit_record(
                organization=locked,
                actor=actor,
                verb="mfa.policy_change",
                target=locked,
                data={"from": previous, "to": required},
            )
    organization.mfa_required = required
    return organization


# allauth's signal → our verb; recovery codes made (first with a factor, or again) are their own verb
_VERBS = {"added": "mfa.enroll", "removed": "mfa.remove", "reset": "mfa.recovery_codes_generate"}


def mfa_change_audit(*, user: Any, change: str, authenticator: Authenticator) -> None:
    """One audit row in each organization of ``user`` for a change to their second factors: whichever
    organization requires MFA, its admins see when a member enrolled or dropped a method."""
    verb = _VERBS[change]
    if change == "added" and authenticator.type == Authenticator.Type.RECOVERY_CODES:
        verb = "mfa.recovery_codes_generate"
    for membership in memberships_of_user(user=user):
        audit_record(
            organization=membership.organization,
            actor=principal_for_membership(membership),
            verb=verb,
            target=authenticator if authenticator.pk is not None else None,
            # a removed authenticator has no id any more (allauth signals after the delete)
            data={"method": authenticator.type, **({"authenticator_id": authenticator.pk} if authenticator.pk else {})},
        )
