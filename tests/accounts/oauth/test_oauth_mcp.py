"""OAuth access tokens on the MCP endpoint (docs/oauth.md#tokens), through the real SDK client
in-process: the same principal as an API token (org, scopes, project restriction), bound to the ``/mcp``
resource, refused once revoked or when minted for the REST API."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client

from accounts.models import OAuthConnection
from accounts.oauth.services import oauth_connection_revoke
from tests.accounts.oauth.oauth_flow import API_RESOURCE, MCP_RESOURCE, Flow, dcr_client
from tests.factories import MemoryFactory
from tests.mcp_harness import MCP_HEADERS, MODES, http_client, in_thread, initialize_body, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _short_lived_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


def _oauth_tokens(
    cast: Any, *, resources: list[str], scopes: list[str] | None = None, user: Any = None
) -> dict[str, Any]:
    web = Client()
    web.force_login(user or cast.alice)
    flow = Flow(dcr_client(web), resources=resources)
    return flow.tokens(web, org="acme", **({"scopes": scopes} if scopes is not None else {}))


def _memories(cast: Any) -> None:
    MemoryFactory(
        principal=cast.principal(cast.charlie),
        project="billing",
        title="Globex invoice rounding trick",
        content="Round invoices half-even before tax.",
    )
    MemoryFactory(
        principal=cast.principal(cast.alice),
        project="web-app",
        title="Acme invoice cache trick",
        content="Cache invoices per customer before tax.",
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.cross_tenant("memory_search")
async def test_an_oauth_token_searches_its_org_only(app: Any, cast: Any, mode: str) -> None:
    await in_thread(lambda: _memories(cast))
    tokens = await in_thread(lambda: _oauth_tokens(cast, resources=[MCP_RESOURCE]))
    async with mcp_client(app, tokens["access_token"], mode) as client:
        result = await client.call_tool("memory_search", {"query": "invoice trick before tax", "min_confidence": 0})
        assert not result.is_error, result
        titles = [m["title"] for m in result.structured_content["memories"]]
        recorded = await client.call_tool(
            "memory_record",
            {
                "title": "Recorded through OAuth",
                "description": "an app connected in the browser",
                "content": "The consent page's choices hold.",
                "outcome": "success",
            },
        )
        assert not recorded.is_error, recorded
    assert "Acme invoice cache trick" in titles
    assert not any("Globex" in title for title in titles)


async def test_scopes_chosen_at_consent_hold_on_mcp(app: Any, cast: Any) -> None:
    tokens = await in_thread(lambda: _oauth_tokens(cast, resources=[MCP_RESOURCE], scopes=["memories:read"]))
    async with mcp_client(app, tokens["access_token"], "legacy") as client:
        assert not (await client.call_tool("memory_search", {"query": "anything"})).is_error
        denied = await client.call_tool(
            "memory_record",
            {
                "title": "t",
                "description": "d",
                "content": "c",
                "outcome": "success",
            },
        )
    assert denied.is_error and "memories:write" in str(denied.content)


async def test_a_token_for_the_rest_api_is_refused_by_mcp(app: Any, cast: Any) -> None:
    tokens = await in_thread(lambda: _oauth_tokens(cast, resources=[API_RESOURCE]))
    async with http_client(app, tokens["access_token"]) as http:
        response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    assert "another resource" in response.json()["error_description"]


async def test_revoking_the_connected_app_is_a_401_on_the_next_request(app: Any, cast: Any) -> None:
    tokens = await in_thread(lambda: _oauth_tokens(cast, resources=[MCP_RESOURCE]))
    async with mcp_client(app, tokens["access_token"], "legacy") as client:
        assert not (await client.call_tool("memory_search", {"query": "anything"})).is_error
    await in_thread(lambda: oauth_connection_revoke(connection=OAuthConnection.objects.get(), actor=None))
    async with http_client(app, tokens["access_token"]) as http:
        response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
    assert response.status_code == 401
    assert (
        'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"'
        in (response.headers["www-authenticate"])
    )
