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
    assert "Invalid" in response.json()["detail"]


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
