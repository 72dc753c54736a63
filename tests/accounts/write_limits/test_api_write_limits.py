"""Write limits over REST (docs/security/memory-poisoning.md#write-limits, docs/api.md): every route that
writes to the bank is charged at the door — 429 ``write_limited`` with ``Retry-After`` over a limit, 403
``write_suspended`` while the token is suspended, nothing written either way, reads untouched — and the
admins' endpoints that list and lift suspensions, each kept inside its organization."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.permissions import SAFE_METHODS
from rest_framework.test import APIClient

from accounts.access import principal_for_token
from accounts.api_base import OrgAPIView
from accounts.models import (
    SCOPE_ADMIN,
    SCOPE_MEMORIES_READ,
    SCOPE_MEMORIES_WRITE,
    ApiToken,
    AuditEvent,
    OAuthConnection,
)
from accounts.tokens.services import token_create
from accounts.write_limits.services import flagged_write_note, write_admit
from memories.models import AgentSession, Memory
from tests.accounts.oauth.oauth_flow import API_RESOURCE, Flow, dcr_client

pytestmark = pytest.mark.django_db

MEMORY = {
    "title": "Pin the base image by digest",
    "description": "Reproducible container builds",
    "content": "FROM python:3.12-slim@sha256:… keeps CI and production on the same bytes; bump it on purpose.",
    "outcome": "success",
}
ADMIN_SCOPES = [SCOPE_ADMIN, SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE]


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def make(org: Any, **kwargs: Any) -> tuple[APIClient, ApiToken]:
    token, raw = token_create(organization=org, label=kwargs.pop("label", "agent"), **kwargs)
    return bearer(raw), token


def suspend(token: ApiToken) -> None:
    """A burst of flagged writes, as the quarantine reports them."""
    for _ in range(3):
        flagged_write_note(principal_for_token(token))
    token.refresh_from_db()
    assert token.write_suspended_at is not None


def write_routes() -> list[tuple[str, str, str]]:
    """(method, url, route name) of every REST route whose method needs ``memories:write``, found in the
    URL conf: a write route added later is covered without editing this test."""
    found = []

    def walk(resolver: URLResolver, prefix: str = "") -> None:
        for entry in resolver.url_patterns:
            if isinstance(entry, URLResolver):
                walk(entry, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern) and entry.name:
                view = getattr(entry.callback, "view_class", None)
                if view is None or not issubclass(view, OrgAPIView):
                    continue
                for method, scope in view.required_scopes.items():
                    if method not in SAFE_METHODS and scope == SCOPE_MEMORIES_WRITE:
                        kwargs = {name: "1" for name in entry.pattern.regex.groupindex}
                        found.append((method, reverse(entry.name, kwargs=kwargs), entry.name))

    walk(get_resolver())
    return found


def test_the_write_routes_found_are_the_banks_writes():
    names = {name for _, _, name in write_routes()}
    assert {
        "api-memories",
        "api-memory",
        "api-memory-feedback",
        "api-memory-outcome",
        "api-memory-archive",
        "api-memory-restore",
        "api-sessions",
        "api-session-code-report",
    } <= names
    assert "api-memory-search" not in names  # a search needs memories:read only


@pytest.mark.usefixtures("minute_room")
def test_every_write_route_answers_429_with_retry_after_once_the_token_is_over_its_limit(cast, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 1
    client, token = make(cast.org_a)
    write_admit(principal_for_token(token))  # the minute's one write
    audits = AuditEvent.objects.count()
    for method, url, name in write_routes():
        answer = getattr(client, method.lower())(url, {}, format="json")
        assert answer.status_code == 429, (name, answer.status_code, answer.content)
        body = answer.json()
        assert body["code"] == "write_limited" and 1 <= int(answer["Retry-After"]) <= 60, name
        assert f"token {token.prefix}… has made 1 write this minute" in body["detail"]
        assert "WRITE_LIMIT_TOKEN_PER_MINUTE" in body["detail"] and "retry in" in body["detail"]
    assert AuditEvent.objects.count() == audits


@pytest.mark.usefixtures("minute_room")
def test_a_record_over_the_limit_writes_nothing_and_one_within_it_is_stored(cast, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 2
    client, _ = make(cast.org_a, projects=[cast.project_a])
    first = client.post("/api/v1/memories", MEMORY, format="json")
    second = client.post("/api/v1/memories", {**MEMORY, "title": "Another lesson on base images"}, format="json")
    third = client.post("/api/v1/memories", {**MEMORY, "title": "A third lesson on base images"}, format="json")
    assert (first.status_code, second.status_code, third.status_code) == (201, 201, 429)
    assert Memory.objects.count() == 2
    assert "Nothing was written" in third.json()["detail"]


@pytest.mark.usefixtures("minute_room")
def test_the_organizations_limit_names_the_plan_and_where_it_changes(cast, settings, monkeypatch):
    from accounts.plans.catalogue import PLANS

    monkeypatch.setitem(PLANS["pro"].limits, "token_writes_per_minute", 3)
    monkeypatch.setitem(PLANS["pro"].limits, "org_writes_per_minute", 6)
    client, _ = make(cast.org_a, projects=[cast.project_a])
    for label in ("one", "two"):
        _, other = make(cast.org_a, label=label)
        for _ in range(3):
            write_admit(principal_for_token(other))
    answer = client.post("/api/v1/memories", MEMORY, format="json")
    assert answer.status_code == 429
    detail = answer.json()["detail"]
    assert "organization 'acme' has made 6 writes this minute" in detail
    assert "its limit on the pro plan (org_writes_per_minute)" in detail and "/settings/plan/" in detail


def test_reads_are_never_charged(cast, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 1
    client, token = make(cast.org_a, projects=[cast.project_a])
    write_admit(principal_for_token(token))
    assert client.get("/api/v1/memories").status_code == 200
    assert client.post("/api/v1/memories/search", {"query": "base image"}, format="json").status_code == 200


def test_a_suspended_tokens_writes_are_403_naming_why_and_who_lifts_it_and_its_reads_go_on(cast):
    client, token = make(cast.org_a, projects=[cast.project_a])
    suspend(token)
    for method, url, name in write_routes():
        answer = getattr(client, method.lower())(url, {}, format="json")
        assert answer.status_code == 403 and answer.json()["code"] == "write_suspended", name
    record = client.post("/api/v1/memories", MEMORY, format="json")
    detail = record.json()["detail"]
    assert "may not write to 'acme'" in detail and "instruction-smell detector" in detail
    assert f"POST /api/v1/tokens/{token.pk}/unsuspend" in detail and "owner or admin" in detail
    session = client.post(
        "/api/v1/sessions", {"session_id": "s-1", "outcome": "success", "trace": "user: hi"}, format="json"
    )
    assert session.status_code == 403
    assert not Memory.objects.exists() and not AgentSession.objects.exists()
    assert client.get("/api/v1/memories").status_code == 200


@pytest.mark.usefixtures("minute_room")
def test_an_import_counts_as_one_write_and_a_suspended_admin_token_cannot_import(cast, settings):
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = 1
    client, token = make(cast.org_a, scopes=ADMIN_SCOPES)
    body = {"format": "claude-md", "text": "## Builds\n\n- Pin the base image by digest so CI matches production.\n"}
    assert client.post("/api/v1/import", {**body, "dry_run": True}, format="json").status_code == 200  # not charged
    assert client.post("/api/v1/import", body, format="json").status_code == 200
    again = client.post("/api/v1/import", body, format="json")
    assert again.status_code == 429 and again.json()["code"] == "write_limited"
    settings.WRITE_LIMIT_TOKEN_PER_MINUTE = None
    suspend(token)
    refused = client.post("/api/v1/import", body, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "write_suspended"


# --- listing and lifting suspensions ------------------------------------------------------------------


def connected_app(user: Any, org: str) -> tuple[OAuthConnection, str]:
    """An app ``user`` connected to ``org`` through the real OAuth flow, and its access token for the API."""
    web = Client()
    web.force_login(user)
    tokens = Flow(dcr_client(Client()), resources=[API_RESOURCE]).tokens(web, org=org)
    return OAuthConnection.objects.select_related("application", "user").get(organization__slug=org), tokens[
        "access_token"
    ]


@pytest.mark.cross_tenant("api-write-suspensions")
def test_admins_list_their_organizations_suspended_tokens_and_apps_only(cast):
    admin, _ = make(cast.org_a, scopes=ADMIN_SCOPES)
    _, leaked = make(cast.org_a, label="leaked laptop")
    _, globex = make(cast.org_b, label="globex agent")
    suspend(leaked)
    suspend(globex)
    app, raw = connected_app(cast.alice, "acme")
    for _ in range(3):
        flagged_write_note(_oauth_principal(raw))
    body = admin.get("/api/v1/write-suspensions").json()
    assert body["count"] == 2
    kinds = {(row["kind"], row["id"]) for row in body["results"]}
    assert kinds == {("token", leaked.pk), ("connected_app", app.pk)}
    token_row = next(row for row in body["results"] if row["kind"] == "token")
    assert token_row["prefix"] == leaked.prefix and token_row["token_label"] == "leaked laptop"
    assert token_row["unsuspend"] == f"POST /api/v1/tokens/{leaked.pk}/unsuspend"
    app_row = next(row for row in body["results"] if row["kind"] == "connected_app")
    assert app_row["user"] == "alice@acme.test" and app_row["unsuspend"].endswith(f"/connected-apps/{app.pk}/unsuspend")
    assert globex.prefix not in str(body)


def _oauth_principal(raw: str) -> Any:
    from accounts.oauth.services import oauth_authenticate

    principal = oauth_authenticate(raw, resource=API_RESOURCE)
    assert principal is not None and principal.oauth_connection is not None
    return principal


@pytest.mark.cross_tenant("api-token-unsuspend")
def test_an_admin_lifts_a_token_of_their_organization_and_another_organizations_is_a_404(cast):
    admin, admin_token = make(cast.org_a, scopes=ADMIN_SCOPES)
    leaked_client, leaked = make(cast.org_a, projects=[cast.project_a])
    _, globex = make(cast.org_b)
    suspend(leaked)
    suspend(globex)
    foreign = admin.post(f"/api/v1/tokens/{globex.pk}/unsuspend", {}, format="json")
    assert foreign.status_code == 404
    globex.refresh_from_db()
    assert globex.write_suspended_at is not None
    lifted = admin.post(f"/api/v1/tokens/{leaked.pk}/unsuspend", {}, format="json")
    assert lifted.status_code == 200, lifted.content
    assert lifted.json() == {
        "kind": "token",
        "id": leaked.pk,
        "label": f"Token {leaked.prefix}… (agent)",
        "message": f"Token {leaked.prefix}… (agent) may write again.",
    }
    audit = AuditEvent.objects.get(verb="token.write_unsuspend")
    assert audit.organization == cast.org_a and audit.actor_token == admin_token and audit.target_id == str(leaked.pk)
    assert leaked_client.post("/api/v1/memories", MEMORY, format="json").status_code == 201
    again = admin.post(f"/api/v1/tokens/{leaked.pk}/unsuspend", {}, format="json")
    assert again.status_code == 409 and "not suspended" in again.json()["detail"]
    assert admin.post("/api/v1/tokens/not-a-number/unsuspend", {}, format="json").status_code == 404


@pytest.mark.cross_tenant("api-connected-app-unsuspend")
def test_an_admin_lifts_a_connected_app_of_their_organization_and_another_organizations_is_a_404(cast):
    admin, _ = make(cast.org_a, scopes=ADMIN_SCOPES)
    app, raw = connected_app(cast.alice, "acme")
    globex_app, globex_raw = connected_app(cast.charlie, "globex")
    for principal in (_oauth_principal(raw), _oauth_principal(globex_raw)):
        for _ in range(3):
            flagged_write_note(principal)
    record = bearer(raw).post("/api/v1/memories", MEMORY, format="json")
    assert record.status_code == 403 and "/api/v1/connected-apps/" in record.json()["detail"]
    assert admin.post(f"/api/v1/connected-apps/{globex_app.pk}/unsuspend", {}, format="json").status_code == 404
    globex_app.refresh_from_db()
    assert globex_app.write_suspended_at is not None
    lifted = admin.post(f"/api/v1/connected-apps/{app.pk}/unsuspend", {}, format="json")
    assert lifted.status_code == 200 and lifted.json()["kind"] == "connected_app"
    app.refresh_from_db()
    assert app.write_suspended_at is None
    assert AuditEvent.objects.filter(verb="token.write_unsuspend", target_type="oauthconnection").count() == 1


def test_tokens_without_the_admin_scope_or_restricted_to_projects_cannot_list_or_lift(cast):
    _, leaked = make(cast.org_a)
    suspend(leaked)
    writer, _ = make(cast.org_a)  # memories:read, memories:write, consolidation:run
    restricted, _ = make(cast.org_a, scopes=ADMIN_SCOPES, projects=[cast.project_a])
    for client in (writer, restricted):
        assert client.get("/api/v1/write-suspensions").status_code == 403
        assert client.post(f"/api/v1/tokens/{leaked.pk}/unsuspend", {}, format="json").status_code == 403
    leaked.refresh_from_db()
    assert leaked.write_suspended_at is not None and not AuditEvent.objects.filter(verb="token.write_unsuspend")


def test_a_lift_takes_no_body_fields(cast):
    admin, _ = make(cast.org_a, scopes=ADMIN_SCOPES)
    _, leaked = make(cast.org_a)
    suspend(leaked)
    answer = admin.post(f"/api/v1/tokens/{leaked.pk}/unsuspend", {"force": True}, format="json")
    assert answer.status_code == 400 and "force" in answer.json()["errors"]
