"""``/api/v1/oauth-clients/trusted`` (docs/security/memory-poisoning.md#trusted-oauth-clients): an admin
trusts an OAuth client, which clears that client's pending memories carrying no flag, in that organization
only; taking the trust back changes what its later writes get. Admins only, audited."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import AuditEvent, Organization
from accounts.tokens.services import token_create
from memories.models import Memory
from memories.sessions import services as services_sessions
from memories.sessions.services import session_process, session_submit
from tests.fakes import ScriptedLLM, memory_block
from tests.memories.trust.conftest import app_principal, written_by

pytestmark = pytest.mark.django_db
URL = "/api/v1/oauth-clients/trusted"
DISTILLED_TITLE = "Wrap DB calls in context.WithTimeout"
DISTILLED = memory_block(
    1, DISTILLED_TITLE, "When Go tests hang on database calls", "Add context.WithTimeout around every query.", "go"
)


def admin_client(org: Organization, *, scopes: tuple[str, ...] = ("admin", "memories:read"), **token: Any) -> APIClient:
    _, raw = token_create(organization=org, label="admin", scopes=list(scopes), **token)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def trusts(org: Organization) -> dict[str, str]:
    return dict(Memory.objects.filter(organization=org).values_list("title", "trust"))


def test_trusting_a_client_clears_its_unflagged_pending_memories_and_is_audited(cast, claude, settings, monkeypatch):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda sid, delay_seconds=0: None)
    app = app_principal(cast.org_a, cast.alice, claude)
    written_by(app, cast.project_a, "Recorded through the app")
    written_by(app, cast.project_a, "Flagged through the app", flags=[{"rule": "remote_script"}])
    session = session_submit(principal=app, session_id="s-1", outcome="success", trace="agent: fixed it").session
    session_process(session.id, llm=ScriptedLLM([DISTILLED]))
    assert set(trusts(cast.org_a).values()) == {"pending"} and len(trusts(cast.org_a)) == 3

    response = admin_client(cast.org_a).post(URL, {"client_id": claude.client_id}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json() == {
        "client_id": claude.client_id, "trusted": True, "memories_cleared": 2,
        "trusted_oauth_clients": [{"client_id": claude.client_id, "name": "Claude Desktop"}],
    }  # fmt: skip
    assert trusts(cast.org_a) == {
        "Recorded through the app": "trusted", "Flagged through the app": "pending", DISTILLED_TITLE: "trusted",
    }  # fmt: skip
    audit = AuditEvent.objects.get(organization=cast.org_a, verb="org.oauth_client_trust")
    assert audit.data == {"client_id": claude.client_id, "app": "Claude Desktop", "memories_cleared": 2}
    # its next memory is trusted as it is written (each request of the app loads the organization afresh)
    app.organization.refresh_from_db()
    assert written_by(app, cast.project_a, "Recorded after the trust").trust == "trusted"


def test_a_trusted_client_of_a_viewer_still_waits_and_other_ways_in_are_left_alone(cast, claude):
    viewer_app = app_principal(cast.org_a, cast.bob, claude)  # bob is a viewer of acme
    written_by(viewer_app, cast.project_a, "Written for a viewer")
    imported = written_by(cast.principal(cast.alice), cast.project_a, "Someone else's pending", trust="pending")

    admin_client(cast.org_a).post(URL, {"client_id": claude.client_id}, format="json")

    assert trusts(cast.org_a) == {"Written for a viewer": "pending", imported.title: "pending"}


def test_taking_the_trust_back_leaves_what_was_cleared_and_makes_new_writes_wait(cast, claude):
    app = app_principal(cast.org_a, cast.alice, claude)
    first = written_by(app, cast.project_a, "Before")
    admin = admin_client(cast.org_a)
    admin.post(URL, {"client_id": claude.client_id}, format="json")

    response = admin.post(URL, {"client_id": claude.client_id, "trusted": False}, format="json")

    assert response.json()["trusted_oauth_clients"] == [] and response.json()["memories_cleared"] == 0
    app.organization.refresh_from_db()
    assert Memory.objects.get(pk=first.pk).trust == "trusted"
    assert written_by(app, cast.project_a, "After").trust == "pending"
    assert AuditEvent.objects.filter(organization=cast.org_a, verb="org.oauth_client_distrust").count() == 1


@pytest.mark.cross_tenant("api-oauth-clients-trusted")
def test_trusting_a_client_in_one_organization_clears_nothing_in_another(cast, claude):
    acme_app = app_principal(cast.org_a, cast.alice, claude)
    globex_app = app_principal(cast.org_b, cast.charlie, claude)
    written_by(acme_app, cast.project_a, "Acme's")
    written_by(globex_app, cast.project_b, "Globex's")
    globex = admin_client(cast.org_b)

    trusted = globex.post(URL, {"client_id": claude.client_id}, format="json")
    listed_by_acme = admin_client(cast.org_a).get(URL)

    assert trusted.json()["memories_cleared"] == 1
    assert trusts(cast.org_b) == {"Globex's": "trusted"} and trusts(cast.org_a) == {"Acme's": "pending"}
    assert listed_by_acme.json() == {"trusted_oauth_clients": []}
    assert Organization.objects.get(pk=cast.org_a.pk).trusted_oauth_clients == []
    assert not AuditEvent.objects.filter(organization=cast.org_a, verb="org.oauth_client_trust").exists()


@pytest.mark.parametrize(
    ("scopes", "restricted"),
    [(("memories:read", "memories:write"), False), (("admin", "memories:read"), True)],
    ids=["without admin", "restricted to a project"],
)
def test_only_an_organization_wide_admin_token_may_trust_a_client(cast, claude, scopes, restricted):
    projects = [cast.project_a] if restricted else []
    client = admin_client(cast.org_a, scopes=scopes, projects=projects)

    response = client.post(URL, {"client_id": claude.client_id}, format="json")

    assert response.status_code == 403
    assert Organization.objects.get(pk=cast.org_a.pk).trusted_oauth_clients == []


@pytest.mark.parametrize(
    ("body", "field"),
    [({"client_id": "never-registered"}, "client_id"), ({}, "client_id"), ({"client_id": "x" * 101}, "client_id"),
     ({"client_id": "c", "trusted": "yes"}, "trusted"), ({"client_id": "c", "trust": True}, "trust")],
    ids=["unknown client", "missing", "too long", "not a boolean", "unknown field"],
)  # fmt: skip
def test_a_bad_request_names_its_field_and_changes_nothing(cast, body, field):
    response = admin_client(cast.org_a).post(URL, body, format="json")

    assert response.status_code == 400 and field in response.json()["errors"], response.json()
    assert Organization.objects.get(pk=cast.org_a.pk).trusted_oauth_clients == []


def test_an_unknown_client_may_still_lose_its_trust(cast):
    Organization.objects.filter(pk=cast.org_a.pk).update(trusted_oauth_clients=["deleted-client"])

    response = admin_client(cast.org_a).post(URL, {"client_id": "deleted-client", "trusted": False}, format="json")

    assert response.status_code == 200 and response.json()["trusted_oauth_clients"] == []


def test_listing_the_trusted_clients_needs_the_admin_scope_too(cast, claude):
    Organization.objects.filter(pk=cast.org_a.pk).update(trusted_oauth_clients=[claude.client_id])

    assert admin_client(cast.org_a, scopes=("memories:read",)).get(URL).status_code == 403
    assert admin_client(cast.org_a).get(URL).json() == {
        "trusted_oauth_clients": [{"client_id": claude.client_id, "name": "Claude Desktop"}]
    }
