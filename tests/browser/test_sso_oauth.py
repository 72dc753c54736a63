"""An agent's OAuth sign-in (the MCP authorization flow, docs/oauth.md) for an organization that requires
single sign-on goes through the organization's identity provider (oidc-provider on loopback), in Chromium:
a person who is not signed in is sent there from the sign-in page, and an owner signed in with the
break-glass password is sent there before the consent page; the code they get is exchanged for a token."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.test import Client
from django.utils import timezone

from accounts.models import Membership, SsoDomain
from accounts.sso.services import sso_oidc_configure, sso_policy_set, sso_roles_set
from tests.accounts.oauth.oauth_flow import REDIRECT_URI, Flow, register
from tests.browser.sso_helpers import loopback_only, oidc_idp_sign_in, password_sign_in
from tests.sso_idps import OidcIdp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def idp(cast: Any, live_server: Any, settings: Any) -> Iterator[OidcIdp]:
    settings.SSO_ALLOW_HTTP = True
    settings.SSO_ALLOW_PRIVATE_ADDRESSES = True
    client = {
        "client_id": "reasoningbank-acme",
        "client_secret": "idp-secret-for-tests",
        "redirect_uris": [f"{live_server.url}/accounts/oidc/org-acme/login/callback/"],
    }
    with OidcIdp(clients=[client], groups={"dana@acme.test": ["engineers"]}) as provider:
        yield provider


@pytest.fixture
def flow(cast: Any, idp: OidcIdp) -> Flow:
    """Acme requires SSO through the provider; an agent registered itself (set up before the browser opens)."""
    owner = cast.principal(cast.alice)
    sso_oidc_configure(
        principal=owner, server_url=idp.issuer, client_id="reasoningbank-acme", secret="idp-secret-for-tests"
    )
    sso_roles_set(principal=owner, default_role="viewer", role_claim="groups", role_map="engineers = member")
    SsoDomain.objects.create(organization=cast.org_a, domain="acme.test", token="t", verified_at=timezone.now())
    sso_policy_set(principal=owner, required=True)
    registered = register(Client())
    assert registered.status_code == 201, registered.content
    return Flow(client_id=registered.json()["client_id"], scopes=["memories:read", "memories:write"])


def _agent_callback(page: Any) -> dict[str, list[str]]:
    """The agent's loopback redirect URI answers, so the browser lands there; its query carries the code."""
    page.wait_for_url(re.compile(re.escape(REDIRECT_URI) + r"\?"))
    return parse_qs(urlsplit(page.url).query)


def _token(base: str, flow: Flow, code: str) -> dict[str, Any]:
    response = httpx.post(
        f"{base}/oauth/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": flow.redirect_uri,
            "client_id": flow.client_id,
            "code_verifier": flow.verifier,
        },
    )
    assert response.status_code == 200, response.text
    return response.json()


def _allow(page: Any) -> None:
    page.wait_for_selector("input[name=organization][value=acme]")
    page.check("input[name=organization][value=acme]")
    page.get_by_role("button", name="Allow").click()


def test_an_agents_sign_in_goes_through_the_identity_provider_and_joins_the_person(
    flow: Flow, idp: OidcIdp, live_server: Any, browser: Any
) -> None:
    base = live_server.url
    context = browser.new_context()
    loopback_only(context)
    context.route(f"{REDIRECT_URI}**", lambda route: route.fulfill(status=200, body="agent callback"))
    page = context.new_page()
    page.goto(base + flow.authorize_url())
    page.wait_for_url(re.compile(re.escape(f"{base}/accounts/login/")))
    # a password is no way in for the domain: the page points to single sign-on, keeping the request
    page.fill("input[name=login]", "dana@acme.test")
    page.fill("input[name=password]", "whatever-it-is")
    page.click("form button[type=submit]")
    assert "requires single sign-on" in page.locator("body").inner_text()
    page.get_by_role("link", name="Sign in with single sign-on").click()
    page.fill("#sso-email", "dana@acme.test")
    page.get_by_role("button", name="Continue").click()
    oidc_idp_sign_in(page, idp.issuer, "dana@acme.test")
    _allow(page)
    params = _agent_callback(page)
    assert params["state"] == [flow.state]
    tokens = _token(base, flow, params["code"][0])
    assert set(tokens["scope"].split()) == {"memories:read", "memories:write"}
    context.close()


def test_an_owner_signed_in_with_the_break_glass_password_is_sent_through_the_provider_first(
    flow: Flow, idp: OidcIdp, live_server: Any, browser: Any
) -> None:
    base = live_server.url
    context = browser.new_context()
    loopback_only(context)
    context.route(f"{REDIRECT_URI}**", lambda route: route.fulfill(status=200, body="agent callback"))
    page = context.new_page()
    password_sign_in(page, base, "alice@acme.test")
    page.wait_for_url(f"{base}/")
    page.goto(base + flow.authorize_url())
    # not the consent page: the start of single sign-on, her address filled in
    page.wait_for_url(re.compile(re.escape(f"{base}/sso/")))
    assert page.input_value("#sso-email") == "alice@acme.test"
    page.get_by_role("button", name="Continue").click()
    oidc_idp_sign_in(page, idp.issuer, "alice@acme.test")
    _allow(page)
    params = _agent_callback(page)
    assert "code" in params and params["state"] == [flow.state]
    assert "access_token" in _token(base, flow, params["code"][0])
    context.close()


def test_the_consent_of_an_sso_organization_sends_a_password_session_to_the_provider(
    flow: Flow, cast: Any, client: Any
) -> None:
    """Charlie (globex.test, no SSO) is also an admin of Acme: his password session may not grant an agent
    Acme's data; the decision sends him through Acme's provider, then back to the same request."""
    Membership.objects.create(organization=cast.org_a, user=cast.charlie, role=Membership.ROLE_ADMIN)
    client.force_login(cast.charlie)
    page = client.get(flow.authorize_url())
    assert page.status_code == 200
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields if name != "allow"}
    data.update(organization="acme", scopes=flow.scopes, allow="true")
    response = client.post("/oauth/authorize/", data=data)
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert target.path == "/sso/"
    again = urlsplit(parse_qs(target.query)["next"][0])
    assert again.path == "/oauth/authorize/"
    query = parse_qs(again.query)
    assert query["client_id"] == [flow.client_id] and query["state"] == [flow.state]
    assert query["code_challenge"] == [flow.challenge] and query["resource"] == flow.resources
