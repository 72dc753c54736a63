"""A refused token says why, the same way on MCP and REST: the 401's ``WWW-Authenticate`` carries
``error`` and ``error_description`` (RFC 6750 section 3), the JSON body the same sentence as ``detail``,
and the official MCP SDK's user can read it (docs/agent-api.md#authentication-errors)."""

from __future__ import annotations

import contextlib
import io
import re
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.tokens.services import token_revoke
from tests.mcp_harness import BASE_URL, MCP_HEADERS, http_client, in_thread, initialize_body, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

DOCS_PAGE = Path(__file__).resolve().parents[3] / "docs" / "agent-api.md"
# RFC 6750 section 3: error_description is printable ASCII without '"' and '\'
RFC6750_DESCRIPTION = re.compile(r"^[\x20\x21\x23-\x5b\x5d-\x7e]+$")


@pytest.fixture(autouse=True)
def _short_lived_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    # the MCP middleware authenticates on worker threads: no connection may outlive the test
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


def challenge_params(header: str) -> dict[str, str]:
    """The parameters of a ``Bearer k="v", ...`` challenge (values may hold commas)."""
    scheme, _, params = header.partition(" ")
    assert scheme == "Bearer"
    return dict(re.findall(r'(\w+)="([^"]*)"', params))


def _expired_token(cast: Any, make_token: Any) -> str:
    raw, principal = make_token(cast.org_a)
    ApiToken.objects.filter(pk=principal.token.pk).update(expires_at=timezone.now() - timedelta(days=2))
    return raw


def _revoked_token(cast: Any, make_token: Any) -> str:
    raw, principal = make_token(cast.org_a)
    token_revoke(token=principal.token, actor=None)
    return raw


# (case, Authorization header or a function making the token, the challenge's error, words of the reason)
CASES = [
    ("missing", None, None, "Missing bearer token: send 'Authorization: Bearer <token>'."),
    ("another scheme", "Basic dXNlcjpwYXNz", None, "Unsupported authorization scheme 'Basic'"),
    ("no token after Bearer", "Bearer", "invalid_request", "Malformed Authorization header"),
    ("two words after Bearer", "Bearer two words", "invalid_request", "Malformed Authorization header"),
    ("unknown", "Bearer rb_not-a-real-token", "invalid_token", "Unknown or revoked API token"),
    ("revoked", _revoked_token, "invalid_token", "Unknown or revoked API token"),
    ("expired", _expired_token, "invalid_token", "This API token expired on"),
    ("unknown OAuth", "Bearer rbo_unknown", "invalid_token", "Invalid, expired or revoked OAuth access token"),
]


async def _authorization(case: Any, cast: Any, make_token: Any) -> str | None:
    if callable(case):
        return "Bearer " + await in_thread(lambda: case(cast, make_token))
    return case


@pytest.mark.parametrize(("case", "authorization", "error", "reason"), CASES, ids=[c[0] for c in CASES])
async def test_an_mcp_401_says_why_in_the_challenge_and_the_body(
    app: Any, cast: Any, make_token: Any, case: str, authorization: Any, error: str | None, reason: str
) -> None:
    header = await _authorization(authorization, cast, make_token)
    headers = dict(MCP_HEADERS, **({"Authorization": header} if header else {}))
    async with http_client(app) as http:
        response = await http.post("/mcp", json=initialize_body(), headers=headers)

    assert response.status_code == 401
    body = response.json()
    assert reason in body["detail"] and body["error_description"] == body["detail"]
    assert body["code"] == ("authentication_failed" if error else "not_authenticated")
    challenge = challenge_params(response.headers["www-authenticate"])
    assert challenge.get("error") == error
    if error:
        assert challenge["error_description"] == body["detail"]
        assert RFC6750_DESCRIPTION.match(challenge["error_description"])
    else:  # nothing was attempted: no error information in the challenge (RFC 6750 section 3.1)
        assert "error_description" not in challenge
    assert challenge["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")


