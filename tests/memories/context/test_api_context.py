"""POST /api/v1/memories/context and the MCP tool memory_context: the block a session starts with
(docs/session-context.md#memory_context)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memories.context.block import BLOCK_PATTERN
from memories.models import Memory, MemorySummary, SessionMemoryUse
from tests.factories import MemoryFactory, ProjectFactory, summary_make
from tests.mcp_harness import in_thread, mcp_client

CONTEXT = "/api/v1/memories/context"


def context(client: Any, **body: Any) -> dict[str, Any]:
    response = client.post(CONTEXT, {"project": "web-app", **body}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


def record(agent: Any, title: str, content: str, **fields: Any) -> str:
    memory = MemoryFactory(principal=agent, title=title, description=f"When {title.lower()}", content=content, **fields)
    return memory.id


@pytest.fixture
def bank(agent):
    return {
        "timeouts": record(agent, "Set HTTP client timeouts", "Always set connect and read timeouts."),
        "flags": record(agent, "Ship risky UI behind a flag", "Roll out gradually with a feature flag."),
        "fact": record(agent, "The API is RESTful", "Endpoints follow REST.", kind="semantic"),
    }


def test_the_block_carries_the_projects_procedural_memories_and_nothing_else(alice, bank):
    body = context(alice)
    assert body["source"] == "procedural_memories" and body["project"] == "web-app"
    assert sorted(body["memory_ids"]) == sorted([bank["timeouts"], bank["flags"]])  # not the semantic fact
    assert body["summaries_injected"] == 2
    assert "### Set HTTP client timeouts (" in body["context_block"]
    assert BLOCK_PATTERN.fullmatch(body["context_block"])
    assert body["context"] == body["context_block"] and body["replaced_existing"] is False
    assert 0 < body["tokens_used"] <= 2000


def test_passing_the_context_back_replaces_the_block_instead_of_adding_one(alice, bank):
    first = context(alice, context="You are a careful agent.")
    second = context(alice, context=first["context"])
    assert second["replaced_existing"] is True
    assert len(BLOCK_PATTERN.findall(second["context"])) == 1
    assert second["context"].startswith("You are a careful agent.")


def test_a_task_puts_the_memories_that_fit_it_first(alice, bank):
    body = context(alice, task="our checkout page rollout needs a feature flag")
    assert body["memory_ids"][0] == bank["flags"]


def test_max_min_confidence_and_the_token_budget_bound_the_block(alice, agent, bank):
    Memory.objects.filter(pk=bank["flags"]).update(confidence=0.6)
    assert context(alice)["memory_ids"] == [bank["timeouts"]]  # below the default 0.7
    assert len(context(alice, min_confidence=0.5, max=1)["memory_ids"]) == 1
    record(agent, "A long strategy", " ".join(f"Step {i}: check the logs." for i in range(300)))
    assert context(alice, token_budget=300)["tokens_used"] <= 300


def test_recording_no_usage_only_an_impression_on_what_the_block_holds(alice, bank):
    """docs/confidence.md#impressions-and-use: the session-start block is shown unasked."""
    before = list(Memory.objects.order_by("id").values_list("id", "usage_count", "confidence", "updated_at"))
    given = context(alice)["memory_ids"]
    assert list(Memory.objects.order_by("id").values_list("id", "usage_count", "confidence", "updated_at")) == before
    shown = dict(Memory.objects.values_list("id", "impression_count"))
    assert given and shown == {pk: int(pk in given) for pk in bank.values()}


def test_a_project_without_memories_gets_an_empty_block_and_its_context_back(alice):
    body = context(alice, context="keep this")
    assert (body["context_block"], body["context"], body["summaries_injected"]) == ("", "keep this", 0)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max": 0}, "max"),
        ({"token_budget": 50}, "token_budget"),
        ({"prioritize": "random"}, "prioritize"),
        ({"context": "a\x00b"}, "context"),
        ({"extra": 1}, "extra"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice, body, field):
    response = alice.post(CONTEXT, {"project": "web-app", **body}, format="json")
    assert response.status_code == 400
    assert list(response.json()["errors"]) == [field]


