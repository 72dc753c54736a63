"""Consolidation dashboard: plan gates, dry-run preview, apply, run detail polling, schedules."""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.utils import timezone

from consolidation.models import ConsolidationRun, ProjectConsolidationSettings
from consolidation.runs import consolidation_execute
from memories.core.services import memory_record
from memories.models import Memory
from tests.consolidation.vectors import cycle_llm, set_embedding, spoke
from tests.factories import ConsolidationRunFactory, MembershipFactory, UserFactory

MANUAL_GATE = "Manual consolidation needs the Pro plan"
SCHEDULE_GATE = "Scheduled consolidation needs the Teams plan"


def text(response) -> str:
    return html.unescape(response.content.decode())


def set_plan(org, plan: str) -> None:
    org.plan = plan
    org.save(update_fields=["plan"])


@pytest.fixture
def cluster(cast):
    """Two memories of web-app whose embeddings have cosine 0.9: one cluster at threshold 0.8
    (below the 0.95 duplicate line, so they are synthesised, not deduplicated)."""
    principal = cast.principal(cast.alice)
    first = memory_record(
        principal=principal,
        title="Retry flaky HTTP calls with backoff",
        description="Wrap outbound calls in exponential backoff",
        content="Use tenacity with jitter for third-party APIs.",
        outcome="success",
        project="web-app",
    )
    second = memory_record(
        principal=principal,
        title="Back off and retry on 503 from payment API",
        description="The payment API sheds load with 503",
        content="Retry 503s with exponential backoff, max 5 attempts.",
        outcome="success",
        project="web-app",
    )
    set_embedding(first, spoke(0, 1, 0.9))
    set_embedding(second, spoke(0, 2, 0.9))
    return first, second


@pytest.fixture
def enqueued(monkeypatch):
    calls: list[ConsolidationRun] = []
    monkeypatch.setattr("consolidation.views.consolidation_enqueue", lambda run: calls.append(run))
    return calls


def test_page_renders_for_owner_and_viewer(client, cast):
    for user in (cast.alice, cast.bob):
        client.force_login(user)
        response = client.get("/consolidation/")
        assert response.status_code == 200
        body = text(response)
        assert "<h1>Consolidation</h1>" in body
        assert 'href="/consolidation/" aria-current="page"' in body
    # the viewer sees no form
    assert "Preview (dry run)" not in body


def test_free_plan_shows_the_gate_instead_of_the_form(client, cast):
    set_plan(cast.org_a, "free")
    client.force_login(cast.alice)
    body = text(client.get("/consolidation/"))
    assert MANUAL_GATE in body
    assert "Preview (dry run)" not in body
    response = client.post("/consolidation/preview/", {"project": "web-app", "similarity_threshold": "0.8"})
    assert response.status_code == 400
    assert "needs the pro plan" in text(response)
    assert not ConsolidationRun.objects.exists()


def test_a_plan_required_error_on_the_page_says_where_the_plan_is_changed(client, cast, settings):
    settings.SITE_URL = "https://memory.example.test"
    set_plan(cast.org_a, "free")
    client.force_login(cast.alice)

    response = client.post("/consolidation/apply/", {"project": "web-app", "similarity_threshold": "0.8"})

    assert response.status_code == 400
    body = text(response)
    assert "https://memory.example.test/settings/plan/" in body and "manage.py set_plan acme pro" in body


def test_dry_run_preview_lists_the_cluster_and_changes_nothing(client, cast, cluster):
    first, second = cluster
    client.force_login(cast.alice)
    assert "Preview (dry run)" in text(client.get("/consolidation/"))
    response = client.post(
        "/consolidation/preview/", {"project": "web-app", "similarity_threshold": "0.8", "max_clusters": "0"}
    )
    assert response.status_code == 200
    body = text(response)
    assert "Dry run of <code>web-app</code>" in body
    assert "Clusters" in body
    assert first.title in body and second.title in body
    assert 'action="/consolidation/apply/"' in body
    run = ConsolidationRun.objects.get()
    assert run.dry_run and run.status == "completed"
    assert set(run.preview["clusters"][0]["members"]) == {first.id, second.id}
    assert Memory.objects.filter(state="active").count() == 2


