"""An agent on the official MCP SDK client, over real HTTP to the live server, in both protocol eras: the
memory tools, a session distilled by the worker through the ``openai`` provider (the loopback stub), and
a consolidation (dry run, then real) whose lineage is read back over REST (docs/memory-model.md#links):
the worker does not crash while it distils, a dry run says so, and a token restricted to one project
needs no project argument."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from tests.e2e.conftest import Setup, manage_ok
from tests.e2e.harness import Service, call, mcp_client, rest, unique
from tests.e2e.llm_stub import LLMStub

MODES = ("legacy", "2026-07-28")  # the 2025-11-25 handshake era and the stateless 2026-07-28 era
TOOLS = {
    "memory_search",
    "memory_record",
    "memory_feedback",
    "memory_outcome",
    "memory_get",
    "session_submit",
    "memory_consolidate",
}
DISTILL_WITHIN = 60  # seconds from submission until the worker has produced the session's memories

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", MODES)
async def test_an_agent_records_searches_rates_and_reads_a_memory(service: Service, acme: Setup, mode: str) -> None:
    marker = unique()
    async with mcp_client(service, acme.project_token, mode) as client:
        assert TOOLS <= {tool.name for tool in (await client.list_tools()).tools}

        recorded = await call(
            client,
            "memory_record",
            {
                "title": f"Run the focused test before the suite {marker}",
                "description": "When a change touches one module and the whole suite is slow",
                "content": f"Run pytest on the module first, then the whole suite ({marker}).",
                "outcome": "success",
                "tags": ["e2e", "testing"],
            },
        )
        memory_id = recorded["id"]
        assert 0 < recorded["initial_confidence"] < 1

        found = await call(
            client, "memory_search", {"query": f"focused test before the suite {marker}", "min_confidence": 0.0}
        )
        # the other protocol era's run recorded the same lesson with another marker: search may fold the
        # two near-identical memories into one result, listing this one under `duplicates`
        returned = [m["id"] for m in found["memories"]]
        returned += [folded for m in found["memories"] for folded in m.get("duplicates", [])]
        assert memory_id in returned, found

        feedback = await call(
            client, "memory_feedback", {"memory_id": memory_id, "helpful": True, "comment": "saved me a slow run"}
        )
        assert feedback["success"] is True
        assert feedback["new_confidence"] > recorded["initial_confidence"]

        outcome = await call(
            client, "memory_outcome", {"memory_id": memory_id, "succeeded": True, "session_id": marker}
        )
        assert outcome["recorded"] is True

        detail = await call(client, "memory_get", {"memory_id": memory_id})
        assert detail["title"] == f"Run the focused test before the suite {marker}"
        assert detail["project"] == "web-app"
        assert detail["state"] == "active"
        assert detail["confidence"] >= feedback["new_confidence"] - 1e-6


@pytest.mark.parametrize("mode", MODES)
async def test_a_submitted_session_is_distilled_by_the_worker_through_the_openai_provider(
    service: Service, acme: Setup, llm_stub: LLMStub, mode: str
) -> None:
    marker = unique()
    async with mcp_client(service, acme.project_token, mode) as client:
        session = await submit_and_wait_for_distillation(client, marker, service)
        assert [m["title"] for m in session["memories"]] == [f"Distilled {marker}"], session
        memory = await call(client, "memory_get", {"memory_id": session["memories"][0]["id"]})
        assert memory["project"] == "web-app"
        assert memory["origin"] == "distilled" and marker in memory["content"]
    prompts = [c.prompt for c in llm_stub.calls_of("distill") if marker in c.prompt]
    assert prompts, "the distillation never reached the OpenAI-compatible stub"


async def submit_and_wait_for_distillation(
    client: Any, marker: str, service: Service, project: str = ""
) -> dict[str, Any]:
    """session_submit, then the same call again (it is idempotent and reports the status) until done.
    A worker that has crashed fails the wait at once instead of at the deadline."""
    args = {
        "session_id": marker,
        "outcome": "success",
        "trace": f"user: the checkout test is flaky\nassistant: ran the focused test first ({marker}), "
        "found the shared fixture, isolated it; the suite is green.",
    }
    if project:
        args["project"] = project
    first = await call(client, "session_submit", args)
    assert first["created"] is True and first["session_id"] == marker, first
    deadline = time.monotonic() + DISTILL_WITHIN
    latest = first
    while latest["status"] not in ("done", "failed") and time.monotonic() < deadline:
        crashed = service.worker_crash_lines()
        assert not crashed, f"the worker crashed while session {marker} was {latest['status']}:\n" + "\n".join(crashed)
        await anyio.sleep(1)
        latest = await call(client, "session_submit", args)
    assert latest["status"] == "done", f"session not distilled within {DISTILL_WITHIN}s: {latest}"
    return latest


# one strategy said three ways: similar enough to be consolidated into one memory (cosine 0.83–0.92
# with the default minilm-onnx embedder, whose cluster threshold is 0.81), not so alike that the
# duplicate merge (≥ 0.97) takes them
NEAR_DUPLICATES = [
    ("Wrap database calls with a timeout", "so slow queries cannot hang the request"),
    ("Put a deadline on every SQL query", "because a stuck statement blocks the worker"),
    ("Cancel database queries that run too long", "so one slow statement cannot stall the service"),
]


@pytest.mark.parametrize("mode", MODES)
async def test_consolidation_previews_then_merges_near_duplicates_and_the_lineage_reads_back(
    service: Service, acme: Setup, llm_stub: LLMStub, mode: str
) -> None:
    marker = unique()
    slug = f"cons-{marker.lower()}"
    manage_ok(service, "create_project", "acme", slug)
    async with mcp_client(service, acme.org_token, mode) as client:
        ids = [
            (
                await call(
                    client,
                    "memory_record",
                    {
                        "title": f"{title} {marker}",
                        "description": "When Go services call the database",
                        "content": f"Always wrap database queries in Go with context.WithTimeout {tail}",
                        "outcome": "success",
                        "tags": ["go", "database"],
                        "project": slug,
                    },
                )
            )["id"]
            for title, tail in NEAR_DUPLICATES
        ]
        project_arg = await _consolidate_project_argument(client)

        dry = await call(client, "memory_consolidate", {project_arg: slug, "dry_run": True})
        assert dry["status"] == "completed", dry
        assert dry.get("dry_run") is True, f"a dry run's result must say so: {dry}"
        assert dry["created_memories"] == [], dry
        for memory_id in ids:
            assert (await call(client, "memory_get", {"memory_id": memory_id}))["state"] == "active"

        real = await call(client, "memory_consolidate", {project_arg: slug, "dry_run": False, "force": True})
        assert real["status"] == "completed", real
        assert len(real["created_memories"]) == 1, real
        assert set(ids) <= set(real["archived_memories"]), real
        consolidated_id = real["created_memories"][0]
        consolidated = await call(client, "memory_get", {"memory_id": consolidated_id})
        assert consolidated["title"] == f"Consolidated {marker}"
        for memory_id in ids:
            source = await call(client, "memory_get", {"memory_id": memory_id})
            assert (source["state"], source["consolidated_into"]) == ("archived", consolidated_id)
    # the batched synthesis (docs/consolidation.md#batched-synthesis): the cluster's memory and its summary
    assert any(marker in c.prompt for c in llm_stub.calls_of("synthesize_batch")), "no synthesis reached the LLM stub"

    with rest(service, acme.org_token) as http:
        response = http.get(f"/api/v1/memories/{consolidated_id}/lineage")
        assert response.status_code == 200, response.text[:2000]
        lineage = response.json()
        assert sorted(lineage["sources"]) == sorted(ids)
        links = lineage["incoming"] + lineage["outgoing"]
        assert {link["memory"]["id"] for link in links} >= set(ids), lineage
        assert {link["run_id"] for link in links} == {real["run_id"]}, lineage
        source_lineage = http.get(f"/api/v1/memories/{ids[0]}/lineage")
        assert source_lineage.status_code == 200, source_lineage.text[:2000]
        assert source_lineage.json()["consolidated_into"] == consolidated_id
        # the cluster's summary (docs/memory-model.md#summaries) is kept beside the consolidated memory ...
        summaries = http.get("/api/v1/summaries", params={"memory": consolidated_id}).json()["results"]
        assert len(summaries) == 1 and sorted(summaries[0]["source_memory_ids"]) == sorted(ids), summaries

    # ... and the next session of the project starts with it
    async with mcp_client(service, acme.org_token, mode) as client:
        started = await call(client, "memory_context", {"project": slug})
    assert started["summary_ids"] == [summaries[0]["id"]], started
    assert "Wrap every database call in a context with a timeout." in started["context_block"]


@pytest.mark.parametrize("mode", MODES)
async def test_memory_consolidate_needs_no_project_with_a_one_project_token(
    service: Service, acme: Setup, mode: str
) -> None:
    """docs/connecting-agents.md#the-tools: a token restricted to one project needs no project argument
    (docs/tenancy.md#reach-which-memories-a-principal-sees)."""
    async with mcp_client(service, acme.project_token, mode) as client:
        result = await client.call_tool("memory_consolidate", {"dry_run": True})
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert not result.is_error, text
        assert result.structured_content["status"] == "completed", result.structured_content


async def _consolidate_project_argument(client: Any) -> str:
    """``project`` like every other tool; ``project_id`` on builds that still call it that."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    properties = tools["memory_consolidate"].input_schema.get("properties", {})
    return "project" if "project" in properties else "project_id"
