"""Every error under ``/api/``, ``/oauth/``, ``/.well-known/`` and ``/mcp`` is JSON in the one error shape
(docs/security/http-hardening.md#one-error-shape), whoever answers it: the service's own views and
guards, Django (404, 405, CSRF), drf-spectacular, the MCP SDK, uvicorn's 500 — with ``DEBUG`` off, as
users run it, and on. Dashboard pages keep their HTML.

The table goes through the composed ASGI app as uvicorn serves it (``reasoningbank/asgi.py``); the
net itself (``reasoningbank/asgi_errors.py``) is then driven with small ASGI apps of its own."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from reasoningbank.asgi_errors import HELD_BODY_MAX, JsonErrorsASGI
from tests.mcp_harness import MCP_HEADERS, http_client, in_thread, initialize_body

SHAPE = {"detail", "code", "errors"}
JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
TEXT = {"Content-Type": "text/plain"}
COOKIES = {"Cookie": "csrftoken=" + "c" * 32 + "; sessionid=not-a-session"}  # a browser's, without a CSRF token
HUGE = {"Content-Length": str(50 * 1024 * 1024)}  # declared: refused before a byte is read


@dataclass(frozen=True)
class Row:
    method: str
    path: str
    status: int
    code: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    token: bool = False  # send a valid bearer token (else none)

    def __str__(self) -> str:
        return f"{self.method} {self.path} {self.headers.get('Content-Type', '')}".strip()


def area(path: str) -> str:
    if path.startswith("/api"):
        return "api"
    if path.startswith("/mcp"):
        return "mcp"
    return "oauth"  # /oauth/ and /.well-known/


WRONG_CONTENT_TYPE = [
    Row("POST", "/api/v1/memories", 415, "unsupported_media_type", TEXT, b"title=x", token=True),
    Row("POST", "/oauth/token/", 400, "invalid_request", JSON, b'{"grant_type": "authorization_code"}'),
    Row("POST", "/oauth/register/", 400, "invalid_client_metadata", TEXT, b"client_name=x"),
    Row("POST", "/.well-known/oauth-authorization-server", 405, "method_not_allowed", TEXT, b"x"),
    Row("POST", "/mcp", 415, "unsupported_media_type", {**MCP_HEADERS, **TEXT}, b"hello", token=True),
    Row("POST", "/mcp", 406, "not_acceptable", {**JSON, "Accept": "text/html"}, b"{}", token=True),
    Row("POST", "/mcp", 400, "parse_error", MCP_HEADERS, b"{not json", token=True),
]
WRONG_METHOD = [
    Row("PUT", "/api/v1/me", 405, "method_not_allowed", JSON, b"{}", token=True),
    Row("POST", "/api/v1/", 405, "method_not_allowed", JSON, b"{}"),
    Row("POST", "/api/schema/", 405, "method_not_allowed", JSON, b"{}"),
    Row("DELETE", "/api/docs/", 405, "method_not_allowed"),
    Row("GET", "/oauth/token/", 405, "method_not_allowed"),
    Row("GET", "/oauth/register/", 405, "method_not_allowed"),
    Row("PUT", "/oauth/revoke/", 405, "method_not_allowed", FORM, b"token=x"),
    Row("POST", "/.well-known/oauth-protected-resource/mcp", 405, "method_not_allowed", JSON, b"{}"),
    Row("DELETE", "/.well-known/oauth-protected-resource/api/v1", 405, "method_not_allowed"),
    Row("PUT", "/mcp", 405, "method_not_allowed", MCP_HEADERS, b"{}", token=True),
    Row("DELETE", "/mcp", 405, "method_not_allowed", token=True),
    Row("GET", "/mcp", 405, "method_not_allowed", token=True),
]
# a browser-like POST (cookies, no CSRF token): the machine paths authenticate by token, never by cookie,
# so none of them answers with Django's CSRF page
NO_CSRF_TOKEN = [
    Row("POST", "/.well-known/oauth-authorization-server", 405, "method_not_allowed", {**COOKIES, **JSON}, b"{}"),
    Row("POST", "/oauth/token/", 400, "unsupported_grant_type", {**COOKIES, **FORM}, b"grant_type=telepathy"),
    Row("POST", "/oauth/register/", 400, "invalid_client_metadata", {**COOKIES, **JSON}, b"[]"),
    Row("POST", "/api/v1/memories", 401, "not_authenticated", {**COOKIES, **JSON}, b"{}"),
    Row("POST", "/api/v1/", 405, "method_not_allowed", {**COOKIES, **JSON}, b"{}"),
    Row("POST", "/mcp", 401, "not_authenticated", {**COOKIES, **MCP_HEADERS}, json.dumps(initialize_body()).encode()),
]
UNKNOWN_PATH = [
    Row("GET", "/api/v1/nothing-here", 404, "not_found", token=True),
    Row("POST", "/api/nothing-here", 404, "not_found", JSON, b"{}"),
    Row("GET", "/oauth/nothing-here/", 404, "not_found"),
    Row("POST", "/oauth/nothing-here", 404, "not_found", FORM, b"a=b"),
    Row("GET", "/.well-known/openid-configuration", 404, "not_found"),
    Row("GET", "/.well-known/oauth-protected-resource", 404, "not_found"),
    Row("POST", "/.well-known/security.txt", 404, "not_found", JSON, b"{}"),
    Row("GET", "/mcp/nothing-here", 404, "not_found", token=True),
]
OVERSIZE = [
    Row("POST", "/api/v1/memories", 413, "too_large", {**JSON, **HUGE}, token=True),
    Row("POST", "/oauth/token/", 413, "too_large", {**FORM, **HUGE}),
    Row("POST", "/oauth/register/", 413, "too_large", {**JSON, **HUGE}),
    Row("POST", "/.well-known/oauth-authorization-server", 413, "too_large", {**JSON, **HUGE}),
    Row("POST", "/mcp", 413, "too_large", {**MCP_HEADERS, **HUGE}, token=True),
]
TABLE = {
    "wrong content type": WRONG_CONTENT_TYPE,
    "wrong method": WRONG_METHOD,
    "no CSRF token": NO_CSRF_TOKEN,
    "unknown path": UNKNOWN_PATH,
    "oversize body": OVERSIZE,
}


def problems_with(row: Row, response: Any) -> list[str]:
    """What is wrong with ``response`` as the answer to ``row`` (nothing: an empty list)."""
    seen = f"{row} → {response.status_code} {response.headers.get('content-type')} {response.text[:160]!r}"
    if response.status_code != row.status:
        return [f"{seen}: expected {row.status}"]
    if response.headers.get("content-type", "").split(";")[0] != "application/json":
        return [f"{seen}: not JSON"]
    body = response.json()
    problems = []
    if not (isinstance(body, dict) and SHAPE <= body.keys()):
        return [f"{seen}: not the error shape"]
    if not (isinstance(body["detail"], str) and body["detail"].strip() and isinstance(body["errors"], dict)):
        problems.append(f"{seen}: detail or errors malformed")
    if body["code"] != row.code:
        problems.append(f"{seen}: code {body['code']!r}, expected {row.code!r}")
    kind = area(row.path)
    if kind == "api" and set(body) != SHAPE:
        problems.append(f"{seen}: REST errors hold exactly {sorted(SHAPE)}")
    if kind == "oauth" and not (isinstance(body.get("error"), str) and isinstance(body.get("error_description"), str)):
        problems.append(f"{seen}: no RFC 6749 error / error_description")
    if kind == "mcp":
        rpc = body.get("error")
        jsonrpc = isinstance(rpc, dict) and body.get("jsonrpc") == "2.0" and isinstance(rpc.get("message"), str)
        if not (jsonrpc or isinstance(rpc, str)):  # a JSON-RPC error, or RFC 6750's for a 401/429
            problems.append(f"{seen}: neither a JSON-RPC error nor an RFC 6750 one")
    return problems


@pytest.fixture
async def served(app, cast, make_token) -> tuple[Any, str]:
    raw, _ = await in_thread(lambda: make_token(cast.org_a, scopes=["memories:read", "memories:write"]))
    return app, raw


async def answers(app: Any, raw: str, rows: list[Row]) -> list[str]:
    problems: list[str] = []
    for row in rows:
        async with http_client(app, raw if row.token else None) as http:
            response = await http.request(row.method, row.path, headers=row.headers, content=row.body)
        problems += problems_with(row, response)
    return problems


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # the app's threads close theirs


# --- the table: prefixes × failure kinds ---------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
@pytest.mark.parametrize("kind", list(TABLE))
async def test_every_error_under_the_machine_paths_is_json_in_the_error_shape(served, settings, kind, debug):
    settings.DEBUG = debug
    app, raw = served
    assert await answers(app, raw, TABLE[kind]) == []


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_dashboard_pages_keep_their_html_errors(served, settings):
    settings.DEBUG = False
    app, _ = served
    async with http_client(app) as http:
        unknown = await http.get("/nothing-here/")
        not_mcp = await http.get("/mcpx")
        login_without_csrf = await http.post("/accounts/login/", headers={**COOKIES, **FORM}, content=b"login=a")
        consent_without_csrf = await http.post("/oauth/authorize/", headers={**COOKIES, **FORM}, content=b"allow=1")
    for response, status in [(unknown, 404), (not_mcp, 404), (login_without_csrf, 403), (consent_without_csrf, 403)]:
        assert response.status_code == status and response.headers["content-type"].startswith("text/html")


def test_every_view_under_the_machine_paths_is_exempt_from_csrf():
    """They authenticate by bearer token (or by nothing: metadata, registration, the token endpoint),
    never by a session cookie, so a CSRF check could only ever refuse a legitimate client."""
    from django.urls import get_resolver

    def walk(patterns: Any, prefix: str = "") -> Any:
        for pattern in patterns:
            route = prefix + str(pattern.pattern).lstrip("^")
            if hasattr(pattern, "url_patterns"):
                yield from walk(pattern.url_patterns, route)
            else:
                yield route, pattern.callback

    machine = [
        (route, view)
        for route, view in walk(get_resolver().url_patterns)
        if route.startswith(("api/", "oauth/", "\\.well-known/", ".well-known/"))
        and not route.startswith("oauth/authorize/")
    ]
    assert len(machine) > 30
    assert [route for route, view in machine if not getattr(view, "csrf_exempt", False)] == []


def test_a_csrf_refusal_is_json_under_the_machine_paths_and_djangos_page_elsewhere(rf):
    from django.http import HttpResponse
    from django.middleware.csrf import CsrfViewMiddleware

    def view(request: Any) -> HttpResponse:
        return HttpResponse("served")

    guard = CsrfViewMiddleware(lambda request: HttpResponse())
    api = guard.process_view(rf.post("/api/v1/memories", secure=False), view, (), {})
    well_known = guard.process_view(rf.post("/.well-known/oauth-authorization-server"), view, (), {})
    page = guard.process_view(rf.post("/settings/tokens/"), view, (), {})

    assert api.status_code == 403 and json.loads(api.content)["code"] == "csrf_failed"
    assert set(json.loads(api.content)) == SHAPE and "CSRF cookie not set" in json.loads(api.content)["detail"]
    assert well_known.status_code == 403 and json.loads(well_known.content)["error"] == "invalid_request"
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html")


# --- the net itself ----------------------------------------------------------------------------------


async def call(
    app: Any, path: str, method: str = "GET", into: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """``app`` behind the net, once: the messages it sent (also appended to ``into``)."""
    sent: list[dict[str, Any]] = [] if into is None else into

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": [(b"content-type", b"text/plain")]}
    await JsonErrorsASGI(app)(scope, receive, send)
    return sent


def answering(status: int, body: bytes, content_type: bytes, *chunks: bytes) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        headers = [(b"content-type", content_type), (b"x-request-id", b"req-1"), (b"allow", b"POST")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": body})

    return app


def received(sent: list[dict[str, Any]]) -> tuple[int, dict[bytes, bytes], bytes]:
    start, bodies = sent[0], sent[1:]
    return start["status"], dict(start["headers"]), b"".join(m.get("body", b"") for m in bodies)


@pytest.mark.anyio
async def test_an_app_that_raises_before_answering_is_a_json_500_and_the_error_still_propagates():
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("a bug")

    sent: list[dict[str, Any]] = []
    with pytest.raises(RuntimeError):  # the server still logs it as the bug it is
        await call(broken, "/oauth/token/", "POST", into=sent)
    status, headers, body = received(sent)
    assert status == 500 and headers[b"content-type"] == b"application/json"
    assert json.loads(body)["error"] == "server_error" and json.loads(body)["code"] == "server_error"


@pytest.mark.anyio
async def test_a_plain_text_error_becomes_json_keeping_its_words_and_headers():
    sent = await call(answering(400, b"Invalid Content-Type header", b"text/plain"), "/mcp", "POST")
    status, headers, body = received(sent)
    data = json.loads(body)
    assert status == 400 and headers[b"content-type"] == b"application/json"
    assert headers[b"x-request-id"] == b"req-1" and headers[b"content-length"] == str(len(body)).encode()
    assert data["detail"] == data["error"]["message"] == "Invalid Content-Type header"
    assert data["code"] == "bad_request" and data["jsonrpc"] == "2.0" and data["id"] is None


@pytest.mark.anyio
async def test_an_html_405_says_which_methods_are_allowed():
    sent = await call(answering(405, b"<h1>405</h1>", b"text/html"), "/api/docs/", "DELETE")
    _, _, body = received(sent)
    assert json.loads(body) == {
        "detail": "Method DELETE is not allowed at '/api/docs/' (allowed: POST).",
        "code": "method_not_allowed",
        "errors": {},
    }


@pytest.mark.anyio
async def test_an_error_already_in_the_shape_goes_out_byte_for_byte():
    shaped = json.dumps({"detail": "No.", "code": "invalid", "errors": {"title": ["is required"]}}).encode()
    sent = await call(answering(400, shaped[10:], b"application/json", shaped[:10]), "/api/v1/memories", "POST")
    assert received(sent)[2] == shaped


@pytest.mark.anyio
async def test_a_jsonrpc_error_gets_the_shapes_keys_from_its_message():
    rpc = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
    sent = await call(answering(400, rpc, b"application/json"), "/mcp", "POST")
    data = json.loads(received(sent)[2])
    assert data["error"] == {"code": -32700, "message": "Parse error"}
    assert (data["detail"], data["code"], data["errors"]) == ("Parse error", "parse_error", {})


@pytest.mark.anyio
async def test_a_long_json_error_is_passed_on_unheld_and_a_long_page_is_still_replaced():
    long_json = b'{"detail": "' + b"x" * (HELD_BODY_MAX + 10) + b'", "code": "invalid", "errors": {}}'
    sent = await call(answering(400, long_json[-10:], b"application/json", long_json[:-10]), "/api/v1/x", "POST")
    assert received(sent)[2] == long_json

    page = b"<p>" + b"y" * (HELD_BODY_MAX + 10)
    sent = await call(answering(404, b"</p>", b"text/html", page), "/api/v1/x")
    assert json.loads(received(sent)[2])["code"] == "not_found"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("path", "method", "status", "content_type"),
    [
        ("/settings/", "GET", 404, b"text/html"),  # a dashboard page keeps its HTML
        ("/api/v1/x", "HEAD", 404, b"text/html"),  # an answer to HEAD has no body to shape
        ("/api/v1/x", "GET", 200, b"text/plain"),  # not an error
        ("/api/v1/x", "GET", 302, b"text/html"),
    ],
)
async def test_pages_successes_redirects_and_head_pass_untouched(path, method, status, content_type):
    sent = await call(answering(status, b"original", content_type), path, method)
    got_status, headers, body = received(sent)
    assert (got_status, headers[b"content-type"], body) == (status, content_type, b"original")
