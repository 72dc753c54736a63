"""OAuth for remote MCP clients, the parts around the flow (docs/oauth.md): browser-based clients at
another origin (CORS), the limit on open client registration, the scheduled token cleanup, a client
revoking its own token (RFC 7009), what a 401 tells an OAuth client, the token page's hint, and
PostgreSQL keeping a connected app's restriction inside its org."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.utils import timezone
from django.utils.module_loading import import_string
from django_q.models import Schedule
from oauth2_provider.models import AccessToken, Application, Grant, RefreshToken

from accounts.models import Membership, OAuthConnection, OAuthConnectionProject, OAuthConnectionTeam
from accounts.oauth.services import oauth_connection_grant
from accounts.tasks import oauth_tokens_clear_expired
from tests.accounts.oauth.oauth_flow import API_RESOURCE, MCP_RESOURCE, Flow, dcr_client, register
from tests.factories import TeamFactory
from tests.mcp_harness import MCP_HEADERS, http_client, in_thread, initialize_body, mcp_client

pytestmark = pytest.mark.django_db

ELSEWHERE = "https://agent.example"  # a web page's origin, not this server's


@pytest.fixture
def alice_web(cast: Any) -> Client:
    client = Client()
    client.force_login(cast.alice)
    return client


@pytest.fixture
def client_id() -> str:
    return dcr_client(Client())


def _bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def _preflight(path: str) -> Any:
    return Client().options(
        path,
        HTTP_ORIGIN=ELSEWHERE,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="content-type",
    )


# --- browser-based clients (CORS) -------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/oauth/token/", "/oauth/register/", "/oauth/revoke/"])
def test_a_browser_at_another_origin_may_post_to_the_token_registration_and_revocation_endpoints(path: str) -> None:
    response = _preflight(path)
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert "POST" in response["Access-Control-Allow-Methods"]
    assert "Content-Type" in response["Access-Control-Allow-Headers"]
    assert "Access-Control-Allow-Credentials" not in response  # never with cookies


def test_their_answers_carry_the_origin_header_and_expose_retry_after(alice_web: Client, client_id: str) -> None:
    browser = Client(HTTP_ORIGIN=ELSEWHERE)
    registered = register(browser)
    assert registered.status_code == 201 and registered["Access-Control-Allow-Origin"] == "*"
    flow = Flow(client_id)
    code = flow.code_from(flow.consent(alice_web, org="acme"))
    exchanged = flow.exchange(browser, code)
    assert exchanged.status_code == 200 and exchanged["Access-Control-Allow-Origin"] == "*"
    assert "Retry-After" in exchanged["Access-Control-Expose-Headers"]
    refused = flow.exchange(browser, code)  # the code again: an error, readable too
    assert refused.status_code == 400 and refused["Access-Control-Allow-Origin"] == "*"


def test_the_metadata_documents_are_readable_from_another_origin() -> None:
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/mcp"):
        assert Client().get(path, HTTP_ORIGIN=ELSEWHERE)["Access-Control-Allow-Origin"] == "*"


def test_the_authorization_endpoint_is_not_opened_to_other_origins(alice_web: Client, client_id: str) -> None:
    """It runs on the signed-in session: a page elsewhere must never read the consent page."""
    assert "Access-Control-Allow-Origin" not in _preflight("/oauth/authorize/")
    page = alice_web.get(Flow(client_id).authorize_url(), HTTP_ORIGIN=ELSEWHERE)
    assert page.status_code == 200 and "Access-Control-Allow-Origin" not in page


# --- open registration, limited per address --------------------------------------------------------


def test_registrations_from_one_address_are_limited_with_429_and_retry_after(settings: Any) -> None:
    settings.OAUTH_DCR_RATE_LIMIT = 3
    settings.OAUTH_DCR_RATE_WINDOW = 3600
    for _ in range(3):
        assert register(Client()).status_code == 201
    refused = register(Client())
    assert refused.status_code == 429
    assert 3500 <= int(refused["Retry-After"]) <= 3600
    assert refused.json()["error"] == "too_many_requests"
    assert Application.objects.count() == 3  # the refused one wrote nothing
    # refused ones count too, and the address stays blocked for the window
    assert register(Client(), redirect_uris=["http://evil.example/cb"]).status_code == 429
    # another address registers as usual
    assert register(Client(REMOTE_ADDR="203.0.113.9")).status_code == 201


# --- client metadata: web page URLs are https (their addresses: test_oauth_registration_limits.py) ---


@pytest.mark.parametrize("field", ["client_uri", "logo_uri", "tos_uri", "policy_uri"])
@pytest.mark.parametrize(
    "uri", ["javascript:alert(document.cookie)", "data:text/html,<script>alert(1)</script>", "http://agent.example/"]
)
def test_registration_refuses_web_page_urls_that_are_not_https(field: str, uri: str) -> None:
    response = register(Client(), **{field: uri})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"
    assert response.json()["error_description"] == f"{field}: must be an https URL"
    assert not Application.objects.exists()


def test_an_update_of_a_registration_is_held_to_the_same_policy() -> None:
    created = register(Client()).json()
    response = Client().put(
        f"/oauth/register/{created['client_id']}/",
        data={"client_name": "Renamed", "redirect_uris": created["redirect_uris"], "logo_uri": "javascript:alert(1)",
              "token_endpoint_auth_method": "none"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {created['registration_access_token']}",
    )  # fmt: skip
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"
    assert Application.objects.get(client_id=created["client_id"]).name == "Test agent"


# --- one error shape ---------------------------------------------------------------------------------


def test_token_endpoint_errors_carry_the_rfc_members_and_the_error_shape(client_id: str) -> None:
    response = Client().post(
        "/oauth/token/",
        {"grant_type": "authorization_code", "client_id": client_id, "code": "nope", "code_verifier": "x" * 50,
         "redirect_uri": "http://127.0.0.1:38111/callback"},
    )  # fmt: skip
    body = response.json()
    assert response.status_code == 400 and body["error"] == "invalid_grant"
    assert body["code"] == "invalid_grant" and body["errors"] == {} and body["detail"]


def test_an_unknown_oauth_path_and_a_wrong_method_are_json_in_the_error_shape() -> None:
    unknown = Client().post("/oauth/nothing-here/")
    wrong_method = Client().get("/oauth/token/")
    assert unknown.status_code == 404 and unknown.json()["code"] == "not_found" and unknown.json()["error"]
    assert wrong_method.status_code == 405 and {"error", "detail", "code", "errors"} <= wrong_method.json().keys()


# --- the scheduled cleanup (django-oauth-toolkit's cleartokens) ------------------------------------


def test_setup_schedules_schedules_the_oauth_token_cleanup() -> None:
    call_command("setup_schedules", stdout=mock.Mock())
    schedule = Schedule.objects.get(name="rb:oauth-cleartokens")
    assert schedule.func == "accounts.tasks.oauth_tokens_clear_expired"
    assert schedule.schedule_type == Schedule.MINUTES and schedule.minutes == 60
    assert import_string(schedule.func) is oauth_tokens_clear_expired


def test_the_cleanup_deletes_expired_codes_and_idle_tokens_and_keeps_live_ones(
    settings: Any, alice_web: Client, client_id: str
) -> None:
    live_flow = Flow(client_id, resources=[API_RESOURCE])
    live = live_flow.tokens(alice_web, org="acme")
    idle = Flow(client_id).tokens(alice_web, org="acme")
    abandoned = Flow(client_id)
    abandoned.code_from(abandoned.consent(alice_web, org="acme"))  # a code never exchanged
    Grant.objects.update(expires=timezone.now() - timedelta(minutes=5))
    # the idle pair: its access token expired longer ago than a refresh token outlives it
    idle_refresh = RefreshToken.objects.exclude(access_token__in=_access_tokens_of(live)).get()
    AccessToken.objects.filter(pk=idle_refresh.access_token_id).update(
        expires=timezone.now() - timedelta(seconds=int(settings.OAUTH_REFRESH_TOKEN_LIFETIME) + 60)
    )

    assert oauth_tokens_clear_expired() == {"grants": 1, "access_tokens": 1, "refresh_tokens": 1}

    assert not Grant.objects.exists()
    assert Client().get("/api/v1/me", **_bearer(live["access_token"])).status_code == 200
    assert live_flow.refresh(Client(), live["refresh_token"]).status_code == 200
    assert Flow(client_id).refresh(Client(), idle["refresh_token"]).json()["error"] == "invalid_grant"


def _access_tokens_of(tokens: dict[str, Any]) -> Any:
    checksum = hashlib.sha256(tokens["access_token"].encode()).hexdigest()
    return AccessToken.objects.filter(token_checksum=checksum)


# --- client-side revocation (RFC 7009) and what a 401 says -----------------------------------------


def test_a_client_that_revokes_its_refresh_token_loses_the_access_token_too(alice_web: Client, client_id: str) -> None:
    flow = Flow(client_id, resources=[API_RESOURCE])
    tokens = flow.tokens(alice_web, org="acme")
    revoked = Client().post(
        "/oauth/revoke/",
        data={"token": tokens["refresh_token"], "token_type_hint": "refresh_token", "client_id": client_id},
    )
    assert revoked.status_code == 200
    assert flow.refresh(Client(), tokens["refresh_token"]).json()["error"] == "invalid_grant"
    me = Client().get("/api/v1/me", **_bearer(tokens["access_token"]))
    assert me.status_code == 401
    assert "OAuth" in me.json()["detail"] and "API token" not in me.json()["detail"]


def test_an_unknown_oauth_token_is_told_to_sign_in_again_and_an_api_token_about_api_tokens() -> None:
    oauth = Client().get("/api/v1/me", **_bearer("rbo_" + "x" * 43)).json()["detail"]
    assert "sign in again" in oauth and "API token" not in oauth
    api = Client().get("/api/v1/me", **_bearer("rb_" + "x" * 43)).json()["detail"]
    assert api.startswith("Unknown or revoked API token:") and "sign in" not in api


@pytest.fixture
def short_lived_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tools' worker threads close their connections, so the test database can be dropped."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("short_lived_connections")
async def test_an_access_token_revoked_at_the_revocation_endpoint_is_a_401_on_the_next_mcp_request(
    app: Any, cast: Any
) -> None:
    def tokens() -> tuple[str, dict[str, Any]]:
        web = Client()
        web.force_login(cast.alice)
        client_id = dcr_client(web)
        return client_id, Flow(client_id, resources=[MCP_RESOURCE]).tokens(web, org="acme")

    client_id, issued = await in_thread(tokens)
    async with mcp_client(app, issued["access_token"], "legacy") as client:
        assert not (await client.call_tool("memory_search", {"query": "anything"})).is_error
    async with http_client(app) as http:
        revoked = await http.post(
            "/oauth/revoke/",
            data={"token": issued["access_token"], "token_type_hint": "access_token", "client_id": client_id},
        )
        assert revoked.status_code == 200, revoked.text
        refused = await http.post(
            "/mcp",
            json=initialize_body(),
            headers={**MCP_HEADERS, "Authorization": f"Bearer {issued['access_token']}"},
        )
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    description = refused.json()["error_description"]
    assert "OAuth" in description and "API token" not in description


# --- Settings → API tokens -------------------------------------------------------------------------


def test_the_token_page_shows_the_oauth_way_without_a_header(alice_web: Client) -> None:
    page = alice_web.get("/settings/tokens/").content.decode()
    assert f"claude mcp add --transport http reasoningbank {MCP_RESOURCE}</code>" in page
    assert 'href="/settings/connected-apps/"' in page


# --- tenant safety of a connected app's restriction ------------------------------------------------


def _connection(cast: Any, **restriction: Any) -> OAuthConnection:
    membership = Membership.objects.get(user=cast.alice, organization=cast.org_a)
    application = Application.objects.get(client_id=dcr_client(Client()))
    return oauth_connection_grant(
        membership=membership, application=application, scopes=["memories:read"], actor=None, **restriction
    )


def _immediately(create: Any) -> None:
    """The composite foreign keys are deferred to commit; checked at once here."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        create()


