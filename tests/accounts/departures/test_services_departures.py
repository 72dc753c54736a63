"""The one-step departure (accounts/departures/services.py): deactivating a member revokes their API
tokens and connected apps in that org, ends their dashboard sessions when no other org is left, marks
the membership inactive, writes one audit row with the counts — and keeps what they wrote attributed."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.models import Session
from django.test import Client
from oauth2_provider.models import get_access_token_model, get_application_model, get_refresh_token_model

from accounts.departures.services import member_deactivate, member_reactivate
from accounts.models import ApiToken, AuditEvent, Membership, OAuthConnection, OAuthTokenLink
from accounts.organizations.selectors import memberships_of_user
from accounts.services import token_create
from memories.models import Memory
from reasoningbank.errors import Forbidden, NotFound
from tests.factories import MembershipFactory, MemoryFactory

pytestmark = pytest.mark.django_db


def _sessions_of(user: Any) -> int:
    return sum(1 for s in Session.objects.all() if s.get_decoded().get(SESSION_KEY) == str(user.pk))


def _sign_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _connected_app(org: Any, user: Any) -> tuple[OAuthConnection, Any]:
    """A connected app of ``user`` in ``org`` with one access token and its refresh token, as the token
    endpoint leaves them (tests/accounts/oauth/ drives the whole browser flow)."""
    from datetime import timedelta

    from django.utils import timezone

    application = get_application_model().objects.create(
        name="agent", client_type="public", authorization_grant_type="authorization-code",
        redirect_uris="http://127.0.0.1/callback",
    )  # fmt: skip
    connection = OAuthConnection.objects.create(
        organization=org, user=user, application=application, scopes=["memories:read"]
    )
    access = get_access_token_model().objects.create(
        user=user, application=application, token=f"rbo_test_{user.pk}_{org.pk}", scope="memories:read",
        expires=timezone.now() + timedelta(hours=1),
    )  # fmt: skip
    get_refresh_token_model().objects.create(
        user=user, application=application, token=f"r_{access.pk}", access_token=access
    )
    OAuthTokenLink.objects.create(access_token=access, connection=connection, organization=org)
    return connection, access


def test_deactivation_revokes_the_persons_tokens_and_apps_in_this_org_only(cast: Any) -> None:
    MembershipFactory(user=cast.bob, organization=cast.org_b, role=Membership.ROLE_MEMBER)
    bobs_here, _ = token_create(organization=cast.org_a, label="bob's laptop", created_by=cast.bob)
    alices_here, _ = token_create(organization=cast.org_a, label="alice's", created_by=cast.alice)
    bobs_there, _ = token_create(organization=cast.org_b, label="bob at globex", created_by=cast.bob)
    connection_here, access_here = _connected_app(cast.org_a, cast.bob)
    connection_there, _ = _connected_app(cast.org_b, cast.bob)

    departure = member_deactivate(
        organization=cast.org_a, user=cast.bob, actor=cast.principal(cast.alice), reason="left the team"
    )

    assert ApiToken.objects.get(pk=bobs_here.pk).revoked_at is not None
    assert ApiToken.objects.get(pk=alices_here.pk).revoked_at is None
    assert ApiToken.objects.get(pk=bobs_there.pk).revoked_at is None
    assert OAuthConnection.objects.get(pk=connection_here.pk).revoked_at is not None
    assert OAuthConnection.objects.get(pk=connection_there.pk).revoked_at is None
    assert not get_access_token_model().objects.filter(pk=access_here.pk).exists()
    assert get_refresh_token_model().objects.get(token=f"r_{access_here.pk}").revoked is not None
    assert (departure.api_tokens_revoked, departure.oauth_apps_revoked, departure.oauth_access_tokens_revoked) == (
        1,
        1,
        1,
    )


def test_the_membership_becomes_inactive_and_the_org_is_no_longer_offered(cast: Any) -> None:
    member_deactivate(organization=cast.org_a, user=cast.bob, actor=None, reason="")
    membership = Membership.objects.get(user=cast.bob, organization=cast.org_a)
    assert not membership.is_active
    assert list(memberships_of_user(user=cast.bob)) == []


def test_one_audit_row_counts_what_was_revoked(cast: Any) -> None:
    token_create(organization=cast.org_a, label="one", created_by=cast.bob)
    token_create(organization=cast.org_a, label="two", created_by=cast.bob)
    member_deactivate(organization=cast.org_a, user=cast.bob, actor=cast.principal(cast.alice), reason="contract ended")
    event = AuditEvent.objects.get(organization=cast.org_a, verb="member.deactivate")
    assert event.actor == "user:alice@acme.test"
    assert event.data["reason"] == "contract ended"
    assert event.data["api_tokens_revoked"] == 2
    assert event.data["sessions_ended"] == 0
    assert not AuditEvent.objects.filter(verb="token.revoke").exists()  # counted once, not row by row


def test_sessions_end_when_no_other_org_is_left(cast: Any) -> None:
    _sign_in(cast.bob), _sign_in(cast.bob), _sign_in(cast.alice)
    departure = member_deactivate(organization=cast.org_a, user=cast.bob, actor=None, reason="")
    assert departure.sessions_ended == 2
    assert _sessions_of(cast.bob) == 0
    assert _sessions_of(cast.alice) == 1


def test_sessions_stay_for_a_person_still_in_another_org_but_this_org_is_refused(cast: Any) -> None:
    MembershipFactory(user=cast.bob, organization=cast.org_b, role=Membership.ROLE_MEMBER)
    web = _sign_in(cast.bob)
    session = web.session
    session["rb_org"] = "acme"
    session.save()
    departure = member_deactivate(organization=cast.org_a, user=cast.bob, actor=None, reason="")
    assert departure.sessions_ended == 0
    assert _sessions_of(cast.bob) == 1
    page = web.get("/settings/")
    assert page.status_code == 200
    assert page.context["org"].slug == "globex"


def test_memories_stay_attributed_after_deactivation(cast: Any) -> None:
    Membership.objects.filter(user=cast.bob, organization=cast.org_a).update(role=Membership.ROLE_MEMBER)
    bob_org_a = Membership.objects.select_related("organization", "user").get(user=cast.bob, organization=cast.org_a)
    from accounts.access import principal_for_membership

    memory = MemoryFactory(principal=principal_for_membership(bob_org_a), project="web-app", title="Bob's lesson")
    member_deactivate(organization=cast.org_a, user=cast.bob, actor=None, reason="left")
    kept = Memory.objects.get(pk=memory.pk)
    assert kept.created_by_user_id == cast.bob.pk
    assert kept.title == "Bob's lesson"
    assert Membership.objects.filter(user=cast.bob, organization=cast.org_a).exists()


def test_the_last_owner_cannot_be_deactivated(cast: Any) -> None:
    with pytest.raises(Forbidden, match="last owner"):
        member_deactivate(organization=cast.org_a, user=cast.alice, actor=None, reason="")
    assert Membership.objects.get(user=cast.alice).is_active


def test_an_admin_cannot_deactivate_an_owner_but_another_owner_can(cast: Any) -> None:
    carol = MembershipFactory(organization=cast.org_a, role=Membership.ROLE_OWNER).user
    Membership.objects.filter(user=cast.bob).update(role=Membership.ROLE_ADMIN)
    with pytest.raises(Forbidden, match="only an owner"):
        member_deactivate(organization=cast.org_a, user=carol, actor=cast.principal(cast.bob), reason="")
    member_deactivate(organization=cast.org_a, user=carol, actor=cast.principal(cast.alice), reason="")
    assert not Membership.objects.get(user=carol).is_active


def test_nobody_deactivates_themselves_from_the_dashboard(cast: Any) -> None:
    Membership.objects.filter(user=cast.bob).update(role=Membership.ROLE_ADMIN)
    with pytest.raises(Forbidden, match="yourself"):
        member_deactivate(organization=cast.org_a, user=cast.bob, actor=cast.principal(cast.bob), reason="")


def test_a_person_of_another_org_is_not_found(cast: Any) -> None:
    with pytest.raises(NotFound):
        member_deactivate(organization=cast.org_a, user=cast.charlie, actor=None, reason="")
    assert Membership.objects.get(user=cast.charlie).is_active


def test_deactivating_twice_writes_one_audit_row(cast: Any) -> None:
    member_deactivate(organization=cast.org_a, user=cast.bob, actor=None, reason="")
    again = member_deactivate(organization=cast.org_a, user=cast.bob, actor=None, reason="")
    assert again.already_inactive
    assert AuditEvent.objects.filter(verb="member.deactivate").count() == 1


def test_reactivation_lets_them_back_in_with_their_role_and_keeps_tokens_revoked(cast: Any) -> None:
    token, _ = token_create(organization=cast.org_a, label="bob's", created_by=cast.bob)
    member_deactivate(organization=cast.org_a, user=cast.bob, actor=None, reason="leave")
    membership = member_reactivate(organization=cast.org_a, user=cast.bob, actor=cast.principal(cast.alice))
    assert membership.is_active and membership.role == Membership.ROLE_VIEWER
    assert [m.organization.slug for m in memberships_of_user(user=cast.bob)] == ["acme"]
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    event = AuditEvent.objects.get(verb="member.reactivate")
    assert event.data["deactivated_for"] == "leave"


def test_a_deactivated_owner_does_not_count_as_the_other_owner(cast: Any) -> None:
    from accounts.organizations.services import membership_set_role

    carol = MembershipFactory(organization=cast.org_a, role=Membership.ROLE_OWNER).user
    member_deactivate(organization=cast.org_a, user=carol, actor=None, reason="")
    with pytest.raises(Forbidden, match="at least one owner"):
        membership_set_role(membership=Membership.objects.get(user=cast.alice), role=Membership.ROLE_ADMIN, actor=None)


def test_a_deactivated_member_frees_their_seat_and_needs_one_to_come_back(cast: Any) -> None:
    from accounts.organizations.services import membership_add
    from reasoningbank.errors import LimitExceeded
    from tests.factories import UserFactory

    cast.org_a.plan = "free"  # three members: alice, bob and one more
    cast.org_a.save(update_fields=["plan"])
    dana = MembershipFactory(organization=cast.org_a).user
    with pytest.raises(LimitExceeded):
        membership_add(organization=cast.org_a, user=UserFactory(), role=Membership.ROLE_MEMBER, actor=None)
    member_deactivate(organization=cast.org_a, user=dana, actor=None, reason="")
    membership_add(organization=cast.org_a, user=UserFactory(), role=Membership.ROLE_MEMBER, actor=None)
    with pytest.raises(LimitExceeded):
        member_reactivate(organization=cast.org_a, user=dana, actor=None)
    assert not Membership.objects.get(user=dana).is_active


def test_a_deactivated_member_cannot_connect_an_app_to_the_org(cast: Any) -> None:
    from tests.accounts.oauth.oauth_flow import MCP_RESOURCE, Flow, dcr_client, redirect_params

    MembershipFactory(user=cast.bob, organization=cast.org_b, role=Membership.ROLE_VIEWER)
    member_deactivate(organization=cast.org_a, user=cast.bob, actor=None, reason="")
    web = _sign_in(cast.bob)
    flow = Flow(dcr_client(web), resources=[MCP_RESOURCE])
    page = web.get(flow.authorize_url())
    assert [o["membership"].organization.slug for o in page.context["orgs"]] == ["globex"]
    refused = flow.consent(web, org="acme", scopes=["memories:read"])
    assert redirect_params(refused)["error"] == "access_denied"
    assert not OAuthConnection.objects.filter(user=cast.bob, organization=cast.org_a).exists()
