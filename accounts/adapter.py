"""allauth adapter: login throttling per account with backoff that cannot lock the owner out.

allauth's own per-account limit ("5 failures per 5 minutes per email") refuses even the right
password once anyone has typed five wrong ones, so anyone could lock out a known email. Here the
per-account layer makes only the addresses that are failing on an attacked account wait
(``accounts/throttling.py``); allauth keeps its per-address limits (``ACCOUNT_RATE_LIMITS``).
"""

from __future__ import annotations

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter
from django import forms
from django.contrib.auth.base_user import AbstractBaseUser
from django.http import HttpRequest

from accounts import throttling
from accounts.sso.selectors import sso_password_refusal


class AccountAdapter(DefaultAccountAdapter):
    def get_client_ip(self, request: HttpRequest) -> str:
        """allauth's per-address rate limits count the same address as every other limit: the
        connection's client (``REMOTE_ADDR``, forwarded only behind ``TRUSTED_PROXIES``), never
        allauth's own reading of ``X-Forwarded-For``."""
        return throttling.request_client_address(request)

    def _throttle_keys(self, request: HttpRequest, credentials: dict[str, Any]) -> tuple[str, str]:
        login = credentials.get("email") or credentials.get("username") or ""
        return throttling.login_account_key(str(login)), throttling.request_client_address(request)

    def pre_authenticate(self, request: HttpRequest, **credentials: Any) -> None:
        super().pre_authenticate(request, **credentials)  # allauth's per-address limits
        # an address of a domain whose organization requires single sign-on signs in there (its owners
        # keep this password path: the break-glass, docs/identity.md#single-sign-on)
        organization = sso_password_refusal(email=str(credentials.get("email") or ""))
        if organization is not None:
            raise forms.ValidationError(
                f"{organization.name} requires single sign-on for this address: use “Sign in with single "
                "sign-on” below.",
                code="sso_required",
            )
        account, address = self._throttle_keys(request, credentials)
        wait = throttling.login_wait(account=account, address=address)
        if wait > 0:
            minutes = max(1, round(wait / 60))
            raise forms.ValidationError(
                "Too many failed sign-in attempts for this account from your network. Try again in "
                f"{minutes} minute{'s' if minutes != 1 else ''}, or reset your password.",
                code="too_many_login_attempts",
            )

    def authenticate(self, request: HttpRequest, **credentials: Any) -> AbstractBaseUser | None:
        user = super().authenticate(request, **credentials)
        if user is not None:
            account, address = self._throttle_keys(request, credentials)
            throttling.login_success_record(account=account, address=address)
        return user

    def authentication_failed(self, request: HttpRequest, **credentials: Any) -> None:
        super().authentication_failed(request, **credentials)
        account, address = self._throttle_keys(request, credentials)
        throttling.login_failure_record(account=account, address=address)
