"""Single sign-on through a real SAML 2.0 identity provider (pysaml2's IdP on loopback, signing with xmlsec1)
in Chromium: the owner configures it in the dashboard by its metadata URL, and people of the verified domain
join on their first sign-in with the role their group attribute maps to (an Entra-style claim URI)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import SsoDomain
from tests.browser.sso_helpers import loopback_page, member_role, password_sign_in
from tests.sso_idps import SamlIdp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GROUPS_CLAIM = "http://schemas.microsoft.com/ws/2008/06/identity/claims/groups"


@pytest.fixture
def idp(cast: Any, live_server: Any, settings: Any, tmp_path: Path) -> Iterator[SamlIdp]:
    settings.SSO_ALLOW_HTTP = True
    settings.SSO_ALLOW_PRIVATE_ADDRESSES = True
    SsoDomain.objects.create(organization=cast.org_a, domain="acme.test", token="t", verified_at=timezone.now())
    groups = {"fay@acme.test": ["Engineering"], "gil@acme.test": ["Contractors"]}
    with SamlIdp(
        sp_metadata_url=f"{live_server.url}/accounts/saml/acme/metadata/",
        groups=groups,
        group_attribute=GROUPS_CLAIM,
        workdir=tmp_path,
    ) as provider:
        yield provider


def _sso_sign_in(page: Any, base: str, email: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_role("link", name="Sign in with single sign-on").click()
    page.fill("#sso-email", email)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_selector("text=Test IdP")
    page.fill("input[name=login]", email)
    page.get_by_role("button", name="Sign in").click()  # the IdP's page posts the signed response to our ACS
    page.wait_for_url(f"{base}/")


def test_people_of_the_domain_sign_in_through_the_saml_idp_and_join_with_their_groups_role(
    idp: SamlIdp, live_server: Any, browser: Any, shoot: Any
) -> None:
    base = live_server.url
    page = loopback_page(browser)
    password_sign_in(page, base, "alice@acme.test")
    page.wait_for_url(f"{base}/")
    page.goto(f"{base}/settings/sso/")
    assert page.locator("[data-endpoint=saml-acs]").inner_text() == f"{base}/accounts/saml/acme/acs/"
    page.fill("#sso-metadata-url", idp.metadata_url)
    page.fill("#sso-entity-id", idp.entity_id)
    page.get_by_role("button", name="Save SAML identity provider").click()
    page.wait_for_selector("text=The SAML identity provider was saved.")
    page.select_option("#sso-default-role", "viewer")
    page.fill("#sso-role-claim", GROUPS_CLAIM)
    page.fill("#sso-role-map", "Engineering = member")
    page.get_by_role("button", name="Save roles").click()
    page.wait_for_selector("text=Roles were saved.")
    shoot("sso-settings-saml")
    page.context.close()

    for person, role in (("fay@acme.test", "member"), ("gil@acme.test", "viewer")):
        page = loopback_page(browser)
        _sso_sign_in(page, base, person)
        shown = member_role(page, base, person)
        assert role in shown, shown
        page.context.close()


def test_an_address_outside_the_verified_domains_is_refused_by_the_saml_sign_in(
    idp: SamlIdp, cast: Any, live_server: Any, browser: Any
) -> None:
    from accounts.sso.services import sso_saml_configure

    sso_saml_configure(principal=cast.principal(cast.alice), metadata_url=idp.metadata_url, entity_id=idp.entity_id)
    base = live_server.url
    page = loopback_page(browser)
    page.goto(f"{base}/sso/")
    page.fill("#sso-email", "fay@acme.test")
    page.get_by_role("button", name="Continue").click()
    page.wait_for_selector("text=Test IdP")
    page.fill("input[name=login]", "mallory@elsewhere.test")  # the IdP vouches for someone of another domain
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("text=Single sign-on refused")
    assert "mallory@elsewhere.test is not one of them" in page.locator("body").inner_text()
    page.context.close()
