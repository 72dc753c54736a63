"""OAuth 2.1 for remote MCP clients (docs/oauth.md): metadata, the authorization server, consent, tokens
as principals, connected apps, and the refusals (each with the error the OAuth specifications name, and
nothing written)."""

from __future__ import annotations

import socket
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, Grant

from accounts.access import Principal
from accounts.models import AuditEvent, OAuthConnection
from accounts.oauth.cimd import address_allowed
from accounts.oauth.protocol import canonical_resource, redirect_uri_problem, resource_known
from accounts.oauth.services import oauth_authenticate
from tests.accounts.oauth.oauth_flow import (
    API_RESOURCE,
    MCP_RESOURCE,
    REDIRECT_URI,
    Flow,
    dcr_client,
    redirect_params,
    register,
)
from tests.factories import MemoryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def web() -> Client:
    return Client()


@pytest.fixture
def alice_web(cast: Any) -> Client:
    client = Client()
    client.force_login(cast.alice)
    return client


@pytest.fixture
def client_id(web: Client) -> str:
    return dcr_client(web)


def _bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def _nothing_granted() -> None:
    assert not Grant.objects.exists()
    assert not AccessToken.objects.filter(rb_link__isnull=False).exists()
    assert not OAuthConnection.objects.exists()
    assert not AuditEvent.objects.filter(verb="oauth.grant").exists()


# --- metadata and the challenge --------------------------------------------------------------------


def test_protected_resource_metadata_names_the_resource_the_issuer_and_the_scopes(web: Client) -> None:
    mcp = web.get("/.well-known/oauth-protected-resource/mcp").json()
    assert mcp["resource"] == MCP_RESOURCE
    assert mcp["authorization_servers"] == ["http://127.0.0.1:8000"]
    assert mcp["scopes_supported"] == ["memories:read", "memories:write", "consolidation:run"]
    assert mcp["bearer_methods_supported"] == ["header"]
    api = web.get("/.well-known/oauth-protected-resource/api/v1").json()
    assert api["resource"] == API_RESOURCE


