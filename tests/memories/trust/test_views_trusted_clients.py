"""Dashboard: Settings → Connected apps shows whether each app is trusted and lets an admin trust it or
take the trust back (docs/security/memory-poisoning.md#trusted-oauth-clients); a viewer cannot, and an
admin of another organization changes only their own."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent, OAuthConnection, Organization
from memories.models import Memory
from tests.memories.trust.conftest import app_principal, written_by

pytestmark = pytest.mark.django_db
TRUST = "/settings/connected-apps/trust/"
PAGE = "/settings/connected-apps/"


def test_an_admin_sees_the_apps_trust_and_trusts_it_from_connected_apps(client, cast, claude):
    app = app_principal(cast.org_a, cast.alice, claude)
    waiting = written_by(app, cast.project_a, "Recorded through the app")
    client.force_login(cast.alice)
    page = client.get(PAGE).content.decode()
    assert "wait for review" in page and 'aria-label="Trust Claude Desktop"' in page

    response = client.post(TRUST, {"client_id": claude.client_id, "trusted": "true"}, follow=True)

    assert response.redirect_chain[-1][0] == PAGE
    html = response.content.decode()
    assert f"{claude.client_id} is trusted" in html and "1 of its waiting memory cleared" in html
    assert 'aria-label="Stop trusting Claude Desktop"' in html
    assert Organization.objects.get(pk=cast.org_a.pk).trusted_oauth_clients == [claude.client_id]
    assert Memory.objects.get(pk=waiting.pk).trust == "trusted"

    client.post(TRUST, {"client_id": claude.client_id, "trusted": "false"})
    assert Organization.objects.get(pk=cast.org_a.pk).trusted_oauth_clients == []


def test_a_viewer_sees_the_trust_but_may_not_change_it(client, cast, claude):
    OAuthConnection.objects.create(organization=cast.org_a, user=cast.bob, application=claude, scopes=["memories:read"])
    client.force_login(cast.bob)

    page = client.get(PAGE).content.decode()
    response = client.post(TRUST, {"client_id": claude.client_id, "trusted": "true"})

    assert "wait for review" in page and "Trust Claude Desktop" not in page
    assert response.status_code == 403
    assert Organization.objects.get(pk=cast.org_a.pk).trusted_oauth_clients == []


@pytest.mark.cross_tenant("settings-oauth-client-trust")
def test_an_admin_of_another_organization_trusts_the_app_in_theirs_only(client, cast, claude):
    acme_memory = written_by(app_principal(cast.org_a, cast.alice, claude), cast.project_a, "Acme's")
    globex_memory = written_by(app_principal(cast.org_b, cast.charlie, claude), cast.project_b, "Globex's")
    client.force_login(cast.charlie)

    client.post(TRUST, {"client_id": claude.client_id, "trusted": "true"})

    assert Organization.objects.get(pk=cast.org_b.pk).trusted_oauth_clients == [claude.client_id]
    assert Organization.objects.get(pk=cast.org_a.pk).trusted_oauth_clients == []
    assert (Memory.objects.get(pk=globex_memory.pk).trust, Memory.objects.get(pk=acme_memory.pk).trust) == (
        "trusted",
        "pending",
    )
    assert not AuditEvent.objects.filter(organization=cast.org_a, verb__startswith="org.oauth_client").exists()


def test_an_unknown_client_is_refused_with_a_message(client, cast):
    client.force_login(cast.alice)

    response = client.post(TRUST, {"client_id": "never-registered", "trusted": "true"}, follow=True)

    assert "is registered with this server" in response.content.decode()
    assert Organization.objects.get(pk=cast.org_a.pk).trusted_oauth_clients == []
