"""Settings → Provisioning (SCIM): owners and admins make a SCIM token (shown once, kept as a digest,
audited) and revoke it; viewers get a 403; another org's token is a 404."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.test import Client

from accounts.models import AuditEvent, Membership, ScimToken
from tests.accounts.scim.scim_client import Scim, assert_scim_error

pytestmark = pytest.mark.django_db


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_owner_makes_a_scim_token_shown_once_and_stored_hashed(cast: Any) -> None:
    response = _client(cast.alice).post("/settings/provisioning/", {"label": "Okta"})
    assert response.status_code == 200
    raw = response.context["raw_token"]
    assert raw.startswith("rbscim_") and raw in response.content.decode()
    assert response["Cache-Control"] == "no-store"
    token = ScimToken.objects.get(organization=cast.org_a)
    assert token.digest == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in {token.prefix, token.digest, token.label}
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="scim.token_create").count() == 1
    page = _client(cast.alice).get("/settings/provisioning/")
    assert raw not in page.content.decode()
    assert b"/scim/v2" in page.content
    assert Scim(raw).get("/Users").status_code == 200


def test_an_admin_may_and_a_viewer_may_not(cast: Any) -> None:
    Membership.objects.filter(user=cast.bob).update(role=Membership.ROLE_ADMIN)
    assert _client(cast.bob).post("/settings/provisioning/", {"label": "Entra"}).status_code == 200
    Membership.objects.filter(user=cast.bob).update(role=Membership.ROLE_VIEWER)
    assert _client(cast.bob).get("/settings/provisioning/").status_code == 403
    assert _client(cast.bob).post("/settings/provisioning/", {"label": "Sneaky"}).status_code == 403
    assert ScimToken.objects.filter(organization=cast.org_a).count() == 1


def test_a_token_without_a_label_is_refused_with_a_form_error(cast: Any) -> None:
    response = _client(cast.alice).post("/settings/provisioning/", {"label": ""})
    assert response.status_code == 400
    assert "label" in response.context["errors"]
    assert not ScimToken.objects.exists()


def test_revoking_a_scim_token_ends_it_at_once(cast: Any) -> None:
    raw = _client(cast.alice).post("/settings/provisioning/", {"label": "Okta"}).context["raw_token"]
    token = ScimToken.objects.get()
    response = _client(cast.alice).post(f"/settings/provisioning/tokens/{token.pk}/revoke/")
    assert response.status_code == 302
    assert_scim_error(Scim(raw).get("/Users"), 401)
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="scim.token_revoke").count() == 1


@pytest.mark.cross_tenant("settings-scim", "settings-scim-token-revoke")
def test_another_orgs_scim_token_cannot_be_seen_or_revoked(cast: Any) -> None:
    raw = _client(cast.charlie).post("/settings/provisioning/", {"label": "Globex IdP"}).context["raw_token"]
    token = ScimToken.objects.get(organization=cast.org_b)
    page = _client(cast.alice).get("/settings/provisioning/")
    assert token.prefix not in page.content.decode() and "Globex IdP" not in page.content.decode()
    assert _client(cast.alice).post(f"/settings/provisioning/tokens/{token.pk}/revoke/").status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None
    assert Scim(raw).get("/Users").status_code == 200
