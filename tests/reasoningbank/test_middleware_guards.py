"""A NUL byte in a URL is a 404 (path) or a 400 (query), never a 500
(docs/security/http-hardening.md#request-bodies).

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
    settings.DEBUG = True  # debug pages once showed here: the guard answers first either way
    async with running(build_application()) as app, http_client(app) as http:
        rest = await http.get("/api/v1/consolidation/runs/ab%00c")
        page = await http.get("/sessions/ab%00c/retry/")
        query = await http.get("/api/v1/memories?tag=a%00b")
    assert rest.status_code == 404 and rest.json()["code"] == "not_found"
    assert page.status_code == 404
    assert query.status_code == 400 and query.json()["errors"] == {"tag": ["must not contain NUL characters"]}


# --- the body: deep JSON, NUL and size limits answered 4xx in the error shape ---------------------------

DEEP = ('{"a":' * 1000 + "1" + "}" * 1000).encode()
SHAPE = {"detail", "code", "errors"}
# every REST endpoint the red team saw answer a 500 to deep JSON, and the open registration endpoint
DEEP_PATHS = [
    "/api/v1/memories",
    "/api/v1/memories/search",
    "/api/v1/memories/context",
    "/api/v1/import",
    "/oauth/register/",
]


def _server_errors(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")]


@pytest.mark.parametrize("path", DEEP_PATHS)
def test_json_nested_a_thousand_deep_is_a_json_400_in_the_error_shape_never_a_500(cast, token_client, path, caplog):
    client = token_client(cast.org_a, scopes=["memories:read", "memories:write", "admin"])
    response = client.post(path, DEEP, content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert SHAPE <= body.keys() and body["code"] == "parse_error" and "64 levels" in body["detail"]
    if path.startswith("/oauth/"):  # what an OAuth client reads (RFC 7591)
        assert body["error"] == "invalid_client_metadata" and body["error_description"] == body["detail"]
    assert _server_errors(caplog) == []


def test_json_just_within_the_nesting_limit_still_reaches_the_view(cast, token_client):
    nested = "[" * 63 + "]" * 63
    response = token_client(cast.org_a).post(
        "/api/v1/memories/search", f'{{"query": "pytest", "tags": {nested}}}', content_type="application/json"
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid"  # the view judged it
    assert "tags" in response.json()["errors"]


def test_the_nesting_limit_is_a_setting(cast, token_client, settings):
    settings.JSON_MAX_DEPTH = 8
    response = token_client(cast.org_a).post(
        "/api/v1/memories/search", '{"query": [[[[[[[[["x"]]]]]]]]]}', content_type="application/json"
    )
    assert (
        response.status_code == 400
        and response.json()["code"] == "parse_error"
        and "8 levels" in response.json()["detail"]
    )


def test_a_nul_in_a_json_field_is_a_400_naming_the_field(cast, token_client):
    response = token_client(cast.org_a).post(
        "/api/v1/memories/search", b'{"query": "py\\u0000test"}', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input: query: must not contain NUL characters",
        "code": "invalid",
        "errors": {"query": ["must not contain NUL characters"]},
    }


@pytest.mark.parametrize(
    ("path", "data", "field", "error"),
    [
        ("/oauth/token/", {"grant_type": "authorization_code", "client_id": "a\x00b", "code": "x"}, "client_id",
         "invalid_request"),
        ("/oauth/revoke/", {"client_id": "a\x00b", "token": "rbo_x"}, "client_id", "invalid_request"),
        ("/oauth/token/", {"grant_type": "refresh_token", "client_id": "c", "refresh_token": "rbr_\x00"},
         "refresh_token", "invalid_request"),
    ],
)  # fmt: skip
def test_a_nul_in_an_oauth_form_field_is_a_400_in_the_oauth_shape(db, path, data, field, error, caplog):
    from django.test import Client

    response = Client().post(path, data)
    assert response.status_code == 400
    assert response.json() == {
        "error": error,
        "error_description": f"Invalid input: {field}: must not contain NUL characters",
        "detail": f"Invalid input: {field}: must not contain NUL characters",
        "code": "invalid",
        "errors": {field: ["must not contain NUL characters"]},
    }
    assert _server_errors(caplog) == []


def test_a_nul_in_a_registration_is_a_400_invalid_client_metadata(db, caplog):
    from django.test import Client

    response = Client().post(
        "/oauth/register/",
        b'{"client_name": "a\\u0000b", "redirect_uris": ["https://agent.example/cb"]}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"
    assert response.json()["errors"] == {"client_name": ["must not contain NUL characters"]}
    assert _server_errors(caplog) == []


def test_a_body_over_the_limit_is_a_json_413_before_any_view(cast, token_client, settings):
    settings.REQUEST_MAX_BYTES = 64 * 1024
    body = b'{"query": "' + b"x" * (65 * 1024) + b'"}'
    response = token_client(cast.org_a).post("/api/v1/memories/search", body, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "detail": f"The request body is larger than this endpoint accepts ({64 * 1024} bytes).",
        "code": "too_large",
        "errors": {},
    }


def test_ten_megabytes_are_a_json_413_not_djangos_html_400(cast, token_client):
    body = b'{"query": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    response = token_client(cast.org_a).post("/api/v1/memories", body, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json" and response.json()["code"] == "too_large"


def test_the_import_endpoint_takes_a_larger_body_than_the_rest(cast, token_client, settings):
    settings.REQUEST_MAX_BYTES = 64 * 1024
    settings.REQUEST_MAX_BYTES_BY_PATH = {"/api/v1/import": 256 * 1024}
    client = token_client(cast.org_a, scopes=["admin"])
    text = "## Testing\n\nUse pytest -x to stop at the first failure; it saves time.\n" * 1500  # ~100 KB
    within = client.post("/api/v1/import", {"text": text, "format": "claude-md", "dry_run": True}, format="json")
    over = client.post("/api/v1/import", {"text": text * 3, "format": "claude-md"}, format="json")
    assert within.status_code != 413
    assert over.status_code == 413 and over.json()["code"] == "too_large"


def test_a_chunked_body_without_a_length_is_a_411_where_nothing_reads_it(cast, token_client):
    # Django's WSGI side reads a body without Content-Length as empty; under uvicorn the ASGI guard
    # reads it instead (tests/reasoningbank/test_asgi_guards.py)
    response = token_client(cast.org_a).generic(
        "POST", "/api/v1/memories/search", b"", content_type="application/json", HTTP_TRANSFER_ENCODING="chunked"
    )
    assert response.status_code == 411 and response.json()["code"] == "length_required"


def test_a_dashboard_form_with_a_nul_is_a_400_page(client, cast):
    client.force_login(cast.alice)
    response = client.post("/switch-org/", {"org": "ac\x00me"})
    assert response.status_code == 400
    assert 'role="alert"' in response.content.decode() and "org: must not contain NUL" in response.content.decode()


def test_a_500_under_the_api_is_json_in_the_error_shape(cast, token_client, monkeypatch, caplog):
    from rest_framework.test import APIClient

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("accounts.tokens.api.MeView.get", broken)
    client = token_client(cast.org_a)
    assert isinstance(client, APIClient)
    client.raise_request_exception = False
    response = client.get("/api/v1/me")
    assert response.status_code == 500
    assert response.json() == {"detail": "Internal server error.", "code": "server_error", "errors": {}}