def test_the_preview_tells_sources_with_the_same_title_apart_by_id_date_and_project(client, cast, cluster):
    first, second = cluster
    Memory.objects.filter(pk=second.pk).update(title=first.title)
    client.force_login(cast.alice)

    body = text(client.post("/consolidation/preview/", {"project": "web-app", "similarity_threshold": "0.8"}))

    for memory in (first, second):
        memory.refresh_from_db()
        assert memory.id in body
        assert f"created {memory.created_at:%Y-%m-%d %H:%M}" in body
    assert body.count("· web-app") >= 2


def test_a_dry_runs_page_says_what_it_would_do_not_what_it_did(client, cast, cluster, monkeypatch):
    monkeypatch.setattr("consolidation.run_state.llm_from_settings", cycle_llm)  # an LLM is configured
    client.force_login(cast.alice)
    client.post("/consolidation/preview/", {"project": "web-app", "similarity_threshold": "0.8"})
    run = ConsolidationRun.objects.get()

    body = text(client.get(f"/consolidation/runs/{run.id}/"))
    history = text(client.get("/consolidation/"))

    assert "Dry run: nothing was changed" in body
    assert "Would archive" in body and "<dt>Archived</dt>" not in body
    assert "would archive <b>2</b>" in history and "archived <b>2</b>" not in history


def test_without_an_llm_the_preview_says_the_cluster_would_wait_and_archives_nothing(client, cast, cluster):
    client.force_login(cast.alice)
    client.post("/consolidation/preview/", {"project": "web-app", "similarity_threshold": "0.8"})
    run = ConsolidationRun.objects.get()
    body = text(client.get(f"/consolidation/runs/{run.id}/"))
    assert "waits for an LLM (LLM_PROVIDER=none)" in body
    assert run.result["archived_memories"] == []


