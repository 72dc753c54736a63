"""Settings → Two-factor: owners and admins set the organization's "require MFA" policy (audited) and see
who among the members enrolled which second factor, when, a page at a time; viewers are refused, and
another organization's members are never listed (docs/identity.md#multi-factor-authentication)."""

from __future__ import annotations

import html
from typing import Any

import pytest
from allauth.mfa.models import Authenticator
from django.test import Client

from accounts.mfa.views import PAGE_SIZE
from accounts.models import AuditEvent, Membership
from tests.accounts.mfa.mfa_helpers import totp_enrol
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


def table(response: Any) -> str:
    """The enrolment table only (the top bar names the signed-in user too)."""
    body = text(response)
    return body[body.index('id="enrolments"') :]


@pytest.mark.cross_tenant("settings-mfa")
def test_the_page_lists_this_orgs_members_with_their_methods_and_never_another_orgs(cast):
    totp_enrol(cast.alice)
    totp_enrol(cast.charlie)  # globex: enrolled, never shown to acme
    body = table(signed_in(cast.alice).get("/settings/mfa/"))
    assert "alice@acme.test" in body and "bob@acme.test" in body
    assert "charlie@globex.test" not in body
    assert "Authenticator app" in body and "Recovery codes" in body
    assert body.count("no second factor") == 1  # bob
    globex = table(signed_in(cast.charlie).get("/settings/mfa/"))
    assert "charlie@globex.test" in globex
    assert "alice@acme.test" not in globex and "bob@acme.test" not in globex


def test_a_viewer_is_refused_the_page_and_the_policy(cast):
    bob = signed_in(cast.bob)
    assert bob.get("/settings/mfa/").status_code == 403
    assert bob.post("/settings/mfa/policy/", {"mfa_required": "on"}).status_code == 403
    cast.org_a.refresh_from_db()
    assert cast.org_a.mfa_required is False
    settings_page = text(bob.get("/settings/"))
    assert 'href="/settings/mfa/"' not in settings_page  # not offered in the settings navigation
    assert 'href="/accounts/2fa/"' in settings_page  # but their own second factors are


def test_an_admin_sees_the_page_and_the_section_in_the_navigation(cast):
    carol = UserFactory(email="carol@acme.test")
    MembershipFactory(user=carol, organization=cast.org_a, role=Membership.ROLE_ADMIN)
    client = signed_in(carol)
    assert client.get("/settings/mfa/").status_code == 200
    assert 'href="/settings/mfa/"' in text(client.get("/settings/"))


def test_the_members_come_a_page_at_a_time(cast):
    for number in range(PAGE_SIZE + 2):
        MembershipFactory(user=UserFactory(email=f"member{number:02d}@acme.test"), organization=cast.org_a)
    client = signed_in(cast.alice)
    first, second = table(client.get("/settings/mfa/")), table(client.get("/settings/mfa/?page=2"))
    shown = [f"member{number:02d}@acme.test" for number in range(PAGE_SIZE + 2)] + ["alice@acme.test", "bob@acme.test"]
    on_first = {email for email in shown if email in first}
    on_second = {email for email in shown if email in second}
    assert len(on_first) == PAGE_SIZE and len(on_second) == len(shown) - PAGE_SIZE
    assert on_first.isdisjoint(on_second)
    assert "Page 2 of 2" in second


@pytest.mark.cross_tenant("settings-mfa-policy")
def test_the_owner_requires_mfa_audited_and_another_org_is_untouched(cast):
    totp_enrol(cast.alice)
    client = signed_in(cast.alice)
    response = client.post("/settings/mfa/policy/", {"mfa_required": "on"})
    assert response.status_code == 302 and response["Location"] == "/settings/mfa/"
    cast.org_a.refresh_from_db()
    cast.org_b.refresh_from_db()
    assert cast.org_a.mfa_required is True and cast.org_b.mfa_required is False
    event = AuditEvent.objects.get(verb="mfa.policy_change")
    assert event.organization == cast.org_a and event.actor_user == cast.alice
    assert event.data == {"from": False, "to": True}

    client.post("/settings/mfa/policy/", {})  # unticked: off again
    cast.org_a.refresh_from_db()
    assert cast.org_a.mfa_required is False
    assert AuditEvent.objects.filter(verb="mfa.policy_change").count() == 2
    client.post("/settings/mfa/policy/", {})  # no change, no row
    assert AuditEvent.objects.filter(verb="mfa.policy_change").count() == 2


def test_an_owner_without_a_second_factor_cannot_require_one(cast):
    client = signed_in(cast.alice)
    response = client.post("/settings/mfa/policy/", {"mfa_required": "on"}, follow=True)
    assert "add a second factor to your own account first" in text(response)
    cast.org_a.refresh_from_db()
    assert cast.org_a.mfa_required is False
    assert not AuditEvent.objects.filter(verb="mfa.policy_change").exists()


def test_the_page_shows_when_a_method_was_last_used(cast):
    totp_enrol(cast.bob)
    Authenticator.objects.get(user=cast.bob, type=Authenticator.Type.TOTP).record_usage()
    assert "last used" in text(signed_in(cast.alice).get("/settings/mfa/"))
