"""The dashboard banner for product-level problems (system/context_processors.py)."""

from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError, connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_q.models import Schedule

from reasoningbank.models import WorkerHeartbeat
from system.context_processors import status_banners

PAGES = ["/", "/memories/", "/disputed/", "/consolidation/", "/sessions/", "/settings/"]
WORKER_FIX = "Start the worker: <code>.venv/bin/python manage.py qcluster</code>"
LLM_FIX = "Set LLM_PROVIDER and LLM_API_KEY, then restart the service (docs/configuration.md#llm)."


@pytest.fixture(autouse=True)
def _long_running(long_running_process: None) -> None:
    """Health read afresh, long after this process "started" (no grace), with no LLM."""


@pytest.fixture
def scheduled(db: Any) -> None:
    Schedule.objects.create(name="rb:queue-probe", func="reasoningbank.tasks.queue_probe")


def healthy(settings: Any) -> None:
    WorkerHeartbeat.objects.create(cluster="reasoningbank", beat_at=timezone.now())
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "sk-test"


def heartbeat_queries(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries if "reasoningbank_workerheartbeat" in q["sql"]]


@pytest.mark.parametrize("path", PAGES)
def test_every_dashboard_page_shows_a_dead_worker_and_a_missing_llm_with_their_fixes(client, cast, scheduled, path):
    client.force_login(cast.bob)  # any member, even a viewer
    html = client.get(path).content.decode()
    assert 'data-banner="worker"' in html and "No background worker has run yet" in html and WORKER_FIX in html
    assert 'data-banner="llm"' in html and "No LLM is configured" in html and LLM_FIX in html


def test_a_stale_worker_says_when_it_was_last_seen(client, cast, scheduled):
    WorkerHeartbeat.objects.create(cluster="reasoningbank", beat_at=timezone.now() - timedelta(minutes=25))
    client.force_login(cast.alice)
    html = client.get("/").content.decode()
    assert "The background worker was last seen 25 minutes ago" in html and WORKER_FIX in html


def test_a_healthy_product_shows_no_banner(client, cast, settings):
    healthy(settings)
    client.force_login(cast.alice)
    html = client.get("/").content.decode()
    assert "status-banner" not in html


def test_only_the_missing_llm_is_shown_when_the_worker_beats(client, cast):
    WorkerHeartbeat.objects.create(cluster="reasoningbank", beat_at=timezone.now())
    client.force_login(cast.alice)
    html = client.get("/sessions/").content.decode()
    assert 'data-banner="llm"' in html and 'data-banner="worker"' not in html


def test_a_worker_that_may_still_be_starting_gets_no_banner(client, cast, monkeypatch):
    monkeypatch.setattr("system.selectors.process_booted_at", lambda: timezone.now() - timedelta(seconds=3))
    client.force_login(cast.alice)
    assert 'data-banner="worker"' not in client.get("/").content.decode()


def test_anonymous_visitors_see_no_operator_banner(client, db):
    html = client.get("/accounts/login/").content.decode()
    assert "status-banner" not in html and "qcluster" not in html


def test_htmx_partials_do_not_read_the_heartbeat(client, cast):
    client.force_login(cast.alice)
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/sessions/?status=failed", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert heartbeat_queries(queries) == []


def test_the_banner_costs_one_query_and_is_then_cached(client, cast, scheduled):
    client.force_login(cast.alice)
    with CaptureQueriesContext(connection) as first:
        client.get("/")
    with CaptureQueriesContext(connection) as second:
        client.get("/memories/")
    assert len(heartbeat_queries(first)) == 1 and heartbeat_queries(second) == []


def test_a_heartbeat_read_failure_never_breaks_a_page(client, cast):
    client.force_login(cast.alice)
    with mock.patch("system.selectors.worker_health_get", side_effect=OperationalError("gone")):
        response = client.get("/")
    assert response.status_code == 200 and 'data-banner="worker"' not in response.content.decode()


def test_the_context_processor_is_lazy(rf, cast):
    request = rf.get("/")
    request.user = cast.alice
    from reasoningbank.health import WorkerHealth

    with mock.patch("system.selectors.worker_health_get", return_value=WorkerHealth("ok", 1.0, 180)) as read:
        context = status_banners(request)
        read.assert_not_called()
        assert [b.kind for b in context["status_banners"]] == ["llm"]
        read.assert_called_once()


def test_an_organization_past_its_alert_threshold_sees_the_budget_banner_and_another_does_not(client, cast, settings):
    from reasoningbank.models import LlmBudget, LlmBudgetPeriod

    healthy(settings)
    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=10_000, alert_percent=80)
    LlmBudgetPeriod.objects.create(
        organization=cast.org_a, period="day", start=timezone.now().date(), used_tokens=8_500, alerted_at=timezone.now()
    )
    client.force_login(cast.bob)
    html = client.get("/").content.decode()
    assert (
        'data-banner="budget"' in html
        and "85% of the organization&#x27;s daily LLM cap of 10,000 tokens is used" in html
    )
    client.force_login(cast.charlie)
    assert 'data-banner="budget"' not in client.get("/").content.decode()


def test_a_reached_cap_says_that_llm_work_waits_and_until_when(client, cast, settings):
    from reasoningbank.models import LlmBudget, LlmBudgetPeriod

    healthy(settings)
    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=10_000, alert_percent=None)
    today = timezone.now().date()
    LlmBudgetPeriod.objects.create(
        organization=cast.org_a, period="day", start=today, used_tokens=9_000, reached_at=timezone.now()
    )
    client.force_login(cast.alice)
    html = client.get("/").content.decode()
    assert "daily LLM cap of 10,000 tokens is reached: distillation and consolidation wait until" in html
    assert f"{today + timedelta(days=1):%Y-%m-%d} 00:00 UTC" in html
