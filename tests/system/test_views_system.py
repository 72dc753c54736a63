"""The dashboard's system page (system/views_system.py): who may see it, whose rows it shows,
the health part it polls, the runs' phase timelines, and its empty states."""

from __future__ import annotations

import html
import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from django_q.models import Schedule, Task

from accounts.models import Membership
from consolidation.models import ConsolidationRun, ProjectConsolidationSettings
from memories.models import AgentSession
from reasoningbank.models import WorkerHeartbeat
from system.selectors_system import task_error_text
from tests.factories import AgentSessionFactory, ConsolidationRunFactory, MembershipFactory, UserFactory

URL = "/system/"


@pytest.fixture(autouse=True)
def _long_running(long_running_process: None) -> None:
    """Health read afresh, long after this process "started" (no grace), with no LLM."""


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


def failed_task(func: str, *args: Any, error: str = "boom", name: str = "") -> Task:
    now = timezone.now()
    trace = f'Traceback (most recent call last):\n  File "x.py", line 1, in f\nRuntimeError: {error}\n'
    return Task.objects.create(
        id=uuid.uuid4().hex,
        name=name or f"task {uuid.uuid4().hex[:6]}",
        func=func,
        args=args,
        result=f"{error} : {trace}",
        started=now,
        stopped=now,
        success=False,
    )


@pytest.fixture
def both_orgs(cast: Any) -> dict[str, Any]:
    """A failed run, a failed session and a failed task of each org, and a failed schedule of nobody's."""
    rows: dict[str, Any] = {}
    for key, project in (("a", cast.project_a), ("b", cast.project_b)):
        run = ConsolidationRunFactory(
            project=project,
            status=ConsolidationRun.STATUS_FAILED,
            errors=[f"RuntimeError: run of {key} broke"],
            finished_at=timezone.now(),
        )
        session = AgentSessionFactory(
            project=project,
            external_id=f"session-of-{key}",
            status=AgentSession.STATUS_FAILED,
            error=f"distillation of {key} broke",
        )
        queued: Any = AgentSessionFactory(project=project, external_id=f"queued-of-{key}")
        task = failed_task(
            "memories.tasks.session_distill", queued.id, error=f"task of {key} broke", name=f"distill {queued.id}"
        )
        rows[key] = {"run": run, "session": session, "task": task}
    rows["schedule"] = failed_task(
        "reasoningbank.tasks.queue_probe", error="the heartbeat broke", name="rb:queue-probe"
    )
    return rows


@pytest.fixture
def staff(db: Any) -> Any:
    return get_user_model().objects.create_user(
        username="ops", email="ops@rb.test", password="x-long-pass", is_staff=True
    )


# --- who may see it ----------------------------------------------------------------------------------


@pytest.mark.cross_tenant("system-status")
def test_an_owner_sees_her_orgs_runs_and_errors_and_never_another_orgs(client, cast, both_orgs):
    client.force_login(cast.alice)
    response = client.get(URL)
    assert response.status_code == 200
    body = text(response)
    a, b = both_orgs["a"], both_orgs["b"]
    assert a["run"].id in body and "RuntimeError: run of a broke" in body
    assert "distillation of a broke" in body and "RuntimeError: task of a broke" in body
    # org B's run, session and task, and the schedule that belongs to no org, are not on her page
    for absent in (
        b["run"].id,
        "run of b broke",
        "distillation of b broke",
        "task of b broke",
        b["task"].id,
        "the heartbeat broke",
        "Globex",
    ):
        assert absent not in body
    # her org's objects link to their dashboard pages, never to the admin
    assert f'href="/consolidation/runs/{a["run"].id}/"' in body
    assert f'href="/sessions/{a["session"].id}/"' in body
    assert "/admin/" not in body


def test_an_admin_may_see_the_page_but_members_and_viewers_are_refused(client, cast):
    admin, member = UserFactory(email="ada@acme.test"), UserFactory(email="max@acme.test")
    MembershipFactory(user=admin, organization=cast.org_a, role=Membership.ROLE_ADMIN)
    MembershipFactory(user=member, organization=cast.org_a, role=Membership.ROLE_MEMBER)
    client.force_login(admin)
    assert client.get(URL).status_code == 200
    for user in (member, cast.bob):
        client.force_login(user)
        assert client.get(URL).status_code == 403


