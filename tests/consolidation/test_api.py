"""REST for consolidation: request a run (synchronous with wait, else queued), read runs, plan and
scope gates, tenant isolation, validation, disputes and un-merge (fixed cast: acme vs globex)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from consolidation import contracts as consolidation_contracts
from consolidation import run_state
from consolidation.models import ConsolidationRun
from memories.models import Memory, MemoryLink
from tests.consolidation.vectors import (
    SYNTHESIS_PREFIX,
    cycle_llm,
    disputed_pair,
    prompts_of,
    remember,
    run_cycle,
    spoke,
)
from tests.factories import ConsolidationRunFactory

RUNS = "/api/v1/consolidation/runs"
DISPUTES = "/api/v1/consolidation/disputes"
RESULT_FIELDS = {
    "created_memories",
    "archived_memories",
    "skipped_count",
    "total_processed",
    "duration_seconds",
    "dry_run",
}


@pytest.fixture
def cluster(agent):
    titles = ["Use context.WithTimeout for database calls", "Always set DB query timeouts", "DB timeout practices"]
    return [remember(agent, title, spoke(0, n, 0.87)) for n, title in enumerate(titles, 1)]


@pytest.fixture
def fake_llm(monkeypatch):
    """The LLM the service builds from settings, replaced by a scripted one."""
    llm = cycle_llm()
    monkeypatch.setattr(run_state, "llm_from_settings", lambda: llm)
    return llm


@pytest.fixture
def enqueued(monkeypatch):
    runs: list[ConsolidationRun] = []
    monkeypatch.setattr(consolidation_contracts, "consolidation_enqueue", runs.append)
    return runs


# --- requesting runs ---------------------------------------------------------------------------------


def test_posting_a_run_with_wait_consolidates_now_and_answers_with_the_result(cast, token_client, cluster, fake_llm):
    response = token_client(cast.org_a).post(RUNS, {"project_id": "web-app", "wait": True}, format="json")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["status"], body["project"], body["trigger"]) == ("completed", "web-app", "manual")
    assert body["dry_run"] is False
    assert set(body["result"]) == RESULT_FIELDS
    (merged,) = Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED)
    assert body["result"]["created_memories"] == [merged.id]
    assert sorted(body["result"]["archived_memories"]) == sorted(m.id for m in cluster)
    assert body["result"]["total_processed"] == 3 and body["result"]["skipped_count"] == 0
    assert body["counters"]["created"] == 1 and body["llm_calls"] == len(fake_llm.calls) >= 1
    assert len(prompts_of(fake_llm, SYNTHESIS_PREFIX)) == 1
    assert body["finished_at"] is not None


def test_a_request_seconds_after_an_automatic_run_runs_without_force(cast, token_client, cluster, fake_llm):
    ConsolidationRunFactory(
        project=cast.project_a,
        trigger=ConsolidationRun.TRIGGER_SCHEDULED,
        status=ConsolidationRun.STATUS_COMPLETED,
        started_at=timezone.now() - timedelta(seconds=5),
        finished_at=timezone.now() - timedelta(seconds=2),
    )

    response = token_client(cast.org_a).post(RUNS, {"project_id": "web-app", "wait": True}, format="json")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "completed" and body["warnings"] == []
    assert sorted(body["archived_memories"]) == sorted(m.id for m in cluster)


def test_force_is_still_accepted_and_documented_as_deprecated(cast, token_client, cluster, fake_llm):
    response = token_client(cast.org_a).post(
        RUNS, {"project_id": "web-app", "wait": True, "force": True}, format="json"
    )
    schema = token_client(cast.org_a).get("/api/schema/", {"format": "json"}).json()

    assert response.status_code == 200 and response.json()["status"] == "completed"
    assert schema["components"]["schemas"]["ConsolidateRestRequest"]["properties"]["force"]["deprecated"] is True


def test_posting_a_run_without_wait_answers_202_with_the_queued_run(cast, token_client, enqueued):
    response = token_client(cast.org_a).post(RUNS, {"project_id": "web-app", "dry_run": True}, format="json")

    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["status"] == "queued" and body["dry_run"] is True
    (run,) = enqueued
    assert run.id == body["id"] and ConsolidationRun.objects.get(pk=run.id).status == "queued"


def test_a_dry_run_says_dry_run_in_its_result_and_lists_each_source_with_id_date_and_project(
    cast, token_client, cluster, fake_llm
):
    client = token_client(cast.org_a)
    response = client.post(RUNS, {"project": "web-app", "dry_run": True, "wait": True}, format="json")

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["dry_run"] is True and body["result"]["dry_run"] is True
    (previewed,) = body["preview"]["clusters"]
    assert {s["id"] for s in previewed["sources"]} == {m.id for m in cluster}
    assert all(s["project"] == "web-app" and s["created_at"] for s in previewed["sources"])
    (listed,) = client.get(RUNS).json()["results"]
    assert listed["result"]["dry_run"] is True
    assert client.get(f"{RUNS}/{body['id']}").json()["result"]["dry_run"] is True


def test_a_run_is_requested_with_project_like_every_other_call_or_with_project_id(cast, token_client, enqueued):
    by_name = token_client(cast.org_a).post(RUNS, {"project": "web-app"}, format="json")
    assert by_name.status_code == 202, by_name.json()
    assert by_name.json()["project"] == "web-app"
    ConsolidationRun.objects.update(status="failed")

    unnamed = token_client(cast.org_a, projects=[cast.project_a]).post(RUNS, {}, format="json")
    assert unnamed.status_code == 202, unnamed.json()
    assert unnamed.json()["project"] == "web-app"


def test_naming_two_different_projects_is_a_400(cast, token_client, enqueued):
    response = token_client(cast.org_a).post(RUNS, {"project": "web-app", "project_id": "other"}, format="json")

    assert response.status_code == 400
    assert "project" in str(response.json()) and not ConsolidationRun.objects.exists()


def test_a_run_can_be_read_back_by_id_and_listed_by_project(cast, token_client, enqueued):
    client = token_client(cast.org_a)
    run_id = client.post(RUNS, {"project_id": "web-app"}, format="json").json()["id"]

    detail = client.get(f"{RUNS}/{run_id}")
    listing = client.get(RUNS, {"project": "web-app"})

    assert detail.status_code == 200
    assert (detail.json()["id"], detail.json()["status"], detail.json()["project"]) == (run_id, "queued", "web-app")
    assert [r["id"] for r in listing.json()["results"]] == [run_id]


def test_a_second_run_request_while_one_is_queued_is_a_409_conflict(cast, token_client, enqueued):
    client = token_client(cast.org_a)
    first = client.post(RUNS, {"project_id": "web-app"}, format="json").json()

    response = client.post(RUNS, {"project_id": "web-app"}, format="json")

    assert response.status_code == 409
    assert response.json()["code"] == "conflict" and first["id"] in response.json()["detail"]


# --- gates -------------------------------------------------------------------------------------------


def test_requesting_a_run_on_the_free_plan_is_403_plan_required(cast, token_client):
    cast.org_a.plan = "free"
    cast.org_a.save(update_fields=["plan"])

    response = token_client(cast.org_a).post(RUNS, {"project_id": "web-app"}, format="json")

    assert response.status_code == 403
    assert response.json()["code"] == "plan_required" and "pro" in response.json()["detail"]
    assert not ConsolidationRun.objects.exists()


def test_a_plan_required_answer_says_where_the_plan_is_changed(cast, token_client, settings):
    settings.SITE_URL = "https://memory.example.test"
    cast.org_a.plan = "free"
    cast.org_a.save(update_fields=["plan"])

    detail = token_client(cast.org_a).post(RUNS, {"project_id": "web-app"}, format="json").json()["detail"]

    assert "https://memory.example.test/settings/plan/" in detail
    assert "manage.py set_plan acme pro" in detail and "DEFAULT_PLAN" in detail


def test_a_read_only_token_may_not_request_a_run(cast, token_client):
    response = token_client(cast.org_a, scopes=["memories:read"]).post(RUNS, {"project_id": "web-app"}, format="json")

    assert response.status_code == 403
    assert "consolidation:run" in response.json()["detail"]
    assert not ConsolidationRun.objects.exists()


@pytest.mark.cross_tenant("api-consolidation-runs", "api-consolidation-run")
def test_another_organization_can_neither_read_a_run_nor_consolidate_its_project(cast, token_client, enqueued):
    run_id = token_client(cast.org_a).post(RUNS, {"project_id": "web-app"}, format="json").json()["id"]
    globex = token_client(cast.org_b)

    assert globex.get(f"{RUNS}/{run_id}").status_code == 404
    assert globex.get(RUNS).json()["results"] == []
    response = globex.post(RUNS, {"project_id": "web-app", "wait": True}, format="json")
    assert response.status_code == 404
    assert not ConsolidationRun.objects.filter(organization=cast.org_b).exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [("similarity_threshold", 1.5), ("similarity_threshold", 0.1), ("max_clusters", -1), ("max_clusters", 10_001)],
)
def test_out_of_range_options_are_rejected_with_400_naming_the_field(cast, token_client, field, value):
    response = token_client(cast.org_a).post(RUNS, {"project_id": "web-app", field: value}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and field in response.json()["errors"]
    assert not ConsolidationRun.objects.exists()


# --- disputes ----------------------------------------------------------------------------------------


@pytest.fixture
def dispute(agent):
    return disputed_pair(agent, reason="They name different databases")


@pytest.mark.cross_tenant("api-disputes")
def test_disputes_are_listed_with_both_memories_and_the_judges_confidence(cast, token_client, dispute):
    first, second, link = dispute

    response = token_client(cast.org_a, scopes=["memories:read"]).get(DISPUTES)

    assert response.status_code == 200
    (item,) = response.json()["results"]
    assert item["id"] == link.id and item["confidence"] == 0.9
    assert item["first"] == {"id": first.id, "title": first.title, "content": "The project's database is PostgreSQL"}
    assert item["second"]["id"] == second.id and item["explanation"] == "They name different databases"
    assert token_client(cast.org_b).get(DISPUTES).json()["results"] == []


def test_resolving_a_dispute_keeping_the_first_archives_the_second_as_superseded(cast, token_client, dispute):
    first, second, link = dispute
    client = token_client(cast.org_a)

    response = client.post(f"{DISPUTES}/{link.id}/resolve", {"resolution": "keep_first"}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["resolved_at"] is not None
    second.refresh_from_db()
    assert (second.state, second.archived_reason) == ("archived", Memory.ARCHIVED_SUPERSEDED)
    assert Memory.objects.get(pk=first.pk).state == Memory.STATE_ACTIVE
    assert client.get(DISPUTES).json()["results"] == []
    again = client.post(f"{DISPUTES}/{link.id}/resolve", {"resolution": "keep_both"}, format="json")
    assert again.status_code == 409


@pytest.mark.cross_tenant("api-dispute-resolve")
def test_a_dispute_cannot_be_resolved_with_an_unknown_resolution_or_by_another_org(cast, token_client, dispute):
    _, _, link = dispute

    bad = token_client(cast.org_a).post(f"{DISPUTES}/{link.id}/resolve", {"resolution": "delete_both"}, format="json")
    foreign = token_client(cast.org_b).post(f"{DISPUTES}/{link.id}/resolve", {"resolution": "keep_both"}, format="json")

    assert bad.status_code == 400 and "resolution" in bad.json()["errors"]
    assert foreign.status_code == 404
    assert MemoryLink.objects.get(pk=link.pk).resolved_at is None


# --- un-merge ----------------------------------------------------------------------------------------


def test_unmerging_over_rest_restores_the_sources_and_archives_the_consolidated_memory(
    cast, token_client, agent, cluster
):
    run_cycle(agent, cast.project_a, cycle_llm())
    (merged,) = Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED)
    client = token_client(cast.org_a)

    assert token_client(cast.org_b).post(f"/api/v1/memories/{merged.id}/unmerge").status_code == 404
    response = client.post(f"/api/v1/memories/{merged.id}/unmerge")

    assert response.status_code == 200, response.json()
    assert response.json()["archived"] == merged.id
    assert sorted(response.json()["restored"]) == sorted(m.id for m in cluster)
    assert all(Memory.objects.get(pk=m.pk).state == Memory.STATE_ACTIVE for m in cluster)
    assert Memory.objects.get(pk=merged.pk).state == Memory.STATE_ARCHIVED
    assert client.post(f"/api/v1/memories/{merged.id}/unmerge").status_code == 409


def test_only_a_consolidated_memory_can_be_unmerged(cast, token_client, cluster):
    response = token_client(cast.org_a).post(f"/api/v1/memories/{cluster[0].id}/unmerge")

    assert response.status_code == 409 and "memory_id" in response.json()["errors"]
