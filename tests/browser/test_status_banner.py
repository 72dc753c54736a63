"""The product-level banner in a real browser: a dead worker and a missing LLM are shown on every
page with their one-line fix; sessions waiting for an LLM read as waiting, with no useless Retry."""

from __future__ import annotations

import pytest
from django.db import connection
from django_q.models import Schedule

from memories.sessions.services import session_submit
from reasoningbank.tasks import queue_probe
from system.selectors import health_cache_clear

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _long_running(long_running_process: None) -> None:
    """Health read afresh, long after this process "started" (no grace), with no LLM."""


@pytest.fixture
def waiting_session(cast, make_token):
    """Set up before the browser: ORM work done while Playwright's event loop runs leaves a
    connection behind that blocks dropping the test database."""
    Schedule.objects.create(name="rb:queue-probe", func="reasoningbank.tasks.queue_probe")
    agent = make_token(cast.org_a, projects=[cast.project_a])[1]
    return session_submit(principal=agent, session_id="run-waiting", outcome="success", trace="agent: seeded the RNG")


def test_the_banner_names_a_dead_worker_and_a_missing_llm_until_both_are_fixed(
    waiting_session, settings, live_server, page, shoot
):
    base = live_server.url

    page.goto(f"{base}/accounts/login/")
    assert page.locator(".status-banner").count() == 0  # not on the sign-in page
    page.fill("input[name=login]", "alice@acme.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")

    worker = page.locator('[data-banner="worker"]')
    llm = page.locator('[data-banner="llm"]')
    assert worker.is_visible() and llm.is_visible()
    assert "No background worker has run yet" in worker.inner_text()
    assert worker.locator("code").inner_text() == ".venv/bin/python manage.py qcluster"
    assert "Set LLM_PROVIDER and LLM_API_KEY, then restart the service (docs/configuration.md#llm)." in llm.inner_text()
    shoot("banner-overview")

    # a waiting session is amber (not an error) and offers no Retry while no LLM is configured
    page.goto(f"{base}/sessions/")
    row = page.locator("tr", has_text="run-waiting")
    assert row.locator(".pill.status-waiting_for_llm").inner_text() == "Waiting for LLM"
    assert row.locator(".warntext").is_visible() and row.locator(".errtext").count() == 0
    assert row.get_by_role("button", name="Retry").count() == 0
    assert page.locator('[data-banner="worker"]').is_visible()
    shoot("banner-sessions")

    # the worker beats and an LLM is configured: the banners go, and Retry can help now
    queue_probe()
    connection.close()  # see waiting_session
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "sk-test"
    health_cache_clear()
    page.reload()
    assert page.locator(".status-banner").count() == 0
    assert page.locator("tr", has_text="run-waiting").get_by_role("button", name="Retry").is_visible()
    shoot("banner-gone")