def test_the_nav_links_the_page_for_owners_and_admins_only(client, cast):
    client.force_login(cast.alice)
    assert '<a href="/system/" >System</a>' in client.get("/").content.decode()
    assert 'href="/system/" aria-current="page">System</a>' in client.get(URL).content.decode()
    client.force_login(cast.bob)
    assert 'href="/system/"' not in client.get("/").content.decode()


def test_staff_see_every_orgs_runs_and_errors_with_the_org_named(client, cast, both_orgs, staff):
    client.force_login(staff)  # staff need no membership
    response = client.get(URL)
    assert response.status_code == 200
    body = text(response)
    for key in ("a", "b"):
        rows = both_orgs[key]
        assert rows["run"].id in body and f"distillation of {key} broke" in body and f"task of {key} broke" in body
        assert f'href="/admin/consolidation/consolidationrun/{rows["run"].id}/change/"' in body
        assert f'href="/admin/memories/agentsession/{rows["session"].id}/change/"' in body
    assert (
        "the heartbeat broke" in body and f'href="/admin/django_q/failure/{both_orgs["schedule"].id}/change/"' in body
    )
    assert "<th>Organization</th>" in body and "<td>Acme</td>" in body and "<td>Globex</td>" in body


def test_a_staff_member_of_an_org_gets_dashboard_links_for_it_and_admin_links_for_the_others(client, cast, both_orgs):
    cast.alice.is_staff = True
    cast.alice.save(update_fields=["is_staff"])
    client.force_login(cast.alice)
    body = text(client.get(URL))
    assert f'href="/consolidation/runs/{both_orgs["a"]["run"].id}/"' in body
    assert f'href="/admin/consolidation/consolidationrun/{both_orgs["b"]["run"].id}/change/"' in body


def backing_off(project: Any, failures: int, error: str) -> ProjectConsolidationSettings:
    now = timezone.now()
    row, _ = ProjectConsolidationSettings.objects.update_or_create(
        project=project,
        defaults={
            "organization": project.organization, "consecutive_failures": failures, "last_failed_at": now,
            "retry_after": now + timedelta(minutes=5 * 2 ** (failures - 1)), "last_error": error,
        },
    )  # fmt: skip
    return row


@pytest.mark.cross_tenant("system-status")
def test_a_project_whose_runs_keep_failing_is_listed_with_its_wait_for_its_own_org_only(client, cast):
    backing_off(cast.project_a, 3, "ValueError: max_workers must be greater than 0")
    backing_off(cast.project_b, 2, "globex's run broke")
    client.force_login(cast.alice)

    body = text(client.get(URL))

    section = body[body.index('id="system-backoff"') : body.index('id="system-errors"')]
    assert 'data-project="web-app"' in section and "max_workers must be greater than 0" in section
    assert '<td class="num">3</td>' in section and "not before" in section
    assert "billing" not in section and "globex's run broke" not in body


def test_staff_see_every_orgs_projects_backing_off_with_the_org_named(client, cast, staff):
    backing_off(cast.project_a, 3, "acme's run broke")
    backing_off(cast.project_b, 9, "globex's run broke")
    client.force_login(staff)

    body = text(client.get(URL))

    section = body[body.index('id="system-backoff"') : body.index('id="system-errors"')]
    assert section.index('data-project="billing"') < section.index('data-project="web-app"')  # most failures first
    assert "<td>Globex</td>" in section and "<td>Acme</td>" in section


def test_no_project_backing_off_says_so(client, cast):
    ProjectConsolidationSettings.objects.create(project=cast.project_a, organization=cast.org_a)
    client.force_login(cast.alice)

    body = text(client.get(URL))

    assert "None: every project's last consolidation run completed" in body


def test_anonymous_visitors_are_sent_to_sign_in(client, db):
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- health ------------------------------------------------------------------------------------------


def test_a_dead_worker_shows_as_down_with_the_fix_command(client, cast):
    Schedule.objects.create(name="rb:queue-probe", func="reasoningbank.tasks.queue_probe")
    WorkerHeartbeat.objects.create(cluster="reasoningbank", beat_at=timezone.now() - timedelta(minutes=25))
    client.force_login(cast.alice)
    body = text(client.get(URL))
    worker = re.search(r'<div class="card health[^"]*" id="health-worker".*?</div>', body, re.S)
    assert worker is not None
    assert 'data-status="stale"' in worker.group(0) and "Down" in worker.group(0)
    assert "Last heartbeat 25 minutes ago" in worker.group(0)
    assert "Start the worker: <code>.venv/bin/python manage.py qcluster</code>" in worker.group(0)


