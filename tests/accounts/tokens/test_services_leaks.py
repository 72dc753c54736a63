"""``leaked_tokens_revoke``: one of our tokens seen in a text sent to the bank is revoked on sight,
with an audit row in the token's own organization; only the row whose digest matches is touched, and
a string that merely looks like one of our tokens revokes nothing (docs/security/secret-scrubbing.md).
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from django.test import Client
from oauth2_provider.models import AccessToken, RefreshToken

from accounts.models import ApiToken, AuditEvent, OAuthConnection
from accounts.oauth.services import oauth_authenticate
from accounts.tokens.services import token_authenticate, token_create
from accounts.tokens.services_leaks import leaked_tokens_revoke
from tests.accounts.oauth.oauth_flow import API_RESOURCE, Flow, dcr_client

pytestmark = pytest.mark.django_db


def connected_app_tokens(user: Any, org: str) -> tuple[Flow, dict[str, Any]]:
    """An OAuth app connected by ``user`` to ``org`` through the real flow: its token response."""
    web = Client()
    web.force_login(user)
    flow = Flow(dcr_client(Client()), resources=[API_RESOURCE])
    return flow, flow.tokens(web, org=org)


def leak_rows(org: Any) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(organization=org, data__reason="leaked"))


def test_a_seen_api_token_is_revoked_and_audited_without_the_secret(cast: Any) -> None:
    token, raw = token_create(organization=cast.org_a, label="ci")

    assert leaked_tokens_revoke([raw], seen_in="memory") == 1

    assert token_authenticate(raw) is None
    (row,) = leak_rows(cast.org_a)
    assert (row.verb, row.actor, row.target_id) == ("token.revoke", "system", str(token.pk))
    assert row.data == {"label": "ci", "reason": "leaked", "seen_in": "memory"}
    assert raw not in str(row.data)


def test_a_seen_oauth_access_token_stops_working_and_its_refresh_token_with_it(cast: Any) -> None:
    flow, tokens = connected_app_tokens(cast.alice, "acme")
    assert oauth_authenticate(tokens["access_token"], resource=API_RESOURCE) is not None

    assert leaked_tokens_revoke([tokens["access_token"]], seen_in="session.submit") == 1

    assert oauth_authenticate(tokens["access_token"], resource=API_RESOURCE) is None
    assert Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {tokens['access_token']}").status_code == 401
    refreshed = flow.refresh(Client(), tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    (row,) = leak_rows(cast.org_a)
    connection = OAuthConnection.objects.get()
    assert (row.verb, row.target_id, row.data["token"], row.data["seen_in"]) == (
        "oauth.token_revoke", str(connection.pk), "access", "session.submit",
    )  # fmt: skip
    assert connection.revoked_at is None  # the app may sign in again; only the leaked tokens are dead


def test_a_seen_oauth_refresh_token_can_no_longer_be_exchanged(cast: Any) -> None:
    flow, tokens = connected_app_tokens(cast.alice, "acme")

    assert leaked_tokens_revoke([tokens["refresh_token"]], seen_in="memory.feedback") == 1

    refreshed = flow.refresh(Client(), tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    assert oauth_authenticate(tokens["access_token"], resource=API_RESOURCE) is None
    assert [row.data["token"] for row in leak_rows(cast.org_a)] == ["refresh"]


def test_a_token_of_another_org_is_revoked_alone_with_its_audit_row_in_its_own_org(cast: Any) -> None:
    _, charlies_app = connected_app_tokens(cast.charlie, "globex")
    _, charlies_other_app = connected_app_tokens(cast.charlie, "globex")
    _, globex_raw = token_create(organization=cast.org_b, label="globex ci")
    _, acme_raw = token_create(organization=cast.org_a, label="acme ci")

    # text sent by org A that holds org B's tokens
    assert leaked_tokens_revoke([charlies_app["access_token"], globex_raw], seen_in="memory") == 2

    assert oauth_authenticate(charlies_app["access_token"], resource=API_RESOURCE) is None
    assert token_authenticate(globex_raw) is None
    assert oauth_authenticate(charlies_other_app["access_token"], resource=API_RESOURCE) is not None
    assert token_authenticate(acme_raw) is not None
    assert {row.verb for row in leak_rows(cast.org_b)} == {"token.revoke", "oauth.token_revoke"}
    assert leak_rows(cast.org_a) == []  # org A learns nothing about org B's tokens


def test_a_string_that_only_looks_like_our_token_revokes_nothing(cast: Any) -> None:
    _, tokens = connected_app_tokens(cast.alice, "acme")
    _, raw = token_create(organization=cast.org_a, label="ci")
    look_alikes = [prefix + secrets.token_urlsafe(32) for prefix in ("rb_", "rbo_", "rbr_")]
    before = (ApiToken.objects.filter(revoked_at__isnull=True).count(), AccessToken.objects.count())

    assert leaked_tokens_revoke(look_alikes, seen_in="memory") == 0

    after = (ApiToken.objects.filter(revoked_at__isnull=True).count(), AccessToken.objects.count())
    assert after == before
    assert RefreshToken.objects.filter(revoked__isnull=False).count() == 0
    assert not AuditEvent.objects.filter(data__reason="leaked").exists()
    assert token_authenticate(raw) is not None
    assert oauth_authenticate(tokens["access_token"], resource=API_RESOURCE) is not None


def test_a_token_seen_twice_is_revoked_and_audited_once(cast: Any) -> None:
    _, raw = token_create(organization=cast.org_a, label="ci")
    assert leaked_tokens_revoke([raw, raw], seen_in="memory") == 1
    assert leaked_tokens_revoke([raw], seen_in="memory") == 0
    assert len(leak_rows(cast.org_a)) == 1
