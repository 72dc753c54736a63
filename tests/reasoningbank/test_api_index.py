"""``GET /api/v1/``, the API's front door (run.sh's banner links it): a small public JSON document that
names the docs, the schema and the main resources, and holds nothing of any organization."""

from __future__ import annotations

from django.urls import resolve


def test_the_api_index_answers_without_a_token_and_names_docs_schema_and_resources(client):
    response = client.get("/api/v1/")

    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["docs"] == "/api/docs/"
    assert body["schema"] == "/api/schema/"
    assert body["mcp"] == "/mcp"
    assert "Bearer" in body["authentication"]
    assert {"me", "projects", "memories", "memory_search", "export", "import", "consolidation_runs"} <= set(
        body["resources"]
    )


def test_every_link_of_the_index_is_a_route_of_the_api(client):
    body = client.get("/api/v1/").json()

    for path in [body["docs"], body["schema"], *body["resources"].values()]:
        match = resolve(path)
        assert match.url_name != "api_not_found" and match.func.__name__ != "api_not_found", path


def test_the_index_is_the_same_with_a_token_and_shows_nothing_of_the_tokens_org(cast, token_client, client):
    with_token = token_client(cast.org_a).get("/api/v1/")

    assert with_token.status_code == 200
    assert with_token.json() == client.get("/api/v1/").json()
    assert cast.org_a.slug not in with_token.content.decode()
