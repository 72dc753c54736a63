"""The departure seen by an agent: a person provisioned over SCIM connects agents with an API token and
with OAuth; once the identity provider deactivates them, the very next MCP call with either token is a
401, through the official MCP SDK client, and their refresh token no longer refreshes."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client

from accounts.models import Membership
from accounts.services import token_create
from tests.accounts.oauth.oauth_flow import MCP_RESOURCE, Flow, dcr_client
from tests.accounts.scim.scim_client import patch_body, scim_for, user_body
from tests.mcp_harness import MCP_HEADERS, MODES, http_client, in_thread, initialize_body, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _short_lived_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


def _provision_and_connect(cast: Any) -> dict[str, Any]:
    """Dana provisioned over SCIM, with an API token of her own and an OAuth-connected agent."""
    scim = scim_for(cast.org_a)
    made = scim.post("/Users", user_body("dana@acme.test"))
    assert made.status_code == 201, made.content
    membership = Membership.objects.select_related("user").get(pk=made.json()["id"])
    _, api_token = token_create(organization=cast.org_a, label="dana's laptop", created_by=membership.user)
    web = Client()
    web.force_login(membership.user)
    flow = Flow(dcr_client(web), resources=[MCP_RESOURCE])
    oauth = flow.tokens(web, org="acme", scopes=["memories:read"])
    return {"scim": scim, "id": made.json()["id"], "api": api_token, "oauth": oauth, "flow": flow, "web": web}


@pytest.mark.parametrize("mode", MODES)
async def test_after_scim_deactivation_both_of_the_persons_tokens_are_a_401_on_mcp(
    app: Any, cast: Any, mode: str
) -> None:
    dana = await in_thread(lambda: _provision_and_connect(cast))
    for raw in (dana["api"], dana["oauth"]["access_token"]):
        async with mcp_client(app, raw, mode) as client:
            assert not (await client.call_tool("memory_search", {"query": "anything"})).is_error

    deactivated = await in_thread(
        lambda: dana["scim"].patch(
            f"/Users/{dana['id']}", patch_body({"op": "replace", "path": "active", "value": False})
        )
    )
    assert deactivated.status_code == 200 and deactivated.json()["active"] is False

    for raw in (dana["api"], dana["oauth"]["access_token"]):
        async with http_client(app, raw) as http:
            response = await http.post("/mcp", json=initialize_body(), headers=MCP_HEADERS)
        assert response.status_code == 401, response.text
        assert 'error="invalid_token"' in response.headers["www-authenticate"]
        with pytest.raises(Exception):  # noqa: B017 -- the SDK's own error for a 401 differs between eras
            async with mcp_client(app, raw, mode) as client:
                await client.call_tool("memory_search", {"query": "anything"})

    refreshed = await in_thread(lambda: dana["flow"].refresh(dana["web"], dana["oauth"]["refresh_token"]))
    assert refreshed.status_code == 400


async def test_other_members_tokens_keep_working(app: Any, cast: Any) -> None:
    dana = await in_thread(lambda: _provision_and_connect(cast))
    _, alices = await in_thread(lambda: token_create(organization=cast.org_a, label="alice", created_by=cast.alice))
    await in_thread(lambda: dana["scim"].delete(f"/Users/{dana['id']}"))
    async with mcp_client(app, alices, "legacy") as client:
        assert not (await client.call_tool("memory_search", {"query": "anything"})).is_error
