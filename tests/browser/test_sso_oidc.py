"""Single sign-on through a real OpenID Connect provider (oidc-provider on loopback) in Chromium: the owner
configures it and proves the domain in the dashboard, a new person of the domain joins on first sign-in with
the role their group maps to, and once SSO is required a password is refused while the owner's break-glass
still works."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.sso_helpers import loopback_page, member_role, oidc_idp_sign_in, password_sign_in
from tests.sso_idps import OidcIdp, TxtServer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dns_server(settings: Any) -> Iterator[TxtServer]:
    with TxtServer() as server:
        settings.SSO_DNS_NAMESERVERS = [server.address]
        settings.SSO_ALLOW_HTTP = True  # the provider listens on http://127.0.0.1
        settings.SSO_ALLOW_PRIVATE_ADDRESSES = True
        yield server


@pytest.fixture
def idp(cast: Any, live_server: Any, dns_server: TxtServer) -> Iterator[OidcIdp]:
    client = {
        "client_id": "reasoningbank-acme",
        "client_secret": "idp-secret-for-tests",
        "redirect_uris": [f"{live_server.url}/accounts/oidc/org-acme/login/callback/"],
    }
    groups = {"dana@acme.test": ["everyone", "rb-admins"], "erin@acme.test": ["everyone"]}
    with OidcIdp(clients=[client], groups=groups) as provider:
        yield provider


def _configure(page: Any, base: str, idp: OidcIdp, dns_server: TxtServer) -> None:
    """Alice (owner) sets the provider, the role mapping and the domain up, as an admin would."""
    password_sign_in(page, base, "alice@acme.test")
    page.wait_for_url(f"{base}/")
    page.goto(f"{base}/settings/sso/")
    page.fill("#sso-server-url", idp.issuer)
    page.fill("#sso-client-id", "reasoningbank-acme")
    page.fill("#sso-secret", "idp-secret-for-tests")
    page.get_by_role("button", name="Save OpenID Connect provider").click()
    page.wait_for_selector("text=The OpenID Connect provider was saved.")
    assert page.locator("[data-endpoint=oidc-redirect]").inner_text() == (
        f"{base}/accounts/oidc/org-acme/login/callback/"
    )
    page.select_option("#sso-default-role", "viewer")
    page.fill("#sso-role-claim", "groups")
    page.fill("#sso-role-map", "rb-admins = admin\nrb-engineers = member")
    page.get_by_role("button", name="Save roles").click()
    page.wait_for_selector("text=Roles were saved.")

    page.fill("#sso-domain", "acme.test")
    page.get_by_role("button", name="Add domain").click()
    row = page.locator("tr[data-domain='acme.test']")
    value = row.locator(".txt-value").inner_text()
    assert value.startswith("reasoningbank-domain-verification=")
    row.get_by_role("button", name="Verify").click()
    assert "no TXT record _reasoningbank-challenge.acme.test" in page.locator(".errorlist").inner_text()
    dns_server.records["_reasoningbank-challenge.acme.test"] = ["v=spf1 -all", value]
    page.locator("tr[data-domain='acme.test']").get_by_role("button", name="Verify").click()
    page.wait_for_selector("text=The domain is verified.")
    assert "verified" in page.locator("tr[data-domain='acme.test']").inner_text()


def test_a_new_person_of_the_verified_domain_joins_on_first_sign_in_with_their_groups_role(
    idp: OidcIdp, dns_server: TxtServer, live_server: Any, browser: Any, shoot: Any
) -> None:
    base = live_server.url
    page = loopback_page(browser)
    _configure(page, base, idp, dns_server)
    shoot("sso-settings-oidc")
    page.context.close()

    for person, role in (("dana@acme.test", "admin"), ("erin@acme.test", "viewer")):
        page = loopback_page(browser)
        page.goto(f"{base}/accounts/login/")
        page.get_by_role("link", name="Sign in with single sign-on").click()
        page.fill("#sso-email", person)
        page.get_by_role("button", name="Continue").click()
        oidc_idp_sign_in(page, idp.issuer, person)
        page.wait_for_url(f"{base}/")
        shown = member_role(page, base, person)
        assert role in shown and (role == "viewer" or "viewer" not in shown)
        page.context.close()


def test_when_sso_is_required_a_password_is_refused_but_the_owners_break_glass_works(
    idp: OidcIdp, dns_server: TxtServer, live_server: Any, browser: Any
) -> None:
    base = live_server.url
    page = loopback_page(browser)
    _configure(page, base, idp, dns_server)
    page.check("#sso-policy-form input[name=sso_required]")
    page.get_by_role("button", name="Save policy").click()
    page.wait_for_selector("text=Single sign-on is now required.")
    page.context.close()

    # bob (viewer, acme.test) may no longer use his password; the page shows him the way in
    page = loopback_page(browser)
    password_sign_in(page, base, "bob@acme.test")
    assert "Acme requires single sign-on for this address" in page.locator("body").inner_text()
    page.get_by_role("link", name="Sign in with single sign-on").click()
    page.fill("#sso-email", "bob@acme.test")
    page.get_by_role("button", name="Continue").click()
    oidc_idp_sign_in(page, idp.issuer, "bob@acme.test")
    page.wait_for_url(f"{base}/")
    # his group maps to no role: he keeps the one he had
    assert "viewer" in member_role(page, base, "bob@acme.test")
    page.context.close()

    # alice, an owner, keeps her password: the break-glass path
    page = loopback_page(browser)
    password_sign_in(page, base, "alice@acme.test")
    page.wait_for_url(f"{base}/")
    page.context.close()


def test_admitting_mapped_groups_only_refuses_a_member_in_none_and_ends_their_access(
    cast: Any, idp: OidcIdp, dns_server: TxtServer, live_server: Any, browser: Any, shoot: Any
) -> None:
    from accounts.models import ApiToken, Membership
    from accounts.services import token_create

    base = live_server.url
    page = loopback_page(browser)
    _configure(page, base, idp, dns_server)
    page.check("#sso-groups-required")
    page.get_by_role("button", name="Save roles").click()
    page.wait_for_selector("text=Roles were saved.")
    page.context.close()
    # bob (viewer) has an agent's token; his only group at the provider, "everyone", maps to no role
    token, _ = token_create(organization=cast.org_a, label="bob's laptop", created_by=cast.bob)

    page = loopback_page(browser)
    page.goto(f"{base}/sso/")
    page.fill("#sso-email", "bob@acme.test")
    page.get_by_role("button", name="Continue").click()
    oidc_idp_sign_in(page, idp.issuer, "bob@acme.test")
    page.wait_for_selector("text=Single sign-on refused")
    assert "lists you in none of them" in page.locator("body").inner_text()
    shoot("sso-refused-no-mapped-group")
    page.context.close()

    assert not Membership.objects.get(user__email="bob@acme.test").is_active
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
