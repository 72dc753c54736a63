"""Passkeys (WebAuthn) in a real Chromium with a virtual authenticator (the DevTools protocol's
``WebAuthn`` domain): a member of an organization that requires MFA is sent to enrolment after signing
in, adds a passkey there, reaches the dashboard, and signs in again with the passkey as the second
factor — all under the Content-Security-Policy, with allauth's WebAuthn script served from our static
files and no violation reported (docs/identity.md#multi-factor-authentication)."""

from __future__ import annotations

from typing import Any

import pytest
from allauth.mfa.models import Authenticator

from tests.browser.test_content_security_policy import COLLECT_VIOLATIONS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"


@pytest.fixture
def acme_requires_mfa(cast: Any) -> Any:
    """Set up before the browser opens (ORM work under Playwright's loop leaves a connection behind)."""
    cast.org_a.mfa_required = True
    cast.org_a.save()
    return cast


def _authenticator(page: Any) -> str:
    """A platform authenticator that holds passkeys, verifies the user and is touched at once."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    added = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    page.cdp = cdp  # kept for the credential count below
    return str(added["authenticatorId"])


def _password(page: Any, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")


def test_a_member_enrols_a_passkey_when_required_and_signs_in_with_it(acme_requires_mfa, live_server, page, shoot):
    base = live_server.url
    assert base.startswith("http://localhost:")  # WebAuthn needs a secure context: https or localhost
    violations: list[str] = []
    page.add_init_script(COLLECT_VIOLATIONS)
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    authenticator = _authenticator(page)

    # the password alone lands on enrolment, and the dashboard sends back there
    _password(page, base)
    page.wait_for_url(f"{base}/accounts/2fa/")
    assert "requires two-factor sign-in" in page.inner_text("body")
    shoot("mfa-enrol")
    page.goto(f"{base}/memories/")
    assert page.url == f"{base}/accounts/2fa/"

    # adding a passkey asks for the password again, then the browser makes the credential
    page.goto(f"{base}/accounts/2fa/webauthn/add/")
    page.wait_for_url("**/accounts/reauthenticate/**")
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")  # not the top bar's Sign out
    page.wait_for_url(f"{base}/accounts/2fa/webauthn/add/")
    page.fill("input[name=name]", "Laptop passkey")
    page.click("#mfa_webauthn_add")
    page.wait_for_url(lambda url: "/webauthn/add/" not in url)
    shoot("mfa-passkey-added")
    credentials = page.cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
    assert len(credentials) == 1
    key = Authenticator.objects.get(user=acme_requires_mfa.alice, type=Authenticator.Type.WEBAUTHN)
    assert key.wrap().name == "Laptop passkey"
    assert page.goto(f"{base}/").status == 200  # enrolled: the dashboard opens

    # the authenticator app's enrolment draws its QR code as an SVG data URI, which the policy allows
    page.goto(f"{base}/accounts/2fa/totp/activate/")
    qr = page.locator("main img").first
    qr.wait_for()
    assert page.evaluate("(img) => img.complete && img.naturalWidth > 0", qr.element_handle())
    shoot("mfa-totp-activate")

    # signing out and in again: the password, then the passkey as the second factor
    page.click("form.logout button[type=submit]")
    page.wait_for_url("**/accounts/login/**")
    _password(page, base)
    page.wait_for_url(f"{base}/accounts/2fa/authenticate/")
    shoot("mfa-authenticate")
    page.click("#mfa_webauthn_authenticate")
    page.wait_for_url(f"{base}/")
    assert page.locator("#org-select").count() == 1  # the dashboard, signed in
    key.refresh_from_db()
    assert key.last_used_at is not None

    # the enrolment pages fit a phone (the layout test leaves allauth's pages out)
    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("/accounts/2fa/", "/accounts/2fa/webauthn/", "/accounts/reauthenticate/"):
        assert page.goto(f"{base}{path}").status == 200, path
        assert page.url == f"{base}{path}", path
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
    shoot("mfa-passkeys-phone")

    assert [*page.evaluate("window.cspViolations"), *violations] == []
