"""memory_search for automatic injection (docs/search.md#searching-for-injection): ``exclude_seen`` (only
memories new to the session, by its ledger), ``token_budget`` and ``min_similarity`` — over REST here,
over MCP in the last test (one contract)."""

from __future__ import annotations

from typing import Any

import pytest

from memories.models import SessionMemoryUse
from memories.search.ranking import estimate_tokens
from tests.factories import MemoryFactory

MEMORIES = "/api/v1/memories"
SEARCH = "/api/v1/memories/search"


def record(client: Any, title: str, content: str, project: str = "web-app") -> str:
    body = {
        "title": title,
        "description": f"When to use: {title.lower()}",
        "content": content,
        "outcome": "success",
        "project": project,
    }
    response = client.post(MEMORIES, body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def search(client: Any, query: str, **args: Any) -> dict[str, Any]:
    response = client.post(SEARCH, {"query": query, "include_summaries": False, **args}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


@pytest.fixture
def timeouts(alice) -> list[str]:
    return [
        record(alice, "Handle HTTP timeouts with deadlines", "Wrap outgoing HTTP calls in a timeout deadline."),
        record(alice, "Retry HTTP requests after timeouts", "Retry idempotent HTTP requests once after a timeout."),
        record(alice, "Log HTTP timeouts with the URL", "Log every HTTP timeout with its URL and elapsed time."),
    ]


def ids(body: dict[str, Any]) -> list[str]:
    return [m["id"] for m in body["memories"]]


def test_exclude_seen_never_returns_a_memory_the_session_was_given_and_fills_with_the_next(alice, timeouts):
    first = ids(search(alice, "HTTP timeouts", limit=1, session_id="s-1"))
    assert len(first) == 1

    again = ids(search(alice, "HTTP timeouts", limit=1, session_id="s-1", exclude_seen=True))

    assert len(again) == 1 and again[0] != first[0]  # the next best, not fewer
    third = ids(search(alice, "HTTP timeouts", limit=5, session_id="s-1", exclude_seen=True))
    assert set(third) == set(timeouts) - set(first) - set(again)


def test_exclude_seen_is_per_session(alice, timeouts):
    first = ids(search(alice, "HTTP timeouts", limit=1, session_id="s-1"))
    assert first[0] in ids(search(alice, "HTTP timeouts", limit=1, session_id="s-2", exclude_seen=True))


def test_without_exclude_seen_the_session_is_given_the_same_memory_again(alice, timeouts):
    first = ids(search(alice, "HTTP timeouts", limit=1, session_id="s-1"))
    assert ids(search(alice, "HTTP timeouts", limit=1, session_id="s-1")) == first


def test_exclude_seen_without_a_session_id_is_a_422_naming_the_field(alice, timeouts):
    # the body has the schema's shape (a rule between two fields the schema cannot state): not a 400
    response = alice.post(SEARCH, {"query": "HTTP timeouts", "exclude_seen": True, "session_id": ""}, format="json")
    assert response.status_code == 422
    assert response.json()["code"] == "rejected_needs_session" and "exclude_seen" in response.json()["errors"]


def test_a_memory_seen_through_memory_context_is_excluded_too(alice, timeouts):
    context = alice.post("/api/v1/memories/context", {"session_id": "s-1", "min_confidence": 0.5}, format="json")
    assert context.status_code == 200, context.json()
    given = set(context.json()["memory_ids"])
    assert given  # procedural memories fill the block before any consolidation
    assert not given & set(ids(search(alice, "HTTP timeouts", session_id="s-1", exclude_seen=True)))


def test_the_token_budget_bounds_the_results_and_tokens_used(alice, timeouts):
    record(alice, "HTTP timeouts in depth", "HTTP timeout " + "lengthy detail " * 200)
    whole = search(alice, "HTTP timeouts", limit=10)
    assert whole["tokens_used"] > 120

    bounded = search(alice, "HTTP timeouts", limit=10, token_budget=120)

    assert 0 < bounded["tokens_used"] <= 120
    costs = [estimate_tokens(f"{m['title']}\n{m['description']}\n{m['content']}") for m in bounded["memories"]]
    assert sum(costs) == bounded["tokens_used"]
    assert [m for m in ids(whole) if m in ids(bounded)] == ids(bounded)  # rank order kept


def test_a_memory_left_out_by_the_budget_is_not_noted_in_the_ledger(alice, timeouts):
    big = record(alice, "HTTP timeouts in depth", "HTTP timeout " + "lengthy detail " * 200)
    body = search(alice, "HTTP timeouts in depth", limit=10, session_id="s-1", token_budget=120)
    noted = set(SessionMemoryUse.objects.filter(session_key="s-1").values_list("memory_id", flat=True))
    assert big not in ids(body) and noted == set(ids(body))


def test_min_similarity_keeps_only_memories_on_topic(alice, timeouts):
    assert ids(search(alice, "HTTP timeouts", min_similarity=0.0))
    assert ids(search(alice, "HTTP timeouts", min_similarity=1.0)) == []
    on_topic = search(alice, "HTTP timeouts", min_similarity=0.1, explain=True)["memories"]
    assert on_topic and all(m["explain"]["similarity"] >= 0.1 for m in on_topic)


def test_the_new_options_are_validated(alice):
    for args, field in (({"token_budget": 0}, "token_budget"), ({"min_similarity": 1.5}, "min_similarity")):
        response = alice.post(SEARCH, {"query": "x", **args}, format="json")
        assert response.status_code == 400 and field in response.json()["errors"], response.json()


@pytest.mark.cross_tenant("api-memory-search")
def test_another_orgs_ledger_under_the_same_session_id_excludes_nothing_here(cast, token_client, alice, timeouts):
    globex = token_client(cast.org_b)
    theirs = record(globex, "Handle HTTP timeouts at Globex", "Wrap HTTP calls in a timeout.", project="billing")
    assert ids(search(globex, "HTTP timeouts", limit=5, session_id="shared-id")) == [theirs]

    mine = ids(search(alice, "HTTP timeouts", limit=5, session_id="shared-id", exclude_seen=True))

    assert set(mine) == set(timeouts)  # globex's ledger is globex's
    assert ids(search(globex, "HTTP timeouts", limit=5, session_id="shared-id", exclude_seen=True)) == []
    assert not SessionMemoryUse.objects.filter(organization=cast.org_b, memory_id__in=timeouts).exists()


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_over_mcp_exclude_seen_leaves_out_what_the_session_was_given(cast, make_token, app, monkeypatch):
    from django.db import connection

    from tests.mcp_harness import in_thread, mcp_client

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives it
    raw, principal = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    await in_thread(
        lambda: [
            MemoryFactory(
                principal=principal, title=f"Handle HTTP timeouts, way {n}", content=f"HTTP timeout advice {n}"
            )
            for n in range(3)
        ]
    )
    args = {"query": "HTTP timeouts", "limit": 2, "session_id": "mcp-1", "include_summaries": False}
    async with mcp_client(app, raw, "2026-07-28") as client:
        first = await client.call_tool("memory_search", args)
        second = await client.call_tool("memory_search", {**args, "exclude_seen": True})
        refused = await client.call_tool("memory_search", {"query": "HTTP timeouts", "exclude_seen": True})
    seen = {m["id"] for m in first.structured_content["memories"]}
    rest = {m["id"] for m in second.structured_content["memories"]}
    assert len(seen) == 2 and len(rest) == 1 and not seen & rest
    assert refused.is_error and "exclude_seen" in refused.content[0].text
