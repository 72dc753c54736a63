"""Reads of multi-factor state: who must enrol, who has, and whether this session passed a second factor.

allauth keeps the authenticators (``allauth.mfa.models.Authenticator``, one row per method and user) and
a log of how the current session was authenticated; these selectors answer the policy's questions from
them. Every list of members goes through the access layer, so one organization never sees another's."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from allauth.account.internal.flows.login import get_authentication_records
from allauth.mfa.models import Authenticator
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.access import Principal, access_filter
from accounts.models import Membership, Organization

# the methods that are a second factor; recovery codes are only the way back in when one is lost
SECOND_FACTORS = (Authenticator.Type.TOTP, Authenticator.Type.WEBAUTHN)
METHOD_LABELS = {
    Authenticator.Type.TOTP: "Authenticator app",
    Authenticator.Type.WEBAUTHN: "Passkey / security key",
    Authenticator.Type.RECOVERY_CODES: "Recovery codes",
}


def mfa_enrolled(user: Any) -> bool:
    """Whether ``user`` has a second factor (an authenticator app or a passkey)."""
    return Authenticator.objects.filter(user=user, type__in=SECOND_FACTORS).exists()


def mfa_required_organizations(user: Any) -> QuerySet[Organization]:
    """The organizations of ``user`` that require a second factor of their members."""
    return Organization.objects.filter(memberships__user=user, mfa_required=True).order_by("slug").distinct()


def mfa_enrolment_required(user: Any) -> bool:
    """A member of an organization that requires MFA who has no second factor: they are sent to
    enrolment and may not use the dashboard until they have one. One such organization is enough,
    whichever is current: the second factor protects the person's account, which reaches every org."""
    return mfa_required_organizations(user).exists() and not mfa_enrolled(user)


def mfa_passed_in_session(request: HttpRequest) -> bool:
    """Whether the person signed in to this session (or confirmed it since) with a second factor:
    allauth logs every authentication of the session, and a passkey or authenticator code is an
    ``mfa`` entry (recovery codes too: they stand in for the lost factor)."""
    records = get_authentication_records(request, request.user)
    return any(record.get("method") == "mfa" for record in records)


def mfa_consent_problem(*, request: HttpRequest, organization: Organization) -> str:
    """Why an agent may not be connected to ``organization`` by this person in this session, or ""."""
    if not organization.mfa_required:
        return ""
    if not mfa_enrolled(request.user):
        return "not_enrolled"
    if not mfa_passed_in_session(request):
        return "not_passed"
    return ""


@dataclass
class MethodRow:
    label: str
    kind: str
    created_at: datetime
    last_used_at: datetime | None


@dataclass
class EnrolmentRow:
    membership: Membership
    methods: list[MethodRow] = field(default_factory=list)

    @property
    def enrolled(self) -> bool:
        return any(method.kind in SECOND_FACTORS for method in self.methods)


def mfa_members(principal: Principal) -> QuerySet[Membership]:
    """The members of the principal's organization, by email: what the enrolment page pages through."""
    return access_filter(Membership, principal).select_related("user").order_by("user__email", "pk")


def mfa_enrolment_rows(memberships: list[Membership]) -> list[EnrolmentRow]:
    """Each of these members (one page of ``mfa_members``) with the methods they enrolled and when."""
    by_user: dict[int, list[MethodRow]] = {}
    authenticators = Authenticator.objects.filter(user__in=[m.user_id for m in memberships]).order_by("created_at")
    for authenticator in authenticators:
        kind = Authenticator.Type(authenticator.type)
        by_user.setdefault(authenticator.user_id, []).append(
            MethodRow(METHOD_LABELS.get(kind, kind.label), kind, authenticator.created_at, authenticator.last_used_at)
        )
    return [EnrolmentRow(membership, by_user.get(membership.user_id, [])) for membership in memberships]