def test_authorization_server_metadata(web: Client) -> None:
    meta = web.get("/.well-known/oauth-authorization-server").json()
    base = "http://127.0.0.1:8000"
    assert meta["issuer"] == base
    assert meta["authorization_endpoint"] == f"{base}/oauth/authorize/"
    assert meta["token_endpoint"] == f"{base}/oauth/token/"
    assert meta["revocation_endpoint"] == f"{base}/oauth/revoke/"
    assert meta["registration_endpoint"] == f"{base}/oauth/register/"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["response_types_supported"] == ["code"]
    assert meta["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert meta["client_id_metadata_document_supported"] is True
    assert "none" in meta["token_endpoint_auth_methods_supported"]
    assert "introspection_endpoint" not in meta


def test_rest_401_points_at_the_api_metadata(web: Client) -> None:
    response = web.get("/api/v1/me")
    assert response.status_code == 401
    challenge = response["WWW-Authenticate"]
    assert challenge.startswith('Bearer realm="api", ')
    assert 'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/api/v1"' in challenge


# --- the whole flow ------------------------------------------------------------------------------


def test_code_flow_with_pkce_issues_a_bound_token_with_iss_and_rotating_refresh(
    cast: Any, alice_web: Client, client_id: str
) -> None:
    flow = Flow(client_id, resources=[MCP_RESOURCE, API_RESOURCE])
    response = flow.consent(alice_web, org="acme")
    params = redirect_params(response)
    assert params["iss"] == "http://127.0.0.1:8000"  # RFC 9207
    tokens = flow.exchange(alice_web, flow.code_from(response)).json()
    assert tokens["token_type"] == "Bearer"
    assert tokens["access_token"].startswith("rbo_") and tokens["refresh_token"].startswith("rbr_")
    assert set(tokens["scope"].split()) == {"memories:read", "memories:write", "consolidation:run"}
    assert tokens["expires_in"] == 3600

    me = Client().get("/api/v1/me", **_bearer(tokens["access_token"]))
    assert me.status_code == 200, me.content
    assert me.json()["organization"]["slug"] == "acme"
    assert me.json()["token"] is None
    # stored as digests only
    stored = AccessToken.objects.get(rb_link__isnull=False)
    assert stored.token == "" and stored.resource == [MCP_RESOURCE, API_RESOURCE]

    refreshed = flow.refresh(Client(), tokens["refresh_token"])
    assert refreshed.status_code == 200, refreshed.content
    new = refreshed.json()
    assert new["refresh_token"] != tokens["refresh_token"]  # rotation
    assert Client().get("/api/v1/me", **_bearer(new["access_token"])).status_code == 200
    assert Client().get("/api/v1/me", **_bearer(tokens["access_token"])).status_code == 401  # the old one is gone
    # a rotated refresh token replayed: refused, and its whole family revoked
    replay = flow.refresh(Client(), tokens["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert flow.refresh(Client(), new["refresh_token"]).status_code == 400

    grant_rows = AuditEvent.objects.filter(organization=cast.org_a, verb="oauth.grant")
    assert grant_rows.count() == 1 and grant_rows.get().actor == "user:alice@acme.test"


def test_without_a_resource_the_token_is_bound_to_the_mcp_endpoint(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id, resources=[])
    tokens = flow.tokens(alice_web, org="acme")
    assert AccessToken.objects.get(rb_link__isnull=False).resource == [MCP_RESOURCE]
    # so the REST API, another resource, refuses it
    response = Client().get("/api/v1/me", **_bearer(tokens["access_token"]))
    assert response.status_code == 401
    assert "another resource" in response.json()["detail"]


def test_consent_requires_login_first(web: Client, client_id: str) -> None:
    response = web.get(Flow(client_id).authorize_url())
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=/oauth/authorize/")


def test_consent_page_offers_only_the_users_orgs_and_their_projects(
    cast: Any, alice_web: Client, client_id: str
) -> None:
    page = alice_web.get(Flow(client_id).authorize_url())
    html = page.content.decode()
    assert page.status_code == 200
    assert "Test agent" in html and 'value="acme"' in html and "web-app" in html
    assert "globex" not in html and "billing" not in html


def test_a_project_restriction_and_fewer_scopes_carry_into_the_principal(
    cast: Any, alice_web: Client, client_id: str
) -> None:
    flow = Flow(client_id, resources=[API_RESOURCE])
    tokens = flow.tokens(alice_web, org="acme", scopes=["memories:read"], projects=[cast.project_a.pk])
    me = Client().get("/api/v1/me", **_bearer(tokens["access_token"])).json()
    assert me["scopes"] == ["memories:read"]
    assert [p["slug"] for p in me["projects"]] == ["web-app"]
    connection = OAuthConnection.objects.get()
    assert connection.scopes == ["memories:read"] and list(connection.projects.all()) == [cast.project_a]


def test_an_oauth_request_reads_its_token_connection_role_and_restriction_in_one_statement(
    cast: Any, alice_web: Client, client_id: str
) -> None:
    tokens = Flow(client_id, resources=[API_RESOURCE]).tokens(alice_web, org="acme", projects=[cast.project_a.pk])
    oauth_authenticate(tokens["access_token"], resource=API_RESOURCE)  # the first use writes last_used_at

    with CaptureQueriesContext(connection) as captured:
        principal = oauth_authenticate(tokens["access_token"], resource=API_RESOURCE)

    assert isinstance(principal, Principal), principal
    assert len(captured.captured_queries) == 1, "\n\n".join(q["sql"] for q in captured.captured_queries)
    assert principal.organization == cast.org_a and principal.user == cast.alice
    assert principal.project_ids == {cast.project_a.pk} and principal.only_project == cast.project_a
    assert principal.oauth_connection.application.client_id == client_id


# --- refusals: each with its OAuth error, nothing written ------------------------------------------


def test_wrong_pkce_verifier_is_invalid_grant_and_no_token(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id)
    code = flow.code_from(flow.consent(alice_web, org="acme"))
    response = flow.exchange(alice_web, code, code_verifier="x" * 64)
    assert response.status_code == 400 and response.json()["error"] == "invalid_grant"
    assert not AccessToken.objects.filter(rb_link__isnull=False).exists()


def test_pkce_is_required_and_plain_is_refused(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id)
    missing = alice_web.get(flow.authorize_url(code_challenge=None, code_challenge_method=None))
    assert redirect_params(missing)["error"] == "invalid_request"
    plain = Flow(client_id, method="plain")
    plain.challenge = plain.verifier
    params = redirect_params(alice_web.get(plain.authorize_url()))
    assert params["error"] == "invalid_request" and "S256" in params["error_description"]
    _nothing_granted()


def test_a_code_is_single_use(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id)
    code = flow.code_from(flow.consent(alice_web, org="acme"))
    assert flow.exchange(alice_web, code).status_code == 200
    again = flow.exchange(alice_web, code)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert AccessToken.objects.filter(rb_link__isnull=False).count() == 1


def test_redirect_uri_mismatch_is_refused_without_redirecting(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id)
    response = alice_web.get(flow.authorize_url(redirect_uri="https://evil.example/callback"))
    assert response.status_code == 400  # never sent to an unregistered redirect URI
    assert b"invalid_request" in response.content or b"Mismatching redirect URI" in response.content
    _nothing_granted()


def test_redirect_uri_must_match_at_the_exchange(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id)
    code = flow.code_from(flow.consent(alice_web, org="acme"))
    response = flow.exchange(alice_web, code, redirect_uri="http://127.0.0.1:38111/other")
    assert response.status_code == 400 and response.json()["error"] in ("invalid_grant", "invalid_request")
    assert not AccessToken.objects.filter(rb_link__isnull=False).exists()


def test_a_resource_this_server_does_not_serve_is_invalid_target(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id, resources=["https://other.example/mcp"])
    params = redirect_params(alice_web.get(flow.authorize_url()))
    assert params["error"] == "invalid_target" and params["state"] == flow.state
    _nothing_granted()


def test_a_token_request_for_another_resource_is_invalid_target(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id)
    code = flow.code_from(flow.consent(alice_web, org="acme"))
    response = flow.exchange(alice_web, code, resource=API_RESOURCE)  # the grant was for /mcp only
    assert response["Content-Type"] == "application/json"
    assert response.status_code == 400 and response.json()["error"] == "invalid_target"
    assert not AccessToken.objects.filter(rb_link__isnull=False).exists()


def test_an_expired_token_is_401(alice_web: Client, client_id: str) -> None:
    tokens = Flow(client_id, resources=[API_RESOURCE]).tokens(alice_web, org="acme")
    AccessToken.objects.filter(rb_link__isnull=False).update(expires=timezone.now() - timedelta(seconds=1))
    response = Client().get("/api/v1/me", **_bearer(tokens["access_token"]))
    assert response.status_code == 401 and "expired" in response.json()["detail"]


def test_consent_for_an_org_the_user_is_not_in_is_access_denied(cast: Any, alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id)
    params = redirect_params(flow.consent(alice_web, org="globex"))
    assert params["error"] == "access_denied" and params["state"] == flow.state
    _nothing_granted()


def test_scopes_above_the_role_are_refused(cast: Any, client_id: str) -> None:
    bob = Client()
    bob.force_login(cast.bob)  # a viewer: memories:read only
    flow = Flow(client_id)
    response = flow.consent(bob, org="acme", scopes=["memories:read", "memories:write"])
    assert response.status_code == 400
    assert b"does not allow memories:write" in response.content
    _nothing_granted()
    tokens = flow.tokens(bob, org="acme", scopes=["memories:read"])
    assert tokens["scope"] == "memories:read"


def test_denying_is_access_denied(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id)
    assert redirect_params(flow.consent(alice_web, org="acme", allow=False))["error"] == "access_denied"
    _nothing_granted()


def test_a_client_metadata_url_at_a_private_address_is_refused(
    alice_web: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "https://metadata.internal.test/oauth/client.json"

    def resolve(host: str, port: int, *args: Any, **kwargs: Any) -> list[Any]:
        assert host == "metadata.internal.test"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.20.30.40", port))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    response = alice_web.get(Flow(url).authorize_url())
    assert response.status_code == 400  # an unknown client: never redirected anywhere
    assert b"Invalid client_id" in response.content
    assert not Application.objects.filter(client_id=url).exists()
    _nothing_granted()


def test_dcr_refuses_http_redirects_to_other_hosts_and_other_grants(web: Client) -> None:
    bad = register(web, redirect_uris=["http://evil.example/callback"])
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_redirect_uri"
    machine = register(web, grant_types=["client_credentials"])
    assert machine.status_code == 400 and machine.json()["error"] == "invalid_client_metadata"
    assert register(web, redirect_uris=["http://localhost:5555/cb", "https://app.example/cb"]).status_code == 201


# --- connected apps ----------------------------------------------------------------------------


def test_connected_apps_lists_and_revoking_stops_the_token_on_the_next_request(
    cast: Any, alice_web: Client, client_id: str
) -> None:
    tokens = Flow(client_id, resources=[API_RESOURCE]).tokens(alice_web, org="acme")
    assert Client().get("/api/v1/me", **_bearer(tokens["access_token"])).status_code == 200
    page = alice_web.get("/settings/connected-apps/")
    html = page.content.decode()
    assert page.status_code == 200 and "Test agent" in html and "alice@acme.test" in html
    connection = OAuthConnection.objects.get()
    assert connection.last_used_at is not None

    response = alice_web.post(f"/settings/connected-apps/{connection.pk}/revoke/")
    assert response.status_code == 302
    assert Client().get("/api/v1/me", **_bearer(tokens["access_token"])).status_code == 401
    refreshed = Flow(client_id).refresh(Client(), tokens["refresh_token"])
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    assert AuditEvent.objects.filter(
        organization=cast.org_a, verb="oauth.revoke", target_id=str(connection.pk)
    ).exists()
    assert "revoked" in alice_web.get("/settings/connected-apps/").content.decode()


def test_a_viewer_cannot_revoke_someone_elses_app(cast: Any, alice_web: Client, client_id: str) -> None:
    Flow(client_id).tokens(alice_web, org="acme")
    connection = OAuthConnection.objects.get()
    bob = Client()
    bob.force_login(cast.bob)
    assert bob.post(f"/settings/connected-apps/{connection.pk}/revoke/").status_code == 403
    assert OAuthConnection.objects.get().revoked_at is None


def test_a_member_who_left_the_org_loses_the_apps_access(cast: Any, alice_web: Client, client_id: str) -> None:
    tokens = Flow(client_id, resources=[API_RESOURCE]).tokens(alice_web, org="acme", projects=[])
    cast.alice.memberships.all().delete()
    response = Client().get("/api/v1/me", **_bearer(tokens["access_token"]))
    assert response.status_code == 401


# --- cross-tenant --------------------------------------------------------------------------------


@pytest.mark.cross_tenant(
    "oauth2_provider:authorize", "oauth2_provider:token", "settings-connected-apps", "settings-connected-app-revoke"
)
def test_a_token_granted_for_org_a_never_reaches_org_b(cast: Any, alice_web: Client, client_id: str) -> None:
    b_memory = MemoryFactory(
        principal=cast.principal(cast.charlie), project="billing", title="Globex secret billing strategy"
    )
    MemoryFactory(principal=cast.principal(cast.alice), project="web-app", title="Acme caching strategy")
    tokens = Flow(client_id, resources=[API_RESOURCE]).tokens(alice_web, org="acme")
    api = Client()
    listed = api.get("/api/v1/memories", **_bearer(tokens["access_token"]))
    assert listed.status_code == 200, listed.content
    titles = [m["title"] for m in listed.json()["results"]]
    assert "Acme caching strategy" in titles and "Globex secret billing strategy" not in titles
    assert api.get(f"/api/v1/memories/{b_memory.pk}", **_bearer(tokens["access_token"])).status_code == 404
    assert api.get("/api/v1/projects", **_bearer(tokens["access_token"])).json()["results"][0]["slug"] == "web-app"

    # org B's owner sees none of org A's connected apps, and cannot revoke one (404, not 403)
    charlie = Client()
    charlie.force_login(cast.charlie)
    assert "Test agent" not in charlie.get("/settings/connected-apps/").content.decode()
    connection = OAuthConnection.objects.get()
    assert charlie.post(f"/settings/connected-apps/{connection.pk}/revoke/").status_code == 404
    assert OAuthConnection.objects.get().revoked_at is None
    # and alice cannot consent an app into org B
    assert redirect_params(Flow(client_id).consent(alice_web, org="globex"))["error"] == "access_denied"


# --- pure pieces -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "ok"),
    [
        ("https://app.example/cb", True),
        ("http://127.0.0.1:5555/callback", True),
        ("http://[::1]:5555/callback", True),
        ("http://localhost/cb", True),
        ("http://app.example/cb", False),
        ("cursor://oauth/callback", False),
        ("https://app.example/cb#frag", False),
        ("javascript:alert(1)", False),
    ],
)
def test_redirect_uri_policy(uri: str, ok: bool) -> None:
    assert (redirect_uri_problem(uri) is None) is ok


def test_private_use_schemes_can_be_allowed(settings: Any) -> None:
    settings.OAUTH_REDIRECT_SCHEMES = ["https", "cursor"]
    assert redirect_uri_problem("cursor://oauth/callback") is None


def test_resources_are_compared_canonically() -> None:
    assert canonical_resource("HTTP://127.0.0.1:8000/mcp/") == "http://127.0.0.1:8000/mcp"
    assert resource_known("http://127.0.0.1:8000/mcp/") == MCP_RESOURCE
    assert resource_known("http://127.0.0.1:8000/api/v1") == API_RESOURCE
    assert resource_known("http://127.0.0.1:8000/") is None
    assert resource_known("https://127.0.0.1:8000/mcp") is None


def test_metadata_fetch_addresses(settings: Any) -> None:
    assert address_allowed("93.184.216.34")
    for internal in ("10.0.0.1", "192.168.1.1", "127.0.0.1", "169.254.169.254", "::1", "::ffff:10.0.0.1", "fd00::1"):
        assert not address_allowed(internal), internal
    assert not address_allowed("0.0.0.0")
    settings.OAUTH_CIMD_ALLOW_PRIVATE_ADDRESSES = True
    assert address_allowed("127.0.0.1") and address_allowed("10.0.0.1")
    assert not address_allowed("0.0.0.0")


def test_the_redirect_back_carries_only_the_registered_uri(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id)
    response = flow.consent(alice_web, org="acme")
    assert response["Location"].startswith(REDIRECT_URI + "?")