@pytest.mark.cross_tenant("api-memory-context")
def test_another_orgs_project_is_a_404_and_its_memories_never_reach_the_block(cast, alice, bank, token_client):
    charlie = token_client(cast.org_b)
    ProjectFactory(organization=cast.org_b, slug="web-app")
    foreign = charlie.post(CONTEXT, {"project": "billing"}, format="json")
    assert foreign.status_code == 200 and foreign.json()["memory_ids"] == []
    assert charlie.post(CONTEXT, {"project": "web-app"}, format="json").json()["memory_ids"] == []
    assert alice.post(CONTEXT, {"project": "billing"}, format="json").status_code == 404


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.cross_tenant("memory_context")
async def test_the_mcp_tool_gives_the_same_block_and_keeps_to_its_tokens_org(app, cast, make_token, monkeypatch):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    raw_a, principal_a = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    raw_b, _ = await in_thread(lambda: make_token(cast.org_b, projects=[cast.project_b]))
    mine = await in_thread(lambda: MemoryFactory(principal=principal_a, title="Pin Node 20 in CI"))
    async with mcp_client(app, raw_a, "2026-07-28") as client:
        result = await client.call_tool("memory_context", {"context": "agent preamble"})
    assert not result.is_error, result.content[0].text
    assert result.structured_content["memory_ids"] == [mine.id]
    assert "Pin Node 20 in CI" in result.structured_content["context"]
    async with mcp_client(app, raw_b, "2026-07-28") as client:
        other = await client.call_tool("memory_context", {})
        named = await client.call_tool("memory_context", {"project": "web-app"})
    assert other.structured_content["memory_ids"] == []
    assert named.is_error and "not found" in named.content[0].text


# --- the injection floor (docs/confidence.md#floors) --------------------------------------------------


def test_a_min_confidence_below_the_injection_floor_is_raised_to_it(alice, bank, settings):
    settings.CONFIDENCE_MIN_FOR_INJECTION = 0.5
    Memory.objects.filter(pk=bank["flags"]).update(confidence=0.45)
    body = context(alice, min_confidence=0.1)
    assert body["memory_ids"] == [bank["timeouts"]] and body["min_confidence"] == 0.5
    above = context(alice, min_confidence=0.9)  # a stricter caller keeps its own
    assert above["memory_ids"] == [] and above["min_confidence"] == 0.9
    settings.CONFIDENCE_MIN_FOR_INJECTION = 0.4
    assert set(context(alice, min_confidence=0)["memory_ids"]) == {bank["timeouts"], bank["flags"]}


def test_a_summary_of_a_memory_below_the_floor_is_never_injected(alice, summarised, settings):
    settings.CONFIDENCE_MIN_FOR_INJECTION = 0.5
    Memory.objects.filter(pk=summarised.memory_id).update(confidence=0.3)
    body = context(alice, min_confidence=0)
    assert summarised.id not in body["summary_ids"] and summarised.memory_id not in body["memory_ids"]


