"""A NUL byte in a URL is a 404 (path) or a 400 (query), never a 500 (issue 11, item 10).

PostgreSQL cannot store or even compare text containing NUL, so an id such as ``ab%00c`` used to
reach the database and fail there. ``NulByteGuardMiddleware`` answers before any view runs.
"""

from __future__ import annotations

import pytest

REST_PATHS = [
    "/api/v1/sessions/ab%00c",
    "/api/v1/sessions/ab%00c/retry",
    "/api/v1/consolidation/runs/ab%00c",
    "/api/v1/memories/ab%00c",
    "/api/v1/consolidation/disputes/ab%00c/resolve",
]
DASHBOARD_PATHS = [
    "/sessions/ab%00c/",
    "/sessions/ab%00c/retry/",
    "/consolidation/runs/ab%00c/",
    "/memories/ab%00c/",
]


@pytest.mark.parametrize("path", REST_PATHS)
@pytest.mark.parametrize("method", ["get", "post"])
def test_a_nul_byte_in_a_rest_path_id_is_a_json_404(cast, token_client, path, method):
    client = token_client(cast.org_a)
    response = getattr(client, method)(path)
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found.", "code": "not_found", "errors": {}}


@pytest.mark.parametrize("path", DASHBOARD_PATHS)
@pytest.mark.parametrize("method", ["get", "post"])
def test_a_nul_byte_in_a_dashboard_path_id_is_a_404_page(client, cast, path, method):
    client.force_login(cast.alice)
    response = getattr(client, method)(path)
    assert response.status_code == 404


def test_a_nul_byte_in_a_query_value_is_a_400_naming_the_parameter(cast, token_client):
    response = token_client(cast.org_a).get("/api/v1/sessions?status=do%00ne")
    assert response.status_code == 400
    assert response.json()["errors"] == {"status": ["must not contain NUL characters"]}


def test_a_nul_byte_in_a_dashboard_query_is_a_400(client, cast):
    client.force_login(cast.alice)
    response = client.get("/sessions/?status=do%00ne")
    assert response.status_code == 400
    assert 'role="alert"' in response.content.decode() and "status: Null characters" in response.content.decode()
    partial = client.get("/sessions/?status=do%00ne", HTTP_HX_REQUEST="true")
    assert partial.status_code == 400 and "<html" not in partial.content.decode()


def test_ordinary_ids_still_reach_the_views(cast, token_client):
    response = token_client(cast.org_a).get("/api/v1/sessions/ses_missing")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert token_client(cast.org_a).get("/api/v1/sessions?status=done").status_code == 200


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_under_asgi_as_served_a_nul_path_is_a_404_and_a_nul_query_a_400(monkeypatch, settings):
    from django.db import connection

    from reasoningbank.asgi import build_application
    from tests.mcp_harness import http_client, running

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    settings.DEBUG = True  # the issue saw debug pages: the guard answers first either way
    async with running(build_application()) as app, http_client(app) as http:
        rest = await http.get("/api/v1/consolidation/runs/ab%00c")
        page = await http.get("/sessions/ab%00c/retry/")
        query = await http.get("/api/v1/memories?tag=a%00b")
    assert rest.status_code == 404 and rest.json()["code"] == "not_found"
    assert page.status_code == 404
    assert query.status_code == 400 and query.json()["errors"] == {"tag": ["must not contain NUL characters"]}