@pytest.mark.parametrize(("case", "authorization", "error", "reason"), CASES, ids=[c[0] for c in CASES])
async def test_a_rest_401_says_the_same_as_mcp(
    app: Any, cast: Any, make_token: Any, case: str, authorization: Any, error: str | None, reason: str
) -> None:
    header = await _authorization(authorization, cast, make_token)
    async with http_client(app) as http:
        mcp = await http.post(
            "/mcp", json=initialize_body(), headers=dict(MCP_HEADERS, **({"Authorization": header} if header else {}))
        )

    def rest_get() -> Any:
        client = APIClient()
        if header:
            client.credentials(HTTP_AUTHORIZATION=header)
        return client.get("/api/v1/me")

    rest = await in_thread(rest_get)
    assert rest.status_code == 401
    assert rest.json()["detail"] == mcp.json()["detail"] and reason in rest.json()["detail"]
    assert rest.json()["code"] == mcp.json()["code"]
    challenge = challenge_params(rest["WWW-Authenticate"])
    assert challenge.get("error") == error
    assert challenge.get("error_description") == (rest.json()["detail"] if error else None)
    assert challenge["resource_metadata"].endswith("/.well-known/oauth-protected-resource/api/v1")


async def test_the_expired_tokens_reason_names_the_day_and_what_to_do(app: Any, cast: Any, make_token: Any) -> None:
    raw = await in_thread(lambda: _expired_token(cast, make_token))
    async with http_client(app, raw) as http:
        response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
    expected_day = (timezone.now() - timedelta(days=2)).strftime("%Y-%m-%d")
    assert expected_day in response.json()["detail"]
    assert "create a new token" in response.json()["detail"]


async def test_a_rest_token_without_the_scope_gets_403_insufficient_scope_naming_it(
    app: Any, cast: Any, make_token: Any
) -> None:
    def post_as_reader() -> Any:
        raw, _ = make_token(cast.org_a, scopes=["memories:read"], projects=[cast.project_a])
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client.post("/api/v1/memories", {}, format="json")

    response = await in_thread(post_as_reader)
    assert response.status_code == 403
    assert response.json()["detail"] == "This token lacks the 'memories:write' scope."
    challenge = challenge_params(response["WWW-Authenticate"])
    assert challenge["error"] == "insufficient_scope" and challenge["scope"] == "memories:write"
    assert challenge["error_description"] == response.json()["detail"]


async def test_an_mcp_token_without_the_scope_gets_a_tool_error_naming_it(app: Any, cast: Any, make_token: Any) -> None:
    """Scopes are per tool, checked inside the call: the SDK hands the reason back as the tool's result
    (a 403 would reach an SDK user as "Server returned an error response")."""
    raw, _ = await in_thread(lambda: make_token(cast.org_a, scopes=["memories:read"], projects=[cast.project_a]))
    async with mcp_client(app, raw, "legacy") as client:
        result = await client.call_tool(
            "memory_record", {"title": "t", "description": "d", "content": "c", "outcome": "success"}
        )
    assert result.is_error and "this token lacks the 'memories:write' scope" in result.content[0].text


def docs_example() -> str:
    """The Python block under the docs page's "Authentication errors" heading."""
    text = DOCS_PAGE.read_text()
    section = text.split("\n## Authentication errors\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("\n```", 1)[0]


@pytest.mark.parametrize("case", ["unknown", "expired"])
async def test_the_docs_sdk_example_prints_the_servers_reason(
    app: Any, cast: Any, make_token: Any, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    raw = "rb_not-a-real-token" if case == "unknown" else await in_thread(lambda: _expired_token(cast, make_token))
    source = docs_example()
    assert "asyncio.run(main())" in source and "http://127.0.0.1:8000/mcp" in source
    source = source.replace("asyncio.run(main())", "").replace("rb_your_token", raw)
    # the example's own client, served by the in-process app instead of a running service
    monkeypatch.setattr(httpx2, "AsyncClient", partial(httpx2.AsyncClient, transport=httpx2.ASGITransport(app=app)))
    source = source.replace("http://127.0.0.1:8000", BASE_URL)
    namespace: dict[str, Any] = {}
    exec(compile(source, str(DOCS_PAGE), "exec"), namespace)  # our own docs' example
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        await namespace["main"]()
    words = "Unknown or revoked API token" if case == "unknown" else "This API token expired on"
    assert printed.getvalue().startswith(f"Refused: {words}")
    assert "Server returned an error response" not in printed.getvalue()
