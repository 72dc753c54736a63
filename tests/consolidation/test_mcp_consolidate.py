"""MCP ``memory_consolidate`` through the real SDK client in both protocol eras: it reports what
docs/consolidation.md#what-a-run-reports lists."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from consolidation.models import ConsolidationRun
from memories.models import Memory
from tests.consolidation.vectors import cycle_llm, remember, spoke
from tests.factories import ConsolidationRunFactory, ProjectFactory
from tests.mcp_harness import MODES, dump, in_thread, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]
REPORTED_KEYS = {"created_memories", "archived_memories", "skipped_count", "total_processed", "duration_seconds"}


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    monkeypatch.setattr("consolidation.run_state.llm_from_settings", cycle_llm)


@pytest.fixture
def seeded(cast: Any, make_token: Any) -> dict[str, Any]:
    raw, principal = make_token(cast.org_a, projects=[cast.project_a])
    ids = [remember(principal, f"Database timeouts {c}", spoke(0, 10 + i, 0.9)).id for i, c in enumerate("ABC")]
    return {
        "token": raw,
        "ids": ids,
        "other_org": make_token(cast.org_b)[0],
        "reader": make_token(cast.org_a, scopes=["memories:read"])[0],
    }


@pytest.mark.parametrize("mode", MODES)
async def test_a_manual_run_over_mcp_merges_the_cluster_and_reports_its_statistics(app, seeded, mode):
    async with mcp_client(app, seeded["token"], mode) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("memory_consolidate", {"project_id": "web-app"})
    assert "memory_consolidate" in tools and "session_submit" in tools
    assert not result.is_error, dump(result)
    body = result.structured_content
    assert REPORTED_KEYS <= body.keys()
    assert sorted(body["archived_memories"]) == sorted(seeded["ids"]) and len(body["created_memories"]) == 1
    assert body["total_processed"] == 3 and body["status"] == "completed"
    states = await in_thread(
        lambda: sorted(Memory.objects.filter(pk__in=seeded["ids"]).values_list("state", flat=True))
    )
    assert states == ["archived"] * 3


async def test_a_dry_run_over_mcp_changes_nothing(app, seeded):
    async with mcp_client(app, seeded["token"], "legacy") as client:
        result = await client.call_tool("memory_consolidate", {"project_id": "web-app", "dry_run": True})
    assert not result.is_error, dump(result)
    assert len(result.structured_content["archived_memories"]) == 3
    assert result.structured_content["dry_run"] is True
    states = await in_thread(lambda: set(Memory.objects.filter(pk__in=seeded["ids"]).values_list("state", flat=True)))
    assert states == {"active"}


@pytest.mark.cross_tenant("memory_consolidate")
async def test_the_plan_gate_scope_and_tenancy_are_enforced(app, cast, seeded):
    async with mcp_client(app, seeded["other_org"], "legacy") as client:
        foreign = await client.call_tool("memory_consolidate", {"project_id": "web-app"})
    async with mcp_client(app, seeded["reader"], "legacy") as client:
        denied = await client.call_tool("memory_consolidate", {"project_id": "web-app"})
    await in_thread(lambda: type(cast.org_a).objects.filter(pk=cast.org_a.pk).update(plan="free"))
    async with mcp_client(app, seeded["token"], "legacy") as client:
        gated = await client.call_tool("memory_consolidate", {"project_id": "web-app"})
        bad = await client.call_tool("memory_consolidate", {"project_id": "web-app", "similarity_threshold": 1.5})
    assert foreign.is_error and "not found" in dump(foreign)
    assert denied.is_error and "consolidation:run" in dump(denied)
    assert gated.is_error and "Pro plan" in dump(gated).replace("pro plan", "Pro plan")
    assert bad.is_error and "similarity_threshold" in dump(bad)


async def test_a_plan_required_error_over_mcp_says_where_the_plan_is_changed(app, cast, seeded, settings):
    settings.SITE_URL = "https://memory.example.test"
    await in_thread(lambda: type(cast.org_a).objects.filter(pk=cast.org_a.pk).update(plan="free"))
    async with mcp_client(app, seeded["token"], "legacy") as client:
        gated = await client.call_tool("memory_consolidate", {"project_id": "web-app"})
    assert gated.is_error
    assert "https://memory.example.test/settings/plan/" in dump(gated)
    assert "manage.py set_plan acme pro" in dump(gated) and "DEFAULT_PLAN" in dump(gated)


async def test_a_request_seconds_after_an_automatic_run_runs_without_force(app, cast, seeded):
    def automatic_run_just_finished() -> None:
        ConsolidationRunFactory(
            project=cast.project_a,
            trigger=ConsolidationRun.TRIGGER_SCHEDULED,
            status=ConsolidationRun.STATUS_COMPLETED,
            started_at=timezone.now() - timedelta(seconds=5),
            finished_at=timezone.now() - timedelta(seconds=2),
        )

    await in_thread(automatic_run_just_finished)
    async with mcp_client(app, seeded["token"], "legacy") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("memory_consolidate", {"project_id": "web-app"})
    assert not result.is_error, dump(result)
    assert result.structured_content["status"] == "completed" and result.structured_content["warnings"] == []
    assert sorted(result.structured_content["archived_memories"]) == sorted(seeded["ids"])
    assert tools["memory_consolidate"].input_schema["properties"]["force"].get("deprecated") is True


async def test_a_dry_run_over_mcp_says_so_and_lists_each_proposed_source_with_its_id_date_and_project(app, seeded):
    async with mcp_client(app, seeded["token"], "2026-07-28") as client:
        dry = await client.call_tool("memory_consolidate", {"project": "web-app", "dry_run": True})
        real = await client.call_tool("memory_consolidate", {"project": "web-app"})
    assert not dry.is_error and not real.is_error, dump(dry) + dump(real)
    assert dry.structured_content["dry_run"] is True and real.structured_content["dry_run"] is False
    (cluster,) = dry.structured_content["preview"]["clusters"]
    assert sorted(s["id"] for s in cluster["sources"]) == sorted(seeded["ids"])
    assert all(s["project"] == "web-app" and s["created_at"] and s["title"] for s in cluster["sources"])
    assert real.structured_content["preview"] == {}


async def test_a_one_project_token_consolidates_without_naming_the_project(app, seeded):
    async with mcp_client(app, seeded["token"], "legacy") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("memory_consolidate", {"dry_run": True})
    assert not result.is_error, dump(result)
    assert result.structured_content["dry_run"] is True
    assert sorted(result.structured_content["archived_memories"]) == sorted(seeded["ids"])
    schema = tools["memory_consolidate"].input_schema
    assert "project" in schema["properties"] and "project_id" in schema["properties"]
    assert not schema.get("required")


async def test_an_org_wide_token_in_a_one_project_org_needs_no_project(app, cast, seeded, make_token):
    raw = await in_thread(lambda: make_token(cast.org_a)[0])
    async with mcp_client(app, raw, "legacy") as client:
        blank = await client.call_tool("memory_consolidate", {"project_id": "", "dry_run": True})
    assert not blank.is_error, dump(blank)
    run = await in_thread(lambda: ConsolidationRun.objects.get(pk=blank.structured_content["run_id"]))
    assert run.project_id == cast.project_a.pk


async def test_an_org_wide_token_reaching_several_projects_must_name_one(app, cast, make_token):
    def second_project() -> str:
        ProjectFactory(organization=cast.org_a, slug="mobile")
        return make_token(cast.org_a)[0]

    raw = await in_thread(second_project)
    async with mcp_client(app, raw, "legacy") as client:
        blank = await client.call_tool("memory_consolidate", {})
        both = await client.call_tool("memory_consolidate", {"project": "web-app", "project_id": "mobile"})
    assert blank.is_error and "project is required" in dump(blank) and "mobile, web-app" in dump(blank)
    assert both.is_error and "project" in dump(both) and "mobile" in dump(both)
    assert not await in_thread(lambda: ConsolidationRun.objects.exists())


async def test_the_default_similarity_threshold_is_the_servers_setting(app, seeded, settings):
    settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD = 0.9
    async with mcp_client(app, seeded["token"], "legacy") as client:
        result = await client.call_tool("memory_consolidate", {"dry_run": True})
    assert not result.is_error, dump(result)
    run = await in_thread(lambda: ConsolidationRun.objects.get(pk=result.structured_content["run_id"]))
    assert run.options["similarity_threshold"] == 0.9
