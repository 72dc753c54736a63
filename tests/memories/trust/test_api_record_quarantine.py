"""What the writer of a flagged memory is told, on every transport
(docs/agent-api.md#quarantine-a-memory-stored-but-held-for-review): REST record (201, `status: quarantined`,
`quarantine` with the rules and what happens next) and edit, the MCP tool through the official SDK client,
and the same body on both."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memories.models import Memory
from tests.mcp_harness import MODES, dump, in_thread, mcp_client
from tests.memories.trust.payloads import BENIGN, EXFILTRATION, POISON, ROLE_TAG

MEMORIES = "/api/v1/memories"


@pytest.fixture
def writer(cast, token_client):
    """An attacker's ordinary project write token (the default scopes)."""
    return token_client(cast.org_a, projects=[cast.project_a])


@pytest.mark.parametrize("payload", [POISON, EXFILTRATION, ROLE_TAG], ids=["override", "exfiltration", "role-tag"])
def test_a_flagged_record_is_201_quarantined_with_the_rules_and_what_happens_next(writer, payload):
    response = writer.post(MEMORIES, payload, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "quarantined"
    assert body["memory"]["state"] == "quarantined"
    rules = body["quarantine"]["rules"]
    assert rules and set(rules[0]) == {"rule", "reason", "field", "excerpt"}
    assert all(rule["excerpt"] in payload[rule["field"]] for rule in rules if rule["field"] != "tags")
    assert "admin reviews it in the review queue" in body["quarantine"]["message"]
    assert "not searched, injected" in body["quarantine"]["message"]
    assert body["memory"]["flags"] == rules
    assert Memory.objects.get(pk=body["id"]).state == Memory.STATE_QUARANTINED


def test_a_benign_record_says_recorded_and_carries_no_quarantine(writer):
    body = writer.post(MEMORIES, BENIGN, format="json").json()
    assert body["status"] == "recorded" and "quarantine" not in body and body["memory"]["flags"] == []


def test_under_the_flag_policy_the_answer_is_flagged_with_the_memorys_flags(cast, writer, set_policy):
    set_policy(cast.org_a, "flag")
    body = writer.post(MEMORIES, POISON, format="json").json()
    assert body["status"] == "flagged" and body["memory"]["state"] == "active" and "quarantine" not in body
    assert {f["rule"] for f in body["memory"]["flags"]} >= {"override_instructions", "remote_script"}


def test_an_edit_that_trips_the_detector_answers_quarantined_and_a_clean_one_active(writer):
    memory_id = writer.post(MEMORIES, BENIGN, format="json").json()["id"]

    held = writer.patch(f"{MEMORIES}/{memory_id}", {"content": POISON["content"]}, format="json")
    assert held.status_code == 200, held.json()
    assert held.json()["state"] == "quarantined"
    assert "override_instructions" in {r["rule"] for r in held.json()["quarantine"]["rules"]}

    cleaned = writer.patch(f"{MEMORIES}/{memory_id}", {"content": BENIGN["content"]}, format="json")
    assert cleaned.json()["state"] == "active" and cleaned.json()["quarantine"] is None


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", MODES)
async def test_over_mcp_the_writer_is_told_the_same(app: Any, cast: Any, make_token: Any, monkeypatch, mode: str):
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    raw, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    async with mcp_client(app, raw, mode) as client:
        held = await client.call_tool("memory_record", POISON)
        fine = await client.call_tool("memory_record", BENIGN)

    assert not held.is_error, dump(held)
    answer = held.structured_content
    assert answer["status"] == "quarantined" and answer["memory"]["state"] == "quarantined"
    assert "remote_script" in {rule["rule"] for rule in answer["quarantine"]["rules"]}
    assert "admin reviews it in the review queue" in answer["quarantine"]["message"]
    assert "quarantine" in held.content[0].text  # what a client without structured output reads
    assert fine.structured_content["status"] == "recorded"
    states = await in_thread(lambda: dict(Memory.objects.values_list("title", "state")))
    assert states == {POISON["title"]: "quarantined", BENIGN["title"]: "active"}


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_record_tool_tells_agents_what_is_held_and_why(app: Any, cast: Any, make_token: Any, monkeypatch):
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    raw, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    async with mcp_client(app, raw, "2026-07-28") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    record = tools["memory_record"]
    assert "status quarantined" in record.description and "admin's review" in record.description
    assert "quarantined" in str(record.output_schema)
