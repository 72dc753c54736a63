"""Provenance of a memory recorded over MCP (docs/security/memory-poisoning.md#provenance), through the
official SDK client in both protocol eras: the client's ``clientInfo`` — in the ``initialize`` request of
2025-11-25 (remembered for the credential: the endpoint is stateless), in every request's ``_meta`` envelope
of 2026-07-28 — names the client; an OAuth app's writes name the app and the user who connected it."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from mcp.types import Implementation

from memories.models import Memory
from tests.accounts.oauth.oauth_flow import MCP_RESOURCE, Flow, dcr_client
from tests.mcp_harness import MCP_HEADERS, MODES, http_client, in_thread, initialize_body, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

CLAUDE_CODE = Implementation(name="claude-code", version="2.1.197")
RECORD = {
    "title": "Pin the Node version per repo",
    "description": "When builds differ between laptops and CI",
    "content": "Commit an .nvmrc with the exact version and run nvm use in CI before npm ci.",
    "outcome": "success",
}


@pytest.fixture(autouse=True)
def _short_lived_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


@pytest.fixture
def token(cast: Any, make_token: Any) -> str:
    raw, _ = make_token(cast.org_a, projects=[cast.project_a])
    return raw


async def stored(memory_id: str) -> Memory:
    return await in_thread(lambda: Memory.objects.get(pk=memory_id))


@pytest.mark.parametrize("mode", MODES)
async def test_the_mcp_client_info_names_the_client_of_a_recorded_memory_in_both_eras(app, token, mode):
    async with mcp_client(app, token, mode, client_info=CLAUDE_CODE, **{"User-Agent": "claude-cli/2.1.197"}) as client:
        result = await client.call_tool("memory_record", RECORD)
    assert not result.is_error, result.content[0].text

    memory = await stored(result.structured_content["id"])
    assert memory.provenance["client"] == {
        "transport": "mcp", "name": "claude-code", "version": "2.1.197", "user_agent": "claude-cli/2.1.197",
    }  # fmt: skip
    source = result.structured_content["memory"]["source"]
    assert source["via"] == "claude-code 2.1" and source["how"] == "recorded" and source["trust"] == "trusted"
    assert source["label"].startswith("recorded by token test via claude-code 2.1 · ")


async def test_a_2025_call_without_a_handshake_is_named_by_its_user_agent_and_after_one_by_its_client_info(
    app, token
):
    headers = MCP_HEADERS | {"MCP-Protocol-Version": "2025-11-25", "User-Agent": "raw-agent/3.0"}

    def call(request_id: int, title: str) -> dict[str, Any]:
        arguments = {**RECORD, "title": title}
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": "memory_record", "arguments": arguments}}  # fmt: skip

    async with http_client(app, token) as http:
        before = await http.post("/mcp", json=call(1, "Before any handshake"), headers=headers)
        init = initialize_body(2)
        init["params"]["clientInfo"] = {"name": "cursor", "version": "1.7.3"}
        assert (await http.post("/mcp", json=init, headers=headers)).status_code == 200
        after = await http.post("/mcp", json=call(3, "After the handshake"), headers=headers)
        other_agent = await http.post("/mcp", json=call(4, "Another program"), headers=headers | {"User-Agent": "x/1"})

    first, second, third = [
        await stored(response.json()["result"]["structuredContent"]["id"]) for response in (before, after, other_agent)
    ]
    assert first.provenance["client"] == {"transport": "mcp", "user_agent": "raw-agent/3.0"}
    assert second.provenance["client"] == {
        "transport": "mcp", "name": "cursor", "version": "1.7.3", "user_agent": "raw-agent/3.0",
    }  # fmt: skip
    # the handshake is remembered for this token and this User-Agent only
    assert third.provenance["client"] == {"transport": "mcp", "user_agent": "x/1"}


async def test_a_2026_request_is_named_by_its_own_envelope_whatever_an_earlier_handshake_said(app, token):
    legacy = Implementation(name="old-name", version="0.1")
    async with mcp_client(app, token, "legacy", client_info=legacy):
        pass  # the handshake is remembered for this token
    async with mcp_client(app, token, "2026-07-28", client_info=CLAUDE_CODE) as client:
        result = await client.call_tool("memory_record", RECORD)

    memory = await stored(result.structured_content["id"])
    assert (memory.provenance["client"]["name"], memory.provenance["client"]["version"]) == ("claude-code", "2.1.197")


def _oauth_token(cast: Any) -> str:
    web = Client()
    web.force_login(cast.alice)
    flow = Flow(dcr_client(web, name="Claude Desktop"), resources=[MCP_RESOURCE])
    return str(flow.tokens(web, org="acme")["access_token"])


async def test_an_oauth_apps_memory_names_the_app_and_the_member_and_waits_for_review(app, cast):
    access = await in_thread(lambda: _oauth_token(cast))
    async with mcp_client(app, access, "2026-07-28", client_info=CLAUDE_CODE) as client:
        result = await client.call_tool("memory_record", RECORD)
    assert not result.is_error, result.content[0].text

    memory = await stored(result.structured_content["id"])
    by = memory.provenance["by"]
    assert (by["kind"], by["email"], by["role"], by["oauth_app_name"]) == ("oauth", "alice@acme.test", "owner",
                                                                            "Claude Desktop")  # fmt: skip
    assert by["oauth_client_id"] and memory.trust == "pending"
    assert result.structured_content["memory"]["source"]["by"] == "alice@acme.test (app Claude Desktop)"