def test_the_schema_documents_the_floor(api_client, db):
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    body = schema["paths"]["/api/v1/memories/context"]["post"]["requestBody"]["content"]["application/json"]
    field = schema["components"]["schemas"][body["schema"]["$ref"].rsplit("/", 1)[1]]["properties"]["min_confidence"]
    assert "CONFIDENCE_MIN_FOR_INJECTION" in field["description"] and "raised" in field["description"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_mcp_tool_applies_the_same_floor(app, cast, make_token, monkeypatch, settings):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    settings.CONFIDENCE_MIN_FOR_INJECTION = 0.5
    raw, principal = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    kept = await in_thread(lambda: MemoryFactory(principal=principal, title="Pin Node 20 in CI", confidence=0.6))
    await in_thread(lambda: MemoryFactory(principal=principal, title="Maybe skip the linter", confidence=0.45))
    async with mcp_client(app, raw, "2026-07-28") as client:
        result = await client.call_tool("memory_context", {"min_confidence": 0.1})
        tool = next(t for t in (await client.list_tools()).tools if t.name == "memory_context")
    assert not result.is_error, result.content[0].text
    assert result.structured_content["memory_ids"] == [kept.id]
    assert result.structured_content["min_confidence"] == 0.5
    assert "CONFIDENCE_MIN_FOR_INJECTION" in tool.input_schema["properties"]["min_confidence"]["description"]


# --- consolidated summaries (docs/memory-model.md#summaries) -----------------------------------------


@pytest.fixture
def summarised(agent, bank):
    """A consolidated memory of the project with its summary (what consolidation's summarize phase writes)."""
    merged = MemoryFactory(principal=agent, title="Database timeouts", content="Use context.WithTimeout everywhere.")
    return summary_make(
        agent,
        memory=merged,
        key_facts=("Every database call gets a deadline",),
        decisions=(
            {
                "decision": "Use context.WithTimeout",
                "rationale": "bounded latency",
                "outcome": None,
                "confidence": "high",
            },
        ),
        superseded_facts=(
            {"original_fact": "30 s default timeout", "superseded_by": "5 s timeout", "source_memory_id": ""},
        ),
    )


def test_summaries_come_first_in_the_block_format_and_procedural_memories_fill_the_rest(alice, bank, summarised):
    body = context(alice)
    assert body["source"] == "mixed"
    assert body["summary_ids"] == [summarised.id]
    assert body["memory_ids"][0] == summarised.memory_id  # the summary stands for its consolidated memory
    assert set(body["memory_ids"][1:]) == {bank["timeouts"], bank["flags"]}  # not the summarised memory again
    block = body["context_block"]
    assert block.index("### Database timeouts (") < block.index("### Set HTTP client timeouts (")
    assert summarised.summary in block
    assert "**Key facts:**\n- Every database call gets a deadline" in block
    assert "**Decisions:**\n- Use context.WithTimeout\n  - Rationale: bounded latency" in block
    assert "**Note - superseded information:**\n- ~~30 s default timeout~~ → 5 s timeout" in block
    assert "Use context.WithTimeout everywhere." not in block  # the summary, not the memory's content


def test_a_block_holding_only_summaries_says_so(alice, summarised):
    body = context(alice, max=1)
    assert (body["source"], body["summary_ids"]) == ("summaries", [summarised.id])


def test_a_summary_is_served_only_while_its_memory_is_active_and_trusted_enough(alice, summarised):
    Memory.objects.filter(pk=summarised.memory_id).update(confidence=0.5)
    assert context(alice)["summary_ids"] == []  # below the default min_confidence 0.7, by the memory's live value
    assert context(alice, min_confidence=0.4)["summary_ids"] == [summarised.id]
    Memory.objects.filter(pk=summarised.memory_id).update(state="archived", archived_reason="consolidated")
    assert context(alice, min_confidence=0.4)["summary_ids"] == []


def test_a_rejected_summary_is_never_served(alice, summarised):
    MemorySummary.objects.filter(pk=summarised.pk).update(status=MemorySummary.STATUS_REJECTED)
    assert context(alice)["summary_ids"] == []


def test_injecting_a_summary_counts_an_activation_and_ledgers_its_memory(alice, summarised):
    context(alice, session_id="ses-ctx-1")
    summarised.refresh_from_db()
    assert summarised.activation_count == 1 and summarised.last_activated_at is not None
    assert SessionMemoryUse.objects.filter(session_key="ses-ctx-1", memory_id=summarised.memory_id).exists()


def test_prioritize_picks_summaries_by_relevance_recency_or_activation(alice, agent):
    db = summary_make(agent, title="Database timeouts", summary="Every database query needs a timeout deadline.")
    flags = summary_make(agent, title="Feature flags", summary="Roll out risky UI changes behind a feature flag.")
    MemorySummary.objects.filter(pk=db.pk).update(activation_count=5)
    MemorySummary.objects.filter(pk=flags.pk).update(temporal_end=db.temporal_end + timedelta(days=1))
    assert context(alice, task="feature flag rollout", max=1)["summary_ids"] == [flags.id]
    assert context(alice, task="database query timeout", max=1)["summary_ids"] == [db.id]
    assert context(alice, prioritize="recency", max=1)["summary_ids"] == [flags.id]
    assert context(alice, prioritize="activation", max=1)["summary_ids"] == [db.id]


@pytest.mark.cross_tenant("api-memory-context")
def test_another_orgs_summaries_never_reach_the_block(cast, alice, token_client, make_token):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    foreign = summary_make(charlie, title="Billing retries")
    assert context(alice)["summary_ids"] == []
    own = token_client(cast.org_b).post(CONTEXT, {"project": "billing"}, format="json").json()
    assert own["summary_ids"] == [foreign.id]
