import json

import pytest


def test_me_returns_the_tokens_org_scopes_and_projects(cast, token_client):
    response = token_client(cast.org_a).get("/api/v1/me")
    assert response.status_code == 200
    body = response.json()
    assert body["organization"]["slug"] == "acme"
    assert body["scopes"] == ["consolidation:run", "memories:read", "memories:write"]
    assert [p["slug"] for p in body["projects"]] == ["web-app"]


def test_me_without_a_token_is_401_with_a_bearer_challenge(api_client, cast):
    response = api_client.get("/api/v1/me")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_me_with_an_invalid_token_is_401(api_client, cast):
    api_client.credentials(HTTP_AUTHORIZATION="Bearer rb_nope")
    response = api_client.get("/api/v1/me")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["detail"].startswith("Unknown or revoked API token")


def _challenge(response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer k="v", ...`` challenge."""
    scheme, _, params = response["WWW-Authenticate"].partition(" ")
    assert scheme == "Bearer"
    return dict(part.strip().split("=", 1) for part in params.split(", ") if "=" in part)


@pytest.mark.parametrize(
    "token",
    ["rb_nope", "rbo_an_unknown_or_expired_oauth_token"],
)
def test_a_401_for_a_token_that_was_sent_says_invalid_token(api_client, cast, token):
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    response = api_client.get("/api/v1/me")
    assert response.status_code == 401
    challenge = _challenge(response)
    assert challenge["error"] == '"invalid_token"'
    assert challenge["resource_metadata"].endswith('/.well-known/oauth-protected-resource/api/v1"')


def test_a_401_for_a_revoked_token_says_invalid_token(api_client, cast, make_token):
    from accounts.tokens.services import token_revoke

    raw, principal = make_token(cast.org_a)
    token_revoke(token=principal.token, actor=None)
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    response = api_client.get("/api/v1/me")
    assert response.status_code == 401 and _challenge(response)["error"] == '"invalid_token"'


def test_a_401_without_a_token_or_with_another_scheme_names_no_error(api_client, cast):
    missing = api_client.get("/api/v1/me")
    api_client.credentials(HTTP_AUTHORIZATION="Basic YWxpY2U6c2VjcmV0")
    other_scheme = api_client.get("/api/v1/me")
    assert missing.status_code == other_scheme.status_code == 401
    assert "error" not in _challenge(missing) and "error" not in _challenge(other_scheme)


def test_a_malformed_bearer_header_is_an_invalid_request(api_client, cast):
    api_client.credentials(HTTP_AUTHORIZATION="Bearer two parts")
    response = api_client.get("/api/v1/me")
    assert response.status_code == 401 and _challenge(response)["error"] == '"invalid_request"'


def test_a_token_without_the_read_scope_gets_403_naming_the_scope(cast, token_client):
    response = token_client(cast.org_a, scopes=["consolidation:run"]).get("/api/v1/me")
    assert response.status_code == 403
    assert "memories:read" in response.json()["detail"]


@pytest.mark.cross_tenant("api-projects")
def test_projects_lists_only_the_tokens_own_org(cast, token_client):
    slugs = [p["slug"] for p in token_client(cast.org_b).get("/api/v1/projects").json()["results"]]
    assert slugs == ["billing"]


@pytest.mark.cross_tenant("api-me")
def test_me_of_another_orgs_token_names_only_that_org_and_its_projects(cast, token_client):
    body = token_client(cast.org_b).get("/api/v1/me").json()
    assert body["organization"]["slug"] == "globex"
    assert [p["slug"] for p in body["projects"]] == ["billing"]
    assert "acme" not in json.dumps(body).lower() and "web-app" not in json.dumps(body)


def test_the_openapi_schema_is_public_and_lists_the_api(api_client, db):
    response = api_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert "/api/v1/me" in response.json()["paths"]
