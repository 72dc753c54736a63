"""The system page in a real browser: with the worker stopped, the banner's link leads to the page,
which shows the worker down with its fix, the runs' phase timelines and the recent errors."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from django_q.models import Schedule

from consolidation.models import ConsolidationRun
from memories.models import AgentSession
from reasoningbank.models import WorkerHeartbeat
from system.selectors import health_cache_clear
from tests.factories import AgentSessionFactory, ConsolidationRunFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOT = "/tmp/system_page.png"


@pytest.fixture(autouse=True)
def _long_running(long_running_process: None) -> None:
    """Health read afresh, long after this process "started" (no grace), with no LLM."""


@pytest.fixture
def stopped_worker(cast):
    """A worker that beat 25 minutes ago and then stopped, a few runs and a failed session; set up
    before the browser opens (ORM work while Playwright's loop runs leaves a connection behind)."""
    Schedule.objects.create(name="rb:queue-probe", func="reasoningbank.tasks.queue_probe")
    WorkerHeartbeat.objects.create(cluster="reasoningbank", beat_at=timezone.now() - timedelta(minutes=25))
    now = timezone.now()
    ConsolidationRunFactory(
        project=cast.project_a,
        status=ConsolidationRun.STATUS_COMPLETED,
        created_at=now - timedelta(hours=2),
        phase_durations={
            "scan": 0.42,
            "duplicates": 0.18,
            "retention": 0.05,
            "judge": 3.1,
            "cluster": 0.9,
            "synthesize": 6.4,
            "summarize": 2.2,
            "patterns": 0.3,
            "ladder": 0.6,
            "archive": 0.1,
        },
    )
    ConsolidationRunFactory(
        project=cast.project_a,
        status=ConsolidationRun.STATUS_COMPLETED,
        dry_run=True,
        created_at=now - timedelta(hours=1),
        phase_durations={"scan": 0.4, "duplicates": 0.2, "retention": 0.05, "judge": 1.2, "cluster": 0.8},
    )
    ConsolidationRunFactory(
        project=cast.project_a,
        status=ConsolidationRun.STATUS_FAILED,
        created_at=now - timedelta(minutes=30),
        finished_at=now - timedelta(minutes=29),
        errors=["TimeoutError: the run took longer than 10 minutes"],
        phase_durations={"scan": 0.5, "duplicates": 0.2, "retention": 0.1, "judge": 9.0},
    )
    ConsolidationRunFactory(project=cast.project_a, created_at=now - timedelta(minutes=20))  # queued, waiting
    AgentSessionFactory(
        project=cast.project_a,
        external_id="ci-fix-42",
        status=AgentSession.STATUS_FAILED,
        error="LlmError: the reply could not be parsed as JSON after one repair",
    )
    AgentSessionFactory(
        project=cast.project_b, external_id="globex-secret", status=AgentSession.STATUS_FAILED, error="globex's failure"
    )


def test_the_banner_leads_to_the_system_page_which_shows_the_stopped_worker_and_its_fix(
    stopped_worker, live_server, page, shoot
):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")

    banner = page.locator('[data-banner="worker"]')
    assert "The background worker was last seen 25 minutes ago" in banner.inner_text()
    shoot("system-banner")
    banner.get_by_role("link", name="See system status").click()
    page.wait_for_url(f"{base}/system/")

    worker = page.locator("#health-worker")
    assert worker.locator(".health-status").inner_text() == "Down"
    assert "Last heartbeat 25 minutes ago" in worker.inner_text()
    assert worker.locator(".fix code").inner_text() == ".venv/bin/python manage.py qcluster"
    assert page.locator("#health-queue .health-status").inner_text() == "Stalled"
    assert page.locator("#health-llm .health-status").inner_text() == "Not configured"
    assert page.get_by_role("link", name="System").get_attribute("aria-current") == "page"

    # three timelines, each an image whose label names every phase's seconds
    timelines = page.get_by_role("img", name="Phase timings:", exact=False)
    assert timelines.count() == 3
    assert "judge: 9.000 s" in (timelines.first.get_attribute("aria-label") or "")
    # the failed run and session are listed with their errors; the other org's never
    errors = page.locator("#system-errors")
    assert "TimeoutError: the run took longer than 10 minutes" in errors.inner_text()
    assert "LlmError: the reply could not be parsed" in errors.inner_text()
    assert "globex" not in page.content()

    path = shoot("system-page")
    shutil.copyfile(path, SCREENSHOT)

    # the health part refreshes by itself: once the worker beats again it reads alive without a reload
    page.wait_for_timeout(500)
    WorkerHeartbeat.objects.filter(cluster="reasoningbank").update(beat_at=timezone.now())
    connection.close()  # see stopped_worker
    health_cache_clear()
    page.locator("#health-worker .health-status", has_text="Alive").wait_for(timeout=15_000)
    assert page.locator("#health-worker .fix").count() == 0
