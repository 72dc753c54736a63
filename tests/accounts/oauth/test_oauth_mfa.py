"""The consent screen of agents' OAuth sign-in under the "require MFA" policy: an organization that
requires it can be chosen only by a person who has a second factor and passed it in this session;
otherwise the page names the fix and nothing is granted (docs/identity.md#multi-factor-authentication)."""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from accounts.models import OAuthConnection
from tests.accounts.mfa.mfa_helpers import password_step, totp_code, totp_enrol
from tests.accounts.oauth.oauth_flow import Flow, dcr_client
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def totp_tolerance(settings: Any) -> None:
    settings.MFA_TOTP_TOLERANCE = 1  # as in tests/accounts/mfa/conftest.py


@pytest.fixture
def acme_requires_mfa(cast: Any) -> None:
    cast.org_a.mfa_required = True
    cast.org_a.save()


@pytest.fixture
def flow() -> Flow:
    return Flow(client_id=dcr_client(Client()))


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


def decision(page: Any, org: str) -> dict[str, Any]:
    """The POST a browser would send from ``page`` choosing ``org`` (its hidden fields, Allow)."""
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields if name != "allow"}
    return {**data, "organization": org, "scopes": ["memories:read"], "allow": "true"}


def test_a_member_without_a_second_factor_is_shown_the_fix_and_nothing_is_granted(cast, acme_requires_mfa, flow):
    client = Client()
    client.force_login(cast.alice)
    page = client.get(flow.authorize_url())
    assert page.status_code == 403
    body = text(page)
    assert "Two-factor sign-in required" in body
    assert "Acme requires two-factor sign-in, and your account has no second factor yet" in body
    assert 'href="/accounts/2fa/"' in body
    forged = client.post(flow.authorize_url(), decision(page, "acme"))
    assert forged.status_code == 403
    assert not OAuthConnection.objects.exists()


def test_a_password_only_session_must_confirm_the_second_factor_first(cast, acme_requires_mfa, flow):
    secret = totp_enrol(cast.alice)
    client = Client()
    client.force_login(cast.alice)  # a session without a second factor (it predates the enrolment)
    url = flow.authorize_url()
    page = client.get(url)
    assert page.status_code == 403
    assert 'data-mfa-problem="not_passed"' in page.content.decode()
    link = next(
        part.split('"')[0]
        for part in page.content.decode().split('href="')[1:]
        if part.startswith("/accounts/2fa/reauthenticate/")
    )
    target = parse_qs(urlsplit(html.unescape(link)).query)["next"][0]
    assert target == url
    assert client.post(url, decision(page, "acme")).status_code == 403
    assert not OAuthConnection.objects.exists()

    confirmed = client.post(html.unescape(link), {"code": totp_code(secret, step=1)})
    assert confirmed.status_code == 302 and confirmed["Location"] == url
    code = flow.code_from(client.post(url, decision(client.get(url), "acme")))
    assert code
    assert OAuthConnection.objects.get().organization == cast.org_a


@pytest.mark.cross_tenant("oauth2_provider:authorize")
def test_a_member_who_signed_in_with_their_second_factor_connects_the_agent(cast, acme_requires_mfa, flow):
    secret = totp_enrol(cast.alice)
    client = Client()
    password_step(client, cast.alice.email)
    client.post("/accounts/2fa/authenticate/", {"code": totp_code(secret, step=1)})
    tokens = flow.tokens(client, org="acme")
    assert tokens["access_token"]
    connection = OAuthConnection.objects.get()
    assert connection.organization == cast.org_a
    # another org's slug is still refused as before, policy or not
    refused = client.post(flow.authorize_url(), decision(client.get(flow.authorize_url()), "globex"))
    assert refused.status_code == 302 and "access_denied" in refused["Location"]
    assert OAuthConnection.objects.count() == 1


def test_an_org_without_the_policy_stays_open_beside_one_that_requires_it(cast, acme_requires_mfa, flow):
    MembershipFactory(user=cast.alice, organization=cast.org_b)
    client = Client()
    client.force_login(cast.alice)
    page = client.get(flow.authorize_url())
    assert page.status_code == 200
    body = page.content.decode()
    assert 'value="acme"  disabled' in body or 'value="acme" disabled' in body
    assert 'data-mfa-problem="not_enrolled"' in body
    assert page.context["chosen_org"] == "globex"
    assert client.post(flow.authorize_url(), decision(page, "acme")).status_code == 403
    assert not OAuthConnection.objects.exists()
    flow.code_from(client.post(flow.authorize_url(), decision(page, "globex")))
    assert OAuthConnection.objects.get().organization == cast.org_b