def test_htmx_preview_returns_only_the_partial(client, cast, cluster):
    client.force_login(cast.alice)
    response = client.post(
        "/consolidation/preview/", {"project": "web-app", "similarity_threshold": "0.8"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    body = text(response)
    assert body.lstrip().startswith('<div id="preview"')
    assert "<html" not in body
    assert cluster[0].title in body


def test_htmx_preview_swaps_the_runs_list_too_so_it_no_longer_says_there_are_none(client, cast, cluster):
    client.force_login(cast.alice)
    assert "No consolidation runs yet" in text(client.get("/consolidation/"))
    body = text(
        client.post(
            "/consolidation/preview/", {"project": "web-app", "similarity_threshold": "0.8"}, HTTP_HX_REQUEST="true"
        )
    )
    run = ConsolidationRun.objects.get(dry_run=True)
    assert '<section class="card" id="history" hx-swap-oob="true">' in body
    assert f"/consolidation/runs/{run.id}/" in body and "dry run" in body
    assert "No consolidation runs yet" not in body


def test_an_empty_runs_list_says_how_to_start_one(client, cast):
    client.force_login(cast.alice)
    assert "No consolidation runs yet. Preview one above" in text(client.get("/consolidation/"))
    assert "Show every project" in text(client.get("/consolidation/?project=web-app"))


def test_preview_input_errors_are_400(client, cast):
    client.force_login(cast.alice)
    response = client.post("/consolidation/preview/", {"project": "web-app", "similarity_threshold": "2"})
    assert response.status_code == 400
    assert "similarity_threshold must be a number from 0.5 to 0.99" in text(response)
    response = client.post("/consolidation/preview/", {"project": "web-app", "similarity_threshold": "abc"})
    assert response.status_code == 400
    response = client.post(
        "/consolidation/preview/", {"project": "web-app", "similarity_threshold": "0.8", "max_clusters": "x"}
    )
    assert response.status_code == 400
    assert not ConsolidationRun.objects.exists()


@pytest.mark.cross_tenant("consolidation-preview")
def test_preview_of_another_orgs_project_is_404(client, cast):
    client.force_login(cast.alice)
    response = client.post("/consolidation/preview/", {"project": "billing", "similarity_threshold": "0.8"})
    assert response.status_code == 404


def test_apply_queues_a_real_run(client, cast, cluster, enqueued):
    client.force_login(cast.alice)
    response = client.post(
        "/consolidation/apply/", {"project": "web-app", "similarity_threshold": "0.85", "max_clusters": "3"}
    )
    assert response.status_code == 302
    (run,) = enqueued
    assert response["Location"] == f"/consolidation/runs/{run.id}/"
    run.refresh_from_db()
    assert run.status == "queued" and not run.dry_run
    assert run.options["similarity_threshold"] == 0.85 and run.options["max_clusters"] == 3
    assert run.requested_by_user == cast.alice
    # a second apply while the first is queued is a clear 400, not a 500
    response = client.post("/consolidation/apply/", {"project": "web-app", "similarity_threshold": "0.85"})
    assert response.status_code == 400
    assert "already queued" in text(response)
    assert len(enqueued) == 1


def test_apply_seconds_after_an_automatic_run_runs(client, cast, cluster, enqueued, monkeypatch):
    monkeypatch.setattr("consolidation.run_state.llm_from_settings", cycle_llm)
    ConsolidationRunFactory(
        project=cast.project_a,
        trigger=ConsolidationRun.TRIGGER_SCHEDULED,
        status=ConsolidationRun.STATUS_COMPLETED,
        started_at=timezone.now() - timedelta(seconds=5),
        finished_at=timezone.now() - timedelta(seconds=2),
    )
    client.force_login(cast.alice)

    response = client.post("/consolidation/apply/", {"project": "web-app", "similarity_threshold": "0.8"})

    assert response.status_code == 302
    (run,) = enqueued
    finished = consolidation_execute(run.id)

    assert finished is not None and finished.status == "completed" and finished.warnings == []
    assert len(finished.result["created_memories"]) == 1


def test_run_detail_polls_while_queued_and_stops_when_completed(client, cast, enqueued):
    client.force_login(cast.bob)  # viewers may watch
    run = ConsolidationRunFactory(project=cast.project_a, options={"force": True})
    full = text(client.get(f"/consolidation/runs/{run.id}/"))
    assert "<html" in full and 'hx-trigger="every 2s"' in full
    partial = client.get(f"/consolidation/runs/{run.id}/", HTTP_HX_REQUEST="true")
    assert partial.status_code == 200
    body = text(partial)
    assert "<html" not in body
    assert body.lstrip().startswith('<section id="run-status"')
    assert 'hx-trigger="every 2s"' in body
    assert f'hx-get="/consolidation/runs/{run.id}/"' in body

    ConsolidationRun.objects.filter(pk=run.pk).update(
        status="completed", phase="completed", progress=1.0, counters={"processed": 7, "clusters": 1}
    )
    body = text(client.get(f"/consolidation/runs/{run.id}/", HTTP_HX_REQUEST="true"))
    assert "hx-trigger" not in body
    assert "Completed" in body and "Processed" in body
    assert "hx-trigger" not in text(client.get(f"/consolidation/runs/{run.id}/"))


@pytest.mark.cross_tenant("consolidation")
def test_runs_history_lists_runs_of_this_org_only(client, cast):
    ConsolidationRunFactory(
        project=cast.project_a,
        status="completed",
        counters={"processed": 11},
        errors=["boom"],
        warnings=["careful"],
        llm_calls=2,
        llm_input_tokens=1234,
        llm_output_tokens=56,
    )
    ConsolidationRunFactory(project=cast.project_b, status="completed")
    client.force_login(cast.alice)
    body = text(client.get("/consolidation/"))
    assert "web-app" in body and "billing" not in body
    assert "1 error" in body and "1 warning" in body
    assert "1,234 in / 56 out" in body
    client.force_login(cast.charlie)
    body = text(client.get("/consolidation/"))
    assert "billing" in body and "web-app" not in body


def test_viewer_cannot_post(client, cast, cluster, enqueued):
    client.force_login(cast.bob)
    data = {"project": "web-app", "similarity_threshold": "0.8"}
    assert client.post("/consolidation/preview/", data).status_code == 403
    assert client.post("/consolidation/apply/", data).status_code == 403
    assert client.post("/consolidation/schedule/web-app/", {"scheduled": "on"}).status_code == 403
    assert not ConsolidationRun.objects.exists()
    assert not ProjectConsolidationSettings.objects.exists()
    assert enqueued == []


def test_member_can_preview(client, cast, cluster):
    member = UserFactory(email="mia@acme.test")
    MembershipFactory(user=member, organization=cast.org_a, role="member")
    client.force_login(member)
    response = client.post("/consolidation/preview/", {"project": "web-app", "similarity_threshold": "0.8"})
    assert response.status_code == 200
    assert cluster[0].title in text(response)


@pytest.mark.cross_tenant("consolidation-run")
def test_cross_org_run_id_is_404(client, cast):
    foreign = ConsolidationRunFactory(project=cast.project_b)
    client.force_login(cast.alice)
    assert client.get(f"/consolidation/runs/{foreign.id}/").status_code == 404
    assert client.get(f"/consolidation/runs/{foreign.id}/", HTTP_HX_REQUEST="true").status_code == 404
    assert client.get("/consolidation/runs/run_doesnotexist/").status_code == 404


def test_schedule_form_is_gated_on_pro(client, cast):
    client.force_login(cast.alice)
    body = text(client.get("/consolidation/"))
    assert SCHEDULE_GATE in body
    assert 'action="/consolidation/schedule/web-app/"' not in body
    response = client.post("/consolidation/schedule/web-app/", {"scheduled": "on", "interval_hours": "12"})
    assert response.status_code == 400
    assert "needs the teams plan" in text(response)
    assert not ProjectConsolidationSettings.objects.filter(scheduled=True).exists()


def test_schedule_form_works_on_teams(client, cast):
    set_plan(cast.org_a, "teams")
    client.force_login(cast.alice)
    body = text(client.get("/consolidation/"))
    assert SCHEDULE_GATE not in body
    assert 'action="/consolidation/schedule/web-app/"' in body
    response = client.post(
        "/consolidation/schedule/web-app/", {"scheduled": "on", "interval_hours": "12", "similarity_threshold": "0.85"}
    )
    assert response.status_code == 302
    row = ProjectConsolidationSettings.objects.get(project=cast.project_a)
    assert row.scheduled and row.interval_seconds == 12 * 3600 and row.similarity_threshold == 0.85
    # switching it off and clearing the overrides
    response = client.post("/consolidation/schedule/web-app/", {"interval_hours": "", "similarity_threshold": ""})
    assert response.status_code == 302
    row.refresh_from_db()
    assert not row.scheduled and row.interval_seconds is None and row.similarity_threshold is None
    # bad input is a form error
    response = client.post("/consolidation/schedule/web-app/", {"scheduled": "on", "interval_hours": "0.1"})
    assert response.status_code == 400
    assert "interval must be between 1 hour and 30 days" in text(response)
    # another org's project is a 404
    assert client.post("/consolidation/schedule/billing/", {"scheduled": "on"}).status_code == 404


@pytest.mark.cross_tenant("consolidation-apply")
def test_applying_to_another_orgs_project_is_404_and_queues_nothing(client, cast, enqueued):
    client.force_login(cast.alice)
    response = client.post("/consolidation/apply/", {"project": "billing", "similarity_threshold": "0.85"})
    assert response.status_code == 404
    assert enqueued == [] and not ConsolidationRun.objects.exists()


@pytest.mark.cross_tenant("consolidation-schedule")
def test_scheduling_another_orgs_project_is_404_and_changes_nothing(client, cast):
    set_plan(cast.org_a, "teams")
    set_plan(cast.org_b, "teams")
    client.force_login(cast.alice)
    response = client.post("/consolidation/schedule/billing/", {"scheduled": "on", "interval_hours": "12"})
    assert response.status_code == 404
    assert not ProjectConsolidationSettings.objects.filter(project=cast.project_b).exists()
    assert "billing" not in text(client.get("/consolidation/"))
