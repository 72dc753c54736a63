"""The injection policy (memories/trust/selectors_injection.py; docs/security/memory-poisoning.md#injection-policy):
what the session-start block (memory_context) and the per-prompt recall (memory_search with ``inject``) may
hold under each of ``trusted``, ``reviewed`` and ``all``, for memories of every trust, review and state —
over REST here, over MCP in the last tests (one contract). An explicit search still returns every active
memory."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from accounts.models import Organization
from memories.models import Memory, MemorySummary, SessionMemoryUse
from tests.factories import MemoryFactory, summary_make
from tests.mcp_harness import in_thread, mcp_client

CONTEXT = "/api/v1/memories/context"
SEARCH = "/api/v1/memories/search"
# (trust, reviewed, state) of each memory of the bank, and under which policies it may be injected
TABLE = {
    "trusted": (Memory.TRUST_TRUSTED, False, Memory.STATE_ACTIVE, {"trusted", "all"}),
    "pending": (Memory.TRUST_PENDING, False, Memory.STATE_ACTIVE, {"all"}),
    "trusted_reviewed": (Memory.TRUST_TRUSTED, True, Memory.STATE_ACTIVE, {"trusted", "reviewed", "all"}),
    "pending_reviewed": (Memory.TRUST_PENDING, True, Memory.STATE_ACTIVE, {"reviewed", "all"}),
    "quarantined": (Memory.TRUST_TRUSTED, True, Memory.STATE_QUARANTINED, set()),
    "archived": (Memory.TRUST_TRUSTED, True, Memory.STATE_ARCHIVED, set()),
}
POLICIES = [Organization.INJECTION_TRUSTED, Organization.INJECTION_REVIEWED, Organization.INJECTION_ALL]


def memory_make(principal: Any, name: str, **fields: Any) -> Memory:
    trust, reviewed, state, _ = TABLE[name]
    extra: dict[str, Any] = {"trust": trust, "state": state, "confidence": 0.9}
    if reviewed:
        extra["reviewed_at"] = timezone.now()
    if state == Memory.STATE_ARCHIVED:
        extra |= {"archived_reason": Memory.ARCHIVED_MANUAL, "archived_at": timezone.now()}
    return MemoryFactory(
        principal=principal,
        title=f"Deploy the web app: {name.replace('_', ' ')} lesson",
        description="When deploying the web app to production",
        content=f"Deploy the web app with the release script ({name}).",
        **extra,
        **fields,
    )


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


@pytest.fixture
def bank(agent) -> dict[str, str]:
    return {name: memory_make(agent, name).id for name in TABLE}


def policy_set(org: Organization, policy: str) -> None:
    Organization.objects.filter(pk=org.pk).update(injection_policy=policy)


def post(client: Any, path: str, **body: Any) -> dict[str, Any]:
    response = client.post(path, {"project": "web-app", **body}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def injected_by_context(client: Any) -> set[str]:
    return set(post(client, CONTEXT, max=20)["memory_ids"])


def search_body(client: Any, **args: Any) -> dict[str, Any]:
    return post(client, SEARCH, **{"query": "deploy the web app", "limit": 10, "include_summaries": False, **args})


def names(bank: dict[str, str], ids: set[str]) -> set[str]:
    by_id = {memory_id: name for name, memory_id in bank.items()}
    return {by_id[memory_id] for memory_id in ids if memory_id in by_id}


@pytest.mark.parametrize("policy", POLICIES)
def test_the_session_start_block_holds_exactly_what_the_policy_lets_be_injected(cast, alice, bank, policy):
    policy_set(cast.org_a, policy)
    expected = {name for name, row in TABLE.items() if policy in row[3]}
    assert names(bank, injected_by_context(alice)) == expected


@pytest.mark.parametrize("policy", POLICIES)
def test_an_inject_search_returns_and_frames_exactly_what_the_policy_lets_be_injected(cast, alice, bank, policy):
    policy_set(cast.org_a, policy)
    expected = {name for name, row in TABLE.items() if policy in row[3]}

    body = search_body(alice, inject=True)

    assert names(bank, {m["id"] for m in body["memories"]}) == expected
    block = body["injection_block"]
    assert {name for name, memory_id in bank.items() if f'<memory id="{memory_id}"' in block} == expected


@pytest.mark.parametrize("policy", POLICIES)
def test_an_explicit_search_still_returns_every_active_memory_whatever_the_policy(cast, alice, bank, policy):
    policy_set(cast.org_a, policy)
    body = search_body(alice)
    assert names(bank, {m["id"] for m in body["memories"]}) == {
        "trusted", "pending", "trusted_reviewed", "pending_reviewed"
    }
    assert "injection_block" not in body


def test_the_default_policy_is_trusted(cast):
    assert Organization.objects.get(pk=cast.org_a.pk).injection_policy == Organization.INJECTION_TRUSTED


def test_when_nothing_qualifies_the_inject_search_answers_an_empty_block(cast, alice, agent):
    memory_make(agent, "pending")
    body = search_body(alice, inject=True, session_id="s-1")
    assert (body["memories"], body["injection_block"], body["tokens_used"]) == ([], "", 0)
    assert not SessionMemoryUse.objects.filter(session_key="s-1").exists()  # nothing given, nothing noted


def test_the_memories_a_pending_one_would_have_displaced_take_its_place(cast, alice, agent):
    pending = memory_make(agent, "pending")
    trusted = memory_make(agent, "trusted")
    Memory.objects.filter(pk=pending.pk).update(confidence=0.99)  # it would rank first
    body = search_body(alice, inject=True, limit=1)
    assert [m["id"] for m in body["memories"]] == [trusted.id]


# --- summaries ----------------------------------------------------------------------------------------


def test_a_summary_is_injected_only_when_its_memory_qualifies_and_it_is_not_held(cast, alice, agent):
    good = summary_make(agent, memory=memory_make(agent, "trusted"), summary="Deploy with the release script.")
    of_pending = summary_make(agent, memory=memory_make(agent, "pending"), summary="Deploy by hand via ssh.")
    held = summary_make(agent, memory=memory_make(agent, "trusted_reviewed"), summary="Deploy on Fridays.")
    MemorySummary.objects.filter(pk=held.pk).update(status=MemorySummary.STATUS_HELD, flags=[{"rule": "x"}])

    body = post(alice, CONTEXT, max=20)

    assert good.id in body["summary_ids"]
    assert of_pending.id not in body["summary_ids"] and held.id not in body["summary_ids"]
    assert "Deploy with the release script." in body["context_block"]
    assert "Deploy by hand via ssh." not in body["context_block"] and "Deploy on Fridays." not in body["context_block"]
    # the pending memory is not injected in a summary's stead either; the held summary's memory itself qualifies
    assert of_pending.memory_id not in body["memory_ids"] and held.memory_id in body["memory_ids"]


def test_an_inject_search_leaves_out_the_summaries_of_memories_that_do_not_qualify(cast, alice, agent):
    good = summary_make(agent, memory=memory_make(agent, "trusted"), summary="Deploy the web app with the script.")
    of_pending = summary_make(agent, memory=memory_make(agent, "pending"), summary="Deploy the web app by hand.")
    plain = post(alice, SEARCH, query="deploy the web app", limit=10)
    injected = post(alice, SEARCH, query="deploy the web app", limit=10, inject=True)
    assert {s["id"] for s in plain.get("summaries", [])} >= {good.id, of_pending.id}
    assert of_pending.id not in {s["id"] for s in injected.get("summaries", [])}
    assert "Deploy the web app by hand." not in injected["injection_block"]


# --- over MCP ------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_over_mcp_the_inject_search_and_memory_context_keep_to_the_policy(app, cast, make_token, monkeypatch):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    raw, principal = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    bank = await in_thread(lambda: {name: memory_make(principal, name).id for name in TABLE})
    args = {"query": "deploy the web app", "limit": 10, "include_summaries": False}
    async with mcp_client(app, raw, "2026-07-28") as client:
        plain = await client.call_tool("memory_search", args)
        injected = await client.call_tool("memory_search", {**args, "inject": True})
        context = await client.call_tool("memory_context", {"max": 20})
    assert not injected.is_error, injected.content[0].text
    assert names(bank, {m["id"] for m in injected.structured_content["memories"]}) == {"trusted", "trusted_reviewed"}
    assert f'<memory id="{bank["pending"]}"' not in injected.structured_content["injection_block"]
    assert f'<memory id="{bank["trusted"]}"' in injected.structured_content["injection_block"]
    assert "pending" in names(bank, {m["id"] for m in plain.structured_content["memories"]})
    assert names(bank, set(context.structured_content["memory_ids"])) == {"trusted", "trusted_reviewed"}
