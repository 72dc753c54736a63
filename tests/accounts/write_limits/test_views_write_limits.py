"""Write suspensions and limits on the dashboard (docs/security/memory-poisoning.md#write-limits): the
banner its owners and admins see while a token or connected app may not write, the lift buttons of
Settings → API tokens and Connected apps (admins only, inside the organization), and a member's memory
actions charged to their own and the organization's write limits."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.test import Client

from accounts.access import principal_for_token
from accounts.models import ApiToken, AuditEvent, Membership, OAuthConnection
from accounts.tokens.services import token_create
from accounts.write_limits.services import flagged_write_note
from memories.models import Memory
from tests.accounts.oauth.oauth_flow import API_RESOURCE, Flow, dcr_client
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db


def web(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return html.unescape(response.content.decode())


def suspended_token(org: Any, label: str = "leaked laptop") -> ApiToken:
    token, _ = token_create(organization=org, label=label)
    for _ in range(3):
        flagged_write_note(principal_for_token(token))
    token.refresh_from_db()
    return token


def suspended_app(user: Any, org: str) -> OAuthConnection:
    from accounts.oauth.services import oauth_authenticate

    tokens = Flow(dcr_client(Client()), resources=[API_RESOURCE]).tokens(web(user), org=org)
    principal = oauth_authenticate(tokens["access_token"], resource=API_RESOURCE)
    for _ in range(3):
        flagged_write_note(principal)  # type: ignore[arg-type]
    return OAuthConnection.objects.select_related("application").get(organization__slug=org)


# --- the banner -------------------------------------------------------------------------------------


def test_owners_see_the_suspension_banner_on_every_page_with_the_token_and_where_to_lift_it(cast):
    token = suspended_token(cast.org_a)
    for url in ("/", "/memories/", "/settings/"):
        body = page(web(cast.alice), url)
        assert 'data-banner="suspension"' in body, url
        assert "1 API token may not write after a burst of writes the instruction-smell detector flagged" in body
        assert f"{token.prefix}… (leaked laptop)" in body
        assert '<a class="see-system" href="/settings/tokens/">Settings → API tokens</a>' in body


def test_viewers_and_members_see_no_suspension_banner(cast):
    suspended_token(cast.org_a)
    assert 'data-banner="suspension"' not in page(web(cast.bob), "/")  # a viewer
    Membership.objects.filter(user=cast.bob).update(role=Membership.ROLE_MEMBER)
    assert 'data-banner="suspension"' not in page(web(cast.bob), "/")


def test_another_organizations_suspension_shows_no_banner(cast):
    suspended_token(cast.org_b)
    assert 'data-banner="suspension"' not in page(web(cast.alice), "/")
    assert 'data-banner="suspension"' in page(web(cast.charlie), "/")


def test_the_banner_goes_once_the_suspension_is_lifted_or_the_token_revoked(cast):
    from accounts.tokens.services import token_revoke

    token = suspended_token(cast.org_a)
    token_revoke(token=token, actor=None)
    assert 'data-banner="suspension"' not in page(web(cast.alice), "/")


def test_a_suspended_connected_app_shows_in_the_banner_linking_to_connected_apps(cast):
    app = suspended_app(cast.alice, "acme")
    body = page(web(cast.alice), "/")
    assert "1 connected app may not write" in body and app.application.name in body
    assert 'href="/settings/connected-apps/">Settings → Connected apps</a>' in body


# --- Settings → API tokens and Connected apps ------------------------------------------------------


@pytest.mark.cross_tenant("settings-token-unsuspend")
def test_an_owner_lifts_a_token_from_the_tokens_page_and_another_organizations_token_is_a_404(cast):
    token = suspended_token(cast.org_a)
    globex = suspended_token(cast.org_b)
    alice = web(cast.alice)
    body = page(alice, "/settings/tokens/")
    assert f'data-suspended="{token.pk}"' in body and "writes suspended" in body and "Lift suspension" in body
    assert alice.post(f"/settings/tokens/{globex.pk}/unsuspend/").status_code == 404
    globex.refresh_from_db()
    assert globex.write_suspended_at is not None
    lifted = alice.post(f"/settings/tokens/{token.pk}/unsuspend/", follow=True)
    assert f"Token {token.prefix}… (leaked laptop) may write again." in html.unescape(lifted.content.decode())
    token.refresh_from_db()
    assert token.write_suspended_at is None
    audit = AuditEvent.objects.get(verb="token.write_unsuspend")
    assert audit.actor_user == cast.alice and audit.target_id == str(token.pk)
    assert 'data-banner="suspension"' not in page(alice, "/settings/tokens/")


@pytest.mark.parametrize("role", [Membership.ROLE_VIEWER, Membership.ROLE_MEMBER])
def test_a_viewer_or_member_cannot_lift_and_sees_no_lift_button(cast, role):
    Membership.objects.filter(user=cast.bob).update(role=role)
    token = suspended_token(cast.org_a)
    bob = web(cast.bob)
    body = page(bob, "/settings/tokens/")
    assert "writes suspended" in body and "Lift suspension" not in body
    assert bob.post(f"/settings/tokens/{token.pk}/unsuspend/").status_code == 403
    token.refresh_from_db()
    assert token.write_suspended_at is not None and not AuditEvent.objects.filter(verb="token.write_unsuspend")


@pytest.mark.cross_tenant("settings-connected-app-unsuspend")
def test_an_owner_lifts_a_connected_app_and_another_organizations_app_is_a_404(cast):
    app = suspended_app(cast.alice, "acme")
    globex = suspended_app(cast.charlie, "globex")
    alice = web(cast.alice)
    body = page(alice, "/settings/connected-apps/")
    assert f'data-suspended="{app.pk}"' in body and "Lift suspension" in body
    assert alice.post(f"/settings/connected-apps/{globex.pk}/unsuspend/").status_code == 404
    lifted = alice.post(f"/settings/connected-apps/{app.pk}/unsuspend/", follow=True)
    assert "may write again" in html.unescape(lifted.content.decode())
    app.refresh_from_db()
    globex.refresh_from_db()
    assert app.write_suspended_at is None and globex.write_suspended_at is not None


def test_lifting_a_token_that_is_not_suspended_says_so(cast):
    token, _ = token_create(organization=cast.org_a, label="fine")
    answer = web(cast.alice).post(f"/settings/tokens/{token.pk}/unsuspend/", follow=True)
    assert "is not suspended: there is nothing to lift" in html.unescape(answer.content.decode())


# --- a member's writes on the dashboard -----------------------------------------------------------------


@pytest.mark.usefixtures("minute_room")
def test_a_members_memory_actions_are_charged_and_refused_over_the_limit_with_nothing_changed(cast, agent, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 1  # each writer: here alice on the dashboard
    memory = MemoryFactory(principal=agent, title="Pin the base image by digest")
    alice = web(cast.alice)
    alice.post(f"/memories/{memory.id}/archive/", {"reason": "manual"})
    memory.refresh_from_db()
    assert memory.state == Memory.STATE_ARCHIVED
    refused = alice.post(f"/memories/{memory.id}/restore/", follow=True)
    assert "Write limit reached: alice@acme.test has made 1 write this minute" in html.unescape(
        refused.content.decode()
    )
    memory.refresh_from_db()
    assert memory.state == Memory.STATE_ARCHIVED


def test_a_member_is_never_suspended_by_flagged_writes(cast):
    alice = cast.principal(cast.alice)
    for _ in range(5):
        flagged_write_note(alice)
    assert 'data-banner="suspension"' not in page(web(cast.alice), "/")
    assert not AuditEvent.objects.filter(verb="token.write_suspend").exists()
