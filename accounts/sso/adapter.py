"""allauth's socialaccount adapter for per-organization providers: an organization's identity provider signs
in addresses of the domains that organization verified, and nobody else. Such an address is taken as
verified (the provider vouches for its own domain), signs in to the account that already holds it, and
may sign up (just-in-time membership follows, ``accounts/receivers.py``)."""

from __future__ import annotations

from typing import Any

from allauth.account.utils import user_email
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialLogin
from django.http import HttpRequest
from django.shortcuts import render

from accounts.models import Organization
from accounts.sso.outbound import guarded_session
from accounts.sso.rules import email_domain
from accounts.sso.selectors import sso_connection_for_app, sso_domain_verified_by
from accounts.sso.services import sso_sign_in_admit


def _organization_of(app: Any) -> Organization | None:
    if app is None or not getattr(app, "pk", None):
        return None
    connection = sso_connection_for_app(social_app_id=app.pk)
    return connection.organization if connection is not None else None


def _addresses(sociallogin: SocialLogin) -> list[str]:
    emails = [address.email for address in sociallogin.email_addresses if address.email]
    own = user_email(sociallogin.user) if sociallogin.user is not None else ""
    return emails or ([own] if own else [])


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def get_requests_session(self) -> Any:
        """allauth's requests to the provider (discovery, token, userinfo, keys) through the address guard."""
        from allauth.socialaccount import app_settings

        return guarded_session(timeout=float(app_settings.REQUESTS_TIMEOUT))

    def is_email_verified(self, provider: Any, email: str) -> bool:
        organization = _organization_of(provider.app)
        return organization is not None and sso_domain_verified_by(organization=organization, email=email)

    def can_authenticate_by_email(self, login: SocialLogin, email: str) -> bool:
        return self.is_email_verified(login.provider, email)

    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        organization = _organization_of(sociallogin.provider.app)
        return organization is not None and any(
            sso_domain_verified_by(organization=organization, email=email) for email in _addresses(sociallogin)
        )

    def pre_social_login(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        """Refused, with a page saying why: a provider that is no organization's, an address outside the
        organization's verified domains (an IdP may know people of other companies: guests, contractors), or
        a person in no mapped group of an organization that admits its mapped groups only (a member refused
        so is deactivated: ``sso_sign_in_admit``)."""
        app = sociallogin.provider.app
        organization = _organization_of(app)
        addresses = _addresses(sociallogin)
        refusal = None
        if organization is not None and any(
            sso_domain_verified_by(organization=organization, email=email) for email in addresses
        ):
            refusal = sso_sign_in_admit(
                user=sociallogin.user, social_app_id=app.pk, claims=sociallogin.account.extra_data
            )
            if refusal is None:
                return
        context = {
            "organization": organization,
            "address": addresses[0] if addresses else "",
            "domain": email_domain(addresses[0]) if addresses else "",
            "refusal": refusal,
        }
        raise ImmediateHttpResponse(render(request, "accounts/sso_refused.html", context, status=403))
