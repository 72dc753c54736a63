"""Signing in with a second factor (allauth.mfa) and the organization's "require MFA" policy at sign-in:
an authenticator code computed from the secret, a recovery code (once), and a member of an organization
that requires MFA sent to enrolment until they have a second factor (docs/identity.md#multi-factor-authentication)."""

from __future__ import annotations

from typing import Any

import pytest
from allauth.mfa.models import Authenticator
from django.test import Client

from accounts.models import AuditEvent
from tests.accounts.mfa.mfa_helpers import password_confirm, password_step, recovery_codes, totp_code, totp_enrol

pytestmark = pytest.mark.django_db

DASHBOARD_PAGES = ["/", "/memories/", "/settings/", "/settings/tokens/", "/sessions/"]


def _signed_in_as(client: Client) -> Any:
    return client.get("/settings/").wsgi_request.user


def test_an_enrolled_member_signs_in_with_a_code_computed_from_their_secret(cast):
    secret = totp_enrol(cast.alice)
    client = Client()
    first = password_step(client, cast.alice.email)
    assert first.status_code == 302 and first["Location"] == "/accounts/2fa/authenticate/"
    assert not _signed_in_as(client).is_authenticated  # the password alone signs no one in

    done = client.post("/accounts/2fa/authenticate/", {"code": totp_code(secret, step=1)})
    assert done.status_code == 302 and done["Location"] == "/"
    assert client.get("/").status_code == 200
    assert _signed_in_as(client) == cast.alice
    records = client.session["account_authentication_methods"]
    assert [record["method"] for record in records] == ["password", "mfa"]


def test_a_wrong_code_signs_no_one_in(cast):
    secret = totp_enrol(cast.alice)
    client = Client()
    password_step(client, cast.alice.email)
    right = totp_code(secret, step=1)
    wrong = f"{(int(right) + 1) % 1_000_000:06d}"
    refused = client.post("/accounts/2fa/authenticate/", {"code": wrong})
    assert refused.status_code == 200
    assert "Incorrect code" in refused.content.decode()
    assert not _signed_in_as(client).is_authenticated


def test_a_recovery_code_signs_in_once_and_never_again(cast):
    totp_enrol(cast.alice)
    code = recovery_codes(cast.alice)[0]
    client = Client()
    password_step(client, cast.alice.email)
    done = client.post("/accounts/2fa/authenticate/", {"code": code})
    assert done.status_code == 302 and done["Location"] == "/"
    assert _signed_in_as(client) == cast.alice
    assert code not in recovery_codes(cast.alice)

    again = Client()
    password_step(again, cast.alice.email)
    refused = again.post("/accounts/2fa/authenticate/", {"code": code})
    assert refused.status_code == 200
    assert not _signed_in_as(again).is_authenticated


def test_without_a_policy_a_member_without_mfa_uses_the_dashboard_as_before(cast):
    client = Client()
    assert password_step(client, cast.bob.email)["Location"] == "/"
    assert client.get("/").status_code == 200


def test_a_member_of_an_org_that_requires_mfa_is_sent_to_enrolment_after_sign_in(cast):
    cast.org_a.mfa_required = True
    cast.org_a.save()
    client = Client()
    assert password_step(client, cast.bob.email)["Location"] == "/"
    for path in DASHBOARD_PAGES:
        response = client.get(path)
        assert response.status_code == 302, path
        assert response["Location"] == "/accounts/2fa/", path
    page = client.get("/accounts/2fa/")
    assert page.status_code == 200
    assert "requires two-factor sign-in" in page.content.decode()
    # the org's other members are unaffected once they have a factor; another org's not at all
    other = Client()
    password_step(other, cast.charlie.email)
    assert other.get("/").status_code == 200


def test_a_member_who_enrols_through_the_pages_may_use_the_dashboard_and_it_is_audited(
    cast, django_capture_on_commit_callbacks
):
    cast.org_a.mfa_required = True
    cast.org_a.save()
    client = Client()
    password_step(client, cast.bob.email)
    assert client.get("/accounts/2fa/totp/activate/")["Location"].startswith("/accounts/reauthenticate/")
    password_confirm(client)
    activate = client.get("/accounts/2fa/totp/activate/")
    assert activate.status_code == 200
    secret = activate.context["form"].secret
    with django_capture_on_commit_callbacks(execute=True):  # allauth signals the enrolment after commit
        done = client.post("/accounts/2fa/totp/activate/", {"code": totp_code(secret)})
    assert done.status_code == 302, done.content[:400]
    assert Authenticator.objects.filter(user=cast.bob, type=Authenticator.Type.TOTP).exists()
    assert client.get("/").status_code == 200
    verbs = list(AuditEvent.objects.filter(organization=cast.org_a, actor_user=cast.bob).values_list("verb", "data"))
    assert (
        "mfa.enroll",
        {"method": "totp", "authenticator_id": Authenticator.objects.get(user=cast.bob, type="totp").pk},
    ) in verbs
    assert any(verb == "mfa.recovery_codes_generate" for verb, _data in verbs)


def test_removing_the_last_factor_is_audited_and_sends_the_member_back_to_enrolment(cast):
    secret = totp_enrol(cast.bob)
    cast.org_a.mfa_required = True
    cast.org_a.save()
    client = Client()
    password_step(client, cast.bob.email)
    client.post("/accounts/2fa/authenticate/", {"code": totp_code(secret, step=1)})
    assert client.get("/").status_code == 200
    password_confirm(client)
    removed = client.post("/accounts/2fa/totp/deactivate/")
    assert removed.status_code == 302
    assert not Authenticator.objects.filter(user=cast.bob).exists()  # recovery codes go with the last factor
    removals = AuditEvent.objects.filter(organization=cast.org_a, verb="mfa.remove", actor_user=cast.bob)
    assert sorted(event.data["method"] for event in removals) == ["recovery_codes", "totp"]
    assert client.get("/")["Location"] == "/accounts/2fa/"


def test_new_recovery_codes_are_audited_in_every_org_of_the_member(cast, django_capture_on_commit_callbacks):
    from tests.factories import MembershipFactory

    MembershipFactory(user=cast.alice, organization=cast.org_b)
    secret = totp_enrol(cast.alice)
    old = recovery_codes(cast.alice)
    client = Client()
    password_step(client, cast.alice.email)
    client.post("/accounts/2fa/authenticate/", {"code": totp_code(secret, step=1)})
    password_confirm(client)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/accounts/2fa/recovery-codes/generate/").status_code == 302
    assert set(recovery_codes(cast.alice)).isdisjoint(old)
    for org in (cast.org_a, cast.org_b):
        assert AuditEvent.objects.filter(
            organization=org, verb="mfa.recovery_codes_generate", actor_user=cast.alice
        ).exists()


def test_an_unverified_email_must_be_verified_before_a_factor_is_added_and_the_gate_holds(cast):
    from allauth.account.models import EmailAddress

    EmailAddress.objects.create(user=cast.bob, email=cast.bob.email, primary=True, verified=False)
    cast.org_a.mfa_required = True
    cast.org_a.save()
    client = Client()
    password_step(client, cast.bob.email)
    refused = client.get("/accounts/2fa/totp/activate/", follow=True)
    assert refused.redirect_chain[-1][0] == "/accounts/2fa/"
    assert "verified your email address" in refused.content.decode()
    assert not Authenticator.objects.filter(user=cast.bob).exists()
    assert client.get("/")["Location"] == "/accounts/2fa/"
