"""The guards in front of the whole ASGI app, as uvicorn serves it (reasoningbank/asgi_guards.py):
bodies read or refused before any parser (chunked bodies are read, never taken as empty; an over-size
one is a 413 before it is read), the refusals of ``/mcp`` in the one error shape, and the client's
address taken from ``X-Forwarded-For`` only behind ``TRUSTED_PROXIES``."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from memories.models import Memory
from reasoningbank.asgi_guards import forwarded_client, trusted_networks
from tests.mcp_harness import MCP_HEADERS, http_client, in_thread, initialize_body

SHAPE = {"detail", "code", "errors"}
WRITE = ["memories:read", "memories:write"]
LESSON = {
    "title": "Stop at the first failing test",
    "description": "Run pytest with -x while fixing a regression",
    "content": "Use pytest -x to stop at the first failure; it saves minutes on a slow suite.",
    "outcome": "success",
    "project": "web-app",
}


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # the app's threads close theirs


async def _chunks(*parts: bytes) -> Any:
    for part in parts:
        yield part


@pytest.fixture
async def served(app, cast, make_token) -> Any:
    """(raw token with memories:read/write, the started ASGI app)."""
    raw, _ = await in_thread(lambda: make_token(cast.org_a, scopes=[*WRITE, "admin"]))
    return raw, app


# --- bodies --------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_chunked_body_is_read_and_reaches_the_view(served):
    raw, app = served
    body = json.dumps(LESSON).encode()
    async with http_client(app, raw) as http:
        response = await http.post(
            "/api/v1/memories", content=_chunks(body[:40], body[40:]), headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 201, response.text
    assert await in_thread(lambda: Memory.objects.filter(title=LESSON["title"]).count()) == 1


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_chunked_body_over_the_limit_is_a_json_413(served, settings):
    raw, app = served
    settings.REQUEST_MAX_BYTES = 64 * 1024
    async with http_client(app, raw) as http:
        response = await http.post(
            "/api/v1/memories",
            content=_chunks(b'{"title": "', b"x" * (40 * 1024), b"x" * (40 * 1024), b'"}'),
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 413
    assert response.json()["code"] == "too_large" and response.headers["x-request-id"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read(app, settings):
    settings.REQUEST_MAX_BYTES = 64 * 1024
    read = []

    async def receive() -> dict[str, Any]:
        read.append(True)
        return {"type": "http.request", "body": b"", "more_body": False}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/oauth/register/", "raw_path": b"/oauth/register/", "query_string": b"",
        "root_path": "", "headers": [(b"host", b"testserver"), (b"content-length", str(10 * 1024 * 1024).encode()),
                                     (b"content-type", b"application/json")],
        "client": ("198.51.100.7", 5000), "server": ("testserver", 80),
    }  # fmt: skip
    await app(scope, receive, send)
    assert read == []  # not one byte of the body was read
    assert sent[0]["status"] == 413
    body = json.loads(sent[1]["body"])
    assert SHAPE <= body.keys() and body["code"] == "too_large" and body["error"] == "invalid_request"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path", ["/api/v1/memories", "/oauth/register/", "/mcp"])
async def test_ten_megabytes_are_a_json_413_on_every_area(served, path):
    raw, app = served
    async with http_client(app, raw) as http:
        response = await http.post(path, content=b'{"x": "' + b"x" * (10 * 1024 * 1024) + b'"}', headers=MCP_HEADERS)
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/json"
    assert SHAPE <= response.json().keys() and response.json()["code"] == "too_large"


# --- /mcp ----------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_json_deeper_than_the_limit_is_a_400_in_the_shape_and_a_jsonrpc_parse_error(served):
    raw, app = served
    deep = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "memory_search", "arguments": {}}}
    text = json.dumps(deep).replace('"arguments": {}', '"arguments": {"query": ' + "[" * 100 + "]" * 100 + "}")
    async with http_client(app, raw) as http:
        response = await http.post("/mcp", content=text, headers=MCP_HEADERS)
    assert response.status_code == 400
    body = response.json()
    assert SHAPE <= body.keys() and body["code"] == "parse_error"
    assert body["error"]["code"] == -32700 and body["error"]["message"] == body["detail"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_refusals_before_the_sdk_share_the_shape(served):
    raw, app = served
    async with http_client(app, raw) as http:
        wrong_host = await http.post("/mcp", json=initialize_body(), headers={**MCP_HEADERS, "Host": "evil.example"})
        anonymous = await http.post(
            "/mcp", json=initialize_body(), headers={**MCP_HEADERS, "Authorization": "Bearer rb_not_a_token"}
        )
    assert wrong_host.status_code == 421 and wrong_host.json()["code"] == "invalid_host"
    assert SHAPE <= wrong_host.json().keys() and wrong_host.json()["error"]["code"] == -32600
    assert anonymous.status_code == 401
    assert SHAPE <= anonymous.json().keys() and anonymous.json()["error"] == "invalid_token"
    assert anonymous.json()["code"] == "authentication_failed"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_mcp_sdk_client_reads_a_refusal_as_the_calls_error(served, settings):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    from tests.mcp_harness import MCP_URL

    raw, app = served
    async with http_client(app, raw) as http, Client(streamable_http_client(MCP_URL, http_client=http)) as client:
        settings.REQUEST_MAX_BYTES = 64 * 1024
        with pytest.raises(MCPError) as refused:
            await client.call_tool("memory_search", {"query": "x" * (70 * 1024)})
    assert "larger than this endpoint accepts" in str(refused.value)


# --- client addresses ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("peer", "forwarded", "trusted", "client"),
    [
        ("127.0.0.1", "203.0.113.9", [], "127.0.0.1"),  # nobody trusted by default: the header is ignored
        ("198.51.100.7", "203.0.113.9", ["127.0.0.1"], "198.51.100.7"),  # the peer is not a trusted proxy
        ("127.0.0.1", "203.0.113.9", ["127.0.0.1"], "203.0.113.9"),
        ("10.0.0.5", "1.2.3.4, 203.0.113.9, 10.0.0.4", ["10.0.0.0/8"], "203.0.113.9"),  # client-written 1.2.3.4
        ("10.0.0.5", "10.0.0.9, 10.0.0.4", ["10.0.0.0/8"], "10.0.0.9"),  # only proxies: the leftmost
        ("10.0.0.5", "garbage, 203.0.113.9", ["10.0.0.0/8"], "203.0.113.9"),
        ("10.0.0.5", "203.0.113.9, garbage", ["10.0.0.0/8"], "10.0.0.5"),  # malformed next to us: the proxy
        ("::ffff:10.0.0.5", "[2001:db8::1]:443", ["10.0.0.0/8"], "2001:db8::1"),
        ("127.0.0.1", "", ["127.0.0.1"], "127.0.0.1"),
    ],
)
def test_the_client_is_taken_from_x_forwarded_for_only_behind_a_trusted_proxy(peer, forwarded, trusted, client):
    assert forwarded_client(peer, forwarded, trusted_networks(tuple(trusted))) == client


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_spoofed_forwarded_address_does_not_escape_the_bearer_throttle(app, settings):
    """Loopback was trusted by default: every failure with a fresh X-Forwarded-For counted a new address."""
    settings.AUTH_THROTTLE_FAILURES = 3
    async with http_client(app) as http:
        answers = [
            (
                await http.get(
                    "/api/v1/me",
                    headers={"Authorization": f"Bearer rb_bad{n}", "X-Forwarded-For": f"203.0.113.{n}"},
                )
            ).status_code
            for n in range(5)
        ]
    assert answers[:2] == [401, 401] and 429 in answers


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_behind_a_trusted_proxy_each_forwarded_client_is_counted_on_its_own(app, settings):
    settings.AUTH_THROTTLE_FAILURES = 3
    settings.TRUSTED_PROXIES = ["127.0.0.0/8"]  # httpx's in-process transport connects from 127.0.0.1
    async with http_client(app) as http:
        answers = [
            (
                await http.get(
                    "/api/v1/me",
                    headers={"Authorization": f"Bearer rb_bad{n}", "X-Forwarded-For": f"203.0.113.{n}"},
                )
            ).status_code
            for n in range(5)
        ]
    assert answers == [401] * 5


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_counts_the_same_address_as_rest(app, settings):
    settings.AUTH_THROTTLE_FAILURES = 3
    async with http_client(app) as http:
        statuses = []
        for n in range(5):
            headers = {**MCP_HEADERS, "Authorization": f"Bearer rb_bad{n}", "X-Forwarded-For": f"203.0.113.{n}"}
            statuses.append((await http.post("/mcp", json=initialize_body(), headers=headers)).status_code)
    assert 429 in statuses


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_spoofed_forwarded_address_does_not_escape_the_registration_limit(app, settings):
    settings.OAUTH_DCR_RATE_LIMIT = 2
    metadata = {
        "client_name": "agent",
        "redirect_uris": ["https://agent.example/cb"],
        "token_endpoint_auth_method": "none",
    }
    async with http_client(app) as http:
        statuses = [
            (
                await http.post("/oauth/register/", json=metadata, headers={"X-Forwarded-For": f"203.0.113.{n}"})
            ).status_code
            for n in range(4)
        ]
    assert statuses[:2] == [201, 201] and statuses[2:] == [429, 429]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_a_trusted_proxy_also_sets_the_scheme(app, settings):
    metadata = {
        "client_name": "agent",
        "redirect_uris": ["https://agent.example/cb"],
        "token_endpoint_auth_method": "none",
    }
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.5"}
    async with http_client(app) as http:
        ignored = await http.post("/oauth/register/", json=metadata, headers=headers)
        settings.TRUSTED_PROXIES = ["127.0.0.1"]
        believed = await http.post("/oauth/register/", json=metadata, headers=headers)
    assert ignored.json()["registration_client_uri"].startswith("http://testserver/")
    assert believed.json()["registration_client_uri"].startswith("https://testserver/")


def test_httpx_in_process_transport_connects_from_loopback():
    """What the tests above rely on: the in-process client's address is 127.0.0.1, as a local proxy's is."""
    assert httpx2.ASGITransport(app=None).client[0] == "127.0.0.1"  # type: ignore[arg-type]
