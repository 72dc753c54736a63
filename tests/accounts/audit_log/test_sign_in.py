"""Sign-ins in the audit log (accounts/receivers.py → accounts/audit_log/services.py): a sign-in, a failed one
and a sign-out through the real allauth forms, each a row in the member's organizations with the client's
address and User-Agent (docs/identity.md#the-audit-log)."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent

PASSWORD = "correct horse battery staple 42"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"


@pytest.fixture
def alice(cast):
    cast.alice.set_password(PASSWORD)
    cast.alice.save()
    return cast.alice


def sign_in(client, email: str, password: str, address: str = "203.0.113.7"):
    return client.post(
        "/accounts/login/", {"login": email, "password": password}, REMOTE_ADDR=address, HTTP_USER_AGENT=BROWSER
    )


def rows(verb: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(verb=verb).order_by("id"))


def test_a_sign_in_is_recorded_with_the_address_and_the_browser(client, cast, alice):
    response = sign_in(client, "alice@acme.test", PASSWORD)
    assert response.status_code == 302 and "_auth_user_id" in client.session
    (row,) = rows("auth.sign_in")
    assert row.organization == cast.org_a and row.actor == "user:alice@acme.test" and row.actor_user == alice
    assert (row.target_type, row.target_id) == ("user", str(alice.pk))
    assert row.ip == "203.0.113.7" and row.client == BROWSER
    assert row.data == {"method": "password"}


def test_a_failed_sign_in_is_recorded_for_the_member_it_named_without_the_password(client, cast, alice):
    response = sign_in(client, "Alice@Acme.test", "not the password", address="198.51.100.23")
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    (row,) = rows("auth.sign_in_failed")
    assert row.organization == cast.org_a and row.actor == "anonymous" and row.actor_user is None
    assert (row.target_type, row.target_id) == ("user", str(alice.pk))
    assert row.ip == "198.51.100.23" and row.client == BROWSER
    assert row.data == {"method": "password", "login": "alice@acme.test"}  # as allauth normalised it
    assert "not the password" not in str(row.data)
    assert not rows("auth.sign_in")


def test_a_failed_sign_in_for_an_unknown_email_belongs_to_no_organization(client, cast):
    sign_in(client, "nobody@nowhere.test", "whatever it is")
    assert not rows("auth.sign_in_failed")


def test_a_member_of_two_organizations_is_recorded_in_both(client, cast, alice):
    from tests.factories import MembershipFactory

    MembershipFactory(user=alice, organization=cast.org_b, role="viewer")
    sign_in(client, "alice@acme.test", PASSWORD)
    assert sorted(row.organization.slug for row in rows("auth.sign_in")) == ["acme", "globex"]


def test_a_sign_out_is_recorded(client, cast, alice):
    sign_in(client, "alice@acme.test", PASSWORD)
    client.post("/accounts/logout/", REMOTE_ADDR="203.0.113.7", HTTP_USER_AGENT=BROWSER)
    assert "_auth_user_id" not in client.session
    (row,) = rows("auth.sign_out")
    assert row.organization == cast.org_a and row.actor == "user:alice@acme.test" and row.ip == "203.0.113.7"


def test_work_outside_a_request_has_no_address_and_no_client(cast):
    from accounts.services import audit_record

    row = audit_record(organization=cast.org_a, actor=None, verb="llm.budget_alert")
    assert (row.ip, row.client, row.actor) == (None, "", "system")
