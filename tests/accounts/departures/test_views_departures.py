"""Settings → Members: deactivating a member (a confirm page, then the departure) and reactivating one.
Admins and owners act; viewers get a 403; only an owner deactivates an owner; the last owner never;
another org's member is a 404; a deactivated person is refused the org on their next request."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts.models import ApiToken, Membership
from accounts.services import token_create
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _membership(user: Any) -> Membership:
    return Membership.objects.get(user=user)


def test_the_members_page_offers_deactivate_to_admins(cast: Any) -> None:
    page = _client(cast.alice).get("/settings/")
    assert f"/settings/members/{_membership(cast.bob).pk}/deactivate/".encode() in page.content
    viewer_page = _client(cast.bob).get("/settings/")
    assert b"/deactivate/" not in viewer_page.content


def test_an_owner_deactivates_a_member_after_the_confirm_step(cast: Any) -> None:
    token, _ = token_create(organization=cast.org_a, label="bob's", created_by=cast.bob)
    bob = _membership(cast.bob)
    alice = _client(cast.alice)
    confirm = alice.get(f"/settings/members/{bob.pk}/deactivate/")
    assert confirm.status_code == 200
    assert b"bob@acme.test" in confirm.content and b"stay, attributed" in confirm.content
    bob.refresh_from_db()
    assert bob.is_active  # the GET changes nothing
    response = alice.post(f"/settings/members/{bob.pk}/deactivate/", {"reason": "left"})
    assert response.status_code == 302
    bob.refresh_from_db()
    assert not bob.is_active and bob.deactivated_reason == "left"
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    assert b"deactivated" in alice.get("/settings/").content


def test_a_deactivated_person_is_refused_the_org_on_their_next_request(cast: Any) -> None:
    bob_web = _client(cast.bob)
    assert bob_web.get("/settings/").status_code == 200
    _client(cast.alice).post(f"/settings/members/{_membership(cast.bob).pk}/deactivate/", {"reason": ""})
    assert bob_web.get("/settings/").status_code in (302, 403)  # signed out (their only org), or no org
    signed_in_again = _client(cast.bob)
    assert signed_in_again.get("/settings/").status_code == 403


def test_a_viewer_cannot_deactivate_anyone(cast: Any) -> None:
    alice = _membership(cast.alice)
    assert _client(cast.bob).get(f"/settings/members/{alice.pk}/deactivate/").status_code == 403
    assert _client(cast.bob).post(f"/settings/members/{alice.pk}/deactivate/").status_code == 403
    assert _membership(cast.alice).is_active


def test_an_admin_cannot_deactivate_an_owner(cast: Any) -> None:
    MembershipFactory(organization=cast.org_a, role=Membership.ROLE_OWNER)  # alice is not the last owner
    Membership.objects.filter(user=cast.bob).update(role=Membership.ROLE_ADMIN)
    alice = _membership(cast.alice)
    assert _client(cast.bob).get(f"/settings/members/{alice.pk}/deactivate/").status_code == 403
    assert _client(cast.bob).post(f"/settings/members/{alice.pk}/deactivate/").status_code == 403
    assert _membership(cast.alice).is_active


def test_the_last_owner_cannot_be_deactivated_from_the_page(cast: Any) -> None:
    other_owner = MembershipFactory(organization=cast.org_a, role=Membership.ROLE_OWNER)
    alice_web = _client(cast.alice)
    assert alice_web.post(f"/settings/members/{other_owner.pk}/deactivate/").status_code == 302
    carol_web = _client(other_owner.user)
    # the other owner is deactivated: alice, now the last owner, cannot be (nor deactivate herself)
    response = alice_web.post(f"/settings/members/{_membership(cast.alice).pk}/deactivate/")
    assert response.status_code == 400
    assert "last owner" in response.context["errors"]["form"]
    assert _membership(cast.alice).is_active
    assert carol_web.get("/settings/").status_code in (302, 403)


def test_an_admin_reactivates_a_member(cast: Any) -> None:
    bob = _membership(cast.bob)
    alice = _client(cast.alice)
    alice.post(f"/settings/members/{bob.pk}/deactivate/")
    assert alice.post(f"/settings/members/{bob.pk}/reactivate/").status_code == 302
    assert _membership(cast.bob).is_active
    assert _client(cast.bob).get("/settings/").status_code == 200


def test_a_viewer_cannot_reactivate(cast: Any) -> None:
    dana = MembershipFactory(organization=cast.org_a, role=Membership.ROLE_MEMBER)
    _client(cast.alice).post(f"/settings/members/{dana.pk}/deactivate/")
    assert _client(cast.bob).post(f"/settings/members/{dana.pk}/reactivate/").status_code == 403
    dana.refresh_from_db()
    assert not dana.is_active


@pytest.mark.cross_tenant("settings-member-deactivate", "settings-member-reactivate")
def test_another_orgs_member_cannot_be_deactivated_or_reactivated(cast: Any) -> None:
    charlie = _membership(cast.charlie)
    alice = _client(cast.alice)
    assert alice.get(f"/settings/members/{charlie.pk}/deactivate/").status_code == 404
    assert alice.post(f"/settings/members/{charlie.pk}/deactivate/").status_code == 404
    assert alice.post(f"/settings/members/{charlie.pk}/reactivate/").status_code == 404
    assert _membership(cast.charlie).is_active