def test_each_worker_is_listed_with_its_own_heartbeat_alive_or_down(client, cast):
    """Two workers on two machines: the page shows both, each by its own beat (reasoningbank/worker_presence.py)."""
    now = timezone.now()
    WorkerHeartbeat.objects.create(cluster="reasoningbank@machine-a/11", beat_at=now, host="machine-a", pid=11)
    WorkerHeartbeat.objects.create(
        cluster="reasoningbank@machine-b/22", beat_at=now - timedelta(minutes=10), host="machine-b", pid=22
    )
    client.force_login(cast.alice)
    rows = re.findall(r"<tr data-alive[^>]*>(.*?)</tr>", text(client.get(URL)), re.S)
    page = [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in rows]
    assert page == ["machine-a/11 Alive 0 seconds ago", "machine-b/22 Down 10 minutes ago"]


def test_a_live_worker_and_a_configured_llm_show_no_fix(client, cast, settings):
    WorkerHeartbeat.objects.create(cluster="reasoningbank", beat_at=timezone.now() - timedelta(seconds=40))
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "sk-test"
    client.force_login(cast.alice)
    body = text(client.get(URL))
    assert 'data-status="ok"' in body and "Alive" in body and "Last heartbeat 40 seconds ago" in body
    assert "<code>openai</code> configured" in body
    assert 'class="fix"' not in body


def test_the_llm_part_gives_the_one_line_fix_and_counts_the_orgs_waiting_work(client, cast):
    AgentSessionFactory(project=cast.project_a, status=AgentSession.STATUS_WAITING)
    AgentSessionFactory(project=cast.project_b, status=AgentSession.STATUS_WAITING)  # another org's: not counted
    client.force_login(cast.alice)
    body = text(client.get(URL))
    assert "Not configured" in body
    fix = "Set LLM_PROVIDER and LLM_API_KEY, then restart the service (docs/configuration.md#llm)."
    assert f'<p class="fix">{fix}</p>' in body
    assert "Waiting for an LLM in your organization: 1 session, 0 consolidation runs." in body


def test_the_queue_shows_depth_and_the_age_of_the_oldest_waiting_item(client, cast):
    ConsolidationRunFactory(project=cast.project_a, created_at=timezone.now() - timedelta(minutes=7))
    client.force_login(cast.alice)
    body = text(client.get(URL))
    assert 'id="health-queue" data-status="stalled"' in body and "Stalled" in body
    assert '<tr class="stalled"><td>Consolidation runs</td><td class="num">1</td><td>7 minutes</td></tr>' in body


def test_the_health_part_polls_every_10_seconds_and_is_served_alone_to_htmx(client, cast):
    client.force_login(cast.alice)
    body = text(client.get(URL))
    assert f'hx-get="{URL}" hx-trigger="every 10s" hx-swap="outerHTML"' in body
    partial = text(client.get(URL, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="system-health"))
    assert partial.lstrip().startswith('<section id="system-health"') and "<html" not in partial
    assert "Consolidation runs" in partial and "Recent errors" not in partial


def test_a_viewer_cannot_poll_the_health_part_either(client, cast):
    client.force_login(cast.bob)
    assert client.get(URL, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="system-health").status_code == 403


# --- runs and their timelines ------------------------------------------------------------------------------