def test_the_restriction_rows_carry_the_connections_org(cast: Any) -> None:
    team = TeamFactory(organization=cast.org_a)
    made = _connection(cast, projects=[cast.project_a], teams=[team])
    assert list(OAuthConnectionProject.objects.values_list("connection", "project", "organization")) == [
        (made.pk, cast.project_a.pk, cast.org_a.pk)
    ]
    assert OAuthConnectionTeam.objects.get().organization_id == cast.org_a.pk


def test_the_database_refuses_a_connection_restricted_to_another_orgs_project(cast: Any) -> None:
    made = _connection(cast)
    # the row claims the connection's org, but the project is globex's
    with pytest.raises(IntegrityError):
        _immediately(
            lambda: OAuthConnectionProject.objects.create(
                connection=made, project=cast.project_b, organization=cast.org_a
            )
        )
    # the row claims the project's org, but the connection is acme's
    with pytest.raises(IntegrityError):
        _immediately(
            lambda: OAuthConnectionProject.objects.create(
                connection=made, project=cast.project_b, organization=cast.org_b
            )
        )
    # the same through the relation's own API
    with pytest.raises(IntegrityError):
        _immediately(lambda: made.projects.add(cast.project_b, through_defaults={"organization": cast.org_a}))
    assert not OAuthConnectionProject.objects.exists()


def test_the_database_refuses_a_connection_restricted_to_another_orgs_team(cast: Any) -> None:
    made = _connection(cast)
    globex_team = TeamFactory(organization=cast.org_b)
    with pytest.raises(IntegrityError):
        _immediately(
            lambda: OAuthConnectionTeam.objects.create(connection=made, team=globex_team, organization=cast.org_a)
        )
