"""Failed bearer tokens on ``/mcp`` are throttled by client address
(docs/tenancy.md#failed-tokens-are-throttled), like REST: 429 with ``Retry-After`` and a JSON body, while
a good token still works — from another address, and from the failing address itself."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from django.db import connection
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp_harness import BASE_URL, MCP_HEADERS, MCP_URL, initialize_body

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    settings.AUTH_THROTTLE_FAILURES = 5
    settings.AUTH_THROTTLE_PREFIX_FAILURES = 50
    settings.AUTH_THROTTLE_BLOCK = 120.0


@pytest.fixture
def good_token(cast: Any, make_token: Any) -> str:
    return make_token(cast.org_a, projects=[cast.project_a])[0]


def from_address(app: Any, address: str, token: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app, client=(address, 40000)),
        base_url=BASE_URL,
        headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"},
    )


async def post(app: Any, address: str, token: str) -> httpx2.Response:
    async with from_address(app, address, token) as http:
        return await http.post("/mcp", json=initialize_body())


async def test_bad_tokens_are_429_with_retry_after_and_a_good_token_from_elsewhere_works(app, good_token):
    codes = [(await post(app, "203.0.113.7", f"rb_guess{n:03d}" + "z" * 40)).status_code for n in range(7)]
    assert codes == [401] * 4 + [429] * 3

    limited = await post(app, "203.0.113.7", "rb_guess999" + "z" * 40)
    assert limited.status_code == 429
    assert 100 <= int(limited.headers["retry-after"]) <= 120
    assert limited.headers["content-type"] == "application/json"
    body = limited.json()
    assert body["error"] == "too_many_requests"
    assert "too many failed authentications from this address" in body["error_description"].lower()

    assert (await post(app, "198.51.100.20", good_token)).status_code == 200


async def test_a_valid_token_is_served_from_an_address_that_just_sent_50_bad_ones(app, good_token, settings):
    settings.AUTH_THROTTLE_FAILURES = 20  # the default
    codes = [(await post(app, "203.0.113.7", f"rb_nat{n:03d}" + "z" * 40)).status_code for n in range(50)]
    assert codes[:19] == [401] * 19 and set(codes[19:]) == {429}

    # the official SDK client, from the same address, with the team's valid token
    async with from_address(app, "203.0.113.7", good_token) as http:
        async with Client(streamable_http_client(MCP_URL, http_client=http), mode="2026-07-28") as client:
            tools = await client.list_tools()
    assert "memory_search" in {tool.name for tool in tools.tools}
    assert (await post(app, "203.0.113.7", "rb_nat999" + "z" * 40)).status_code == 429


async def test_rest_and_mcp_failures_from_one_address_add_up(app, good_token):
    async with httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app, client=("203.0.113.9", 40000)), base_url=BASE_URL
    ) as http:
        for n in range(3):
            await http.get("/api/v1/me", headers={"Authorization": f"Bearer rb_rest{n:03d}" + "q" * 40})
    codes = [(await post(app, "203.0.113.9", f"rb_mcp{n:03d}" + "q" * 40)).status_code for n in range(3)]
    assert codes == [401, 429, 429]  # the 5th failure from the address, counted over both
