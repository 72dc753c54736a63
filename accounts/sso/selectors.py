"""Reads of single sign-on: an organization's provider and domains (through the access layer), and, at
sign-in, which organization owns an address's domain."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.access import Principal, access_filter
from accounts.models import Membership, Organization, SsoConnection, SsoDomain
from accounts.sso.rules import email_domain


def sso_connection_of_org(*, tenant: Organization | Principal) -> SsoConnection | None:
    return access_filter(SsoConnection, tenant).select_related("social_app").first()


def sso_domains_of_org(*, tenant: Organization | Principal) -> QuerySet[SsoDomain]:
    return access_filter(SsoDomain, tenant).order_by("domain")


def sso_connection_for_app(*, social_app_id: int) -> SsoConnection | None:
    """The organization's connection behind an allauth SocialApp (a sign-in names the app, not the org)."""
    return (
        SsoConnection.objects.select_related("organization", "social_app").filter(social_app_id=social_app_id).first()
    )


def sso_domain_owner(*, email: str) -> Organization | None:
    """The organization that verified the domain of ``email``, if one did."""
    domain = email_domain(email)
    if not domain:
        return None
    row = SsoDomain.objects.select_related("organization").filter(domain=domain, verified_at__isnull=False).first()
    return row.organization if row is not None else None


def sso_domain_verified_by(*, organization: Organization, email: str) -> bool:
    domain = email_domain(email)
    return (
        bool(domain)
        and SsoDomain.objects.filter(organization=organization, domain=domain, verified_at__isnull=False).exists()
    )


def sso_password_refusal(*, email: str) -> Organization | None:
    """The organization whose policy refuses a password sign-in for ``email``: the one that verified its
    domain and requires SSO, unless the person is an owner there (the break-glass path)."""
    organization = sso_domain_owner(email=email)
    if organization is None or not organization.sso_required:
        return None
    is_owner = Membership.objects.filter(
        organization=organization, role=Membership.ROLE_OWNER, user__email__iexact=email.strip()
    ).exists()
    return None if is_owner else organization