def test_the_timeline_draws_each_phase_with_its_seconds_in_the_cycles_order(client, cast):
    run = ConsolidationRunFactory(
        project=cast.project_a,
        status=ConsolidationRun.STATUS_COMPLETED,
        dry_run=True,
        phase_durations={"synthesize": 2.0, "scan": 0.5, "cluster": 1.5, "archive": 0},
    )
    client.force_login(cast.alice)
    body = text(client.get(URL))
    row = re.search(rf'<tr data-run="{run.id}">.*?</tr>', body, re.S)
    assert row is not None
    cells = row.group(0)
    assert '<span class="badge">dry run</span>' in cells
    rects = re.findall(
        r'<rect class="tl-(\d+)" fill="hsl\([\d.]+, 55%, \d+%\)" x="([\d.]+)" y="0" width="([\d.]+)" height="10" '
        r'data-phase="(\w+)"><title>([^<]+)</title></rect>',
        cells,
    )
    assert [(phase, float(x), float(w), title) for _, x, w, phase, title in rects] == [
        ("scan", 0.0, 12.5, "scan: 0.500 s"),
        ("cluster", 12.5, 37.5, "cluster: 1.500 s"),
        ("synthesize", 50.0, 50.0, "synthesize: 2.000 s"),
    ]
    label = "Phase timings: scan: 0.500 s, cluster: 1.500 s, synthesize: 2.000 s, archive: 0.000 s; total 4.000 s"
    assert f'role="img" aria-label="{label}"' in cells
    assert "<li>archive: 0.000 s</li>" in cells  # a zero-length phase is listed, not drawn
    assert '<td class="num nowrap">4.000 s</td>' in cells


def test_a_run_without_timings_says_so(client, cast):
    ConsolidationRunFactory(project=cast.project_a)  # queued
    ConsolidationRunFactory(project=cast.project_a, status=ConsolidationRun.STATUS_SKIPPED)
    client.force_login(cast.alice)
    body = text(client.get(URL))
    assert "in progress" in body and "no phase timings" in body and "<svg" not in body


def test_runs_are_paged_20_at_a_time_and_htmx_swaps_only_the_list(client, cast):
    base = timezone.now()
    runs = [
        ConsolidationRunFactory(
            project=cast.project_a, status=ConsolidationRun.STATUS_COMPLETED, created_at=base - timedelta(minutes=i)
        )
        for i in range(21)
    ]
    client.force_login(cast.alice)
    first = text(client.get(URL))
    assert first.count("<tr data-run=") == 20 and runs[20].id not in first and "Page 1 of 2" in first
    assert 'hx-target="#system-runs"' in first
    second = text(client.get(URL + "?page=2", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="system-runs"))
    assert second.lstrip().startswith('<section id="system-runs"') and "system-health" not in second
    assert second.count("<tr data-run=") == 1 and runs[20].id in second


# --- empty states and the banner ----------------------------------------------------------------------------


def test_a_new_org_sees_empty_states(client, cast):
    client.force_login(cast.alice)
    body = text(client.get(URL))
    assert "No consolidation has run yet in this organization." in body
    assert (
        "No errors: no failed consolidation run, session distillation or background task in this organization." in body
    )


def test_the_banner_links_admins_to_the_page_and_not_viewers(client, cast):
    client.force_login(cast.alice)
    overview = client.get("/").content.decode()
    assert 'data-banner="llm"' in overview and '<a class="see-system" href="/system/">See system status</a>' in overview
    assert "See system status" not in client.get(URL).content.decode()  # not on the page itself
    client.force_login(cast.bob)
    overview = client.get("/").content.decode()
    assert 'data-banner="llm"' in overview and "See system status" not in overview


# --- the failed task's error text ----------------------------------------------------------------------------


def test_a_failed_tasks_error_is_the_last_line_of_its_traceback():
    trace = (
        'Traceback (most recent call last):\n  File "x.py", line 3, in f\n    raise ValueError("no")\nValueError: no\n'
    )
    assert task_error_text(f"no : {trace}") == "ValueError: no"
    assert task_error_text("Task exceeded maximum timeout value (600 seconds)") == (
        "Task exceeded maximum timeout value (600 seconds)"
    )
    assert task_error_text(None) == "no error recorded"
    assert task_error_text("x" * 900).endswith("…") and len(task_error_text("x" * 900)) == 500


def test_staff_see_the_top_llm_spenders_and_an_owner_does_not(client, cast, staff):
    from reasoningbank.models import LlmCall

    LlmCall.objects.create(organization=cast.org_a, provider="p", model="m", purpose="distill", input_tokens=5_000)
    LlmCall.objects.create(organization=cast.org_b, provider="p", model="m", purpose="judge", input_tokens=90_000)
    client.force_login(staff)
    html = client.get("/system/").content.decode()
    assert html.index('data-org="globex"') < html.index('data-org="acme"')  # the biggest first
    assert "90,000" in html and "5,000" in html
    client.force_login(cast.alice)
    assert 'id="system-spenders"' not in client.get("/system/").content.decode()
