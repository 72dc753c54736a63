"""Where a row came from (accounts/audit.py ``audit_origin``): every row a request writes carries the client's
address and the client — the MCP ``clientInfo`` when the client named itself, else the User-Agent — read from
the request context, over REST and over MCP with the official SDK client; callers pass nothing
(docs/identity.md#the-audit-log)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from mcp.types import Implementation

from accounts.models import AuditEvent
from tests.mcp_harness import MODES, in_thread, mcp_client

RECORD = {
    "title": "Pin the Node version per repo",
    "description": "When builds differ between laptops and CI",
    "content": "Commit an .nvmrc with the exact version and run nvm use in CI before npm ci.",
    "outcome": "success",
}


def test_a_rest_call_records_the_callers_address_and_user_agent(cast, token_client):
    admin = token_client(cast.org_a, scopes=["admin", "memories:read"])
    response = admin.patch(
        "/api/v1/llm/budget",
        {"daily_tokens": 50_000},
        format="json",
        REMOTE_ADDR="2001:db8::7",
        HTTP_USER_AGENT="reasoningbank-python/1.4.0",
    )
    assert response.status_code == 200, response.content
    row = AuditEvent.objects.get(organization=cast.org_a, verb="llm.budget_set")
    assert (row.ip, row.client) == ("2001:db8::7", "reasoningbank-python/1.4.0")


def test_an_address_that_is_not_one_is_left_out(cast, token_client):
    admin = token_client(cast.org_a, scopes=["admin", "memories:read"])
    admin.patch("/api/v1/llm/budget", {"daily_tokens": 50_000}, format="json", REMOTE_ADDR="unix:/run/rb.sock")
    assert AuditEvent.objects.get(organization=cast.org_a, verb="llm.budget_set").ip is None


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", MODES)
async def test_an_mcp_call_records_the_client_that_named_itself_in_it(app, cast, make_token, mode, monkeypatch):
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    raw, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    client_info = Implementation(name="claude-code", version="2.1.197")
    async with mcp_client(app, raw, mode, client_info=client_info, **{"User-Agent": "claude-cli/2.1.197"}) as client:
        result = await client.call_tool("memory_record", RECORD)
    assert not result.is_error, result.content[0].text
    memory_id: Any = result.structured_content["id"]
    row = await in_thread(lambda: AuditEvent.objects.get(verb="memory.record", target_id=memory_id))
    assert row.ip is not None
    if mode == "legacy":  # a 2025-11-25 client names itself in its handshake only: the call is known by its User-Agent
        assert row.client == "claude-cli/2.1.197"
    else:  # a 2026-07-28 request names its client in its own envelope
        assert row.client == "claude-code 2.1.197"
