"""The pure verdicts behind /readyz and the dashboard banner (reasoningbank/health.py)."""

from datetime import UTC, datetime, timedelta

import pytest

from reasoningbank.health import (
    Backlog,
    LlmHealth,
    WorkerHealth,
    age_text,
    backlog,
    llm_health,
    queue_health,
    running_health,
    status_banners,
    worker_health,
)

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
LONG_AGO = NOW - timedelta(hours=2)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def worker(beat_at=None, booted_at=LONG_AGO, **kwargs):
    return worker_health(now=NOW, beat_at=beat_at, booted_at=booted_at, stale_after=180, grace=120, **kwargs)


@pytest.mark.parametrize(
    ("beat_at", "booted_at", "status"),
    [
        (ago(10), LONG_AGO, "ok"),
        (ago(180), LONG_AGO, "ok"),  # the threshold itself is still ok
        (ago(181), LONG_AGO, "stale"),
        (None, LONG_AGO, "never_seen"),
        (None, ago(30), "starting"),  # fresh install, before the first tick
        (ago(3600), ago(30), "starting"),  # restart: the last beat is from before it
        (ago(3600), ago(121), "stale"),  # grace over
        (ago(10), ago(5), "ok"),  # a beat right after a start is simply ok
    ],
)
def test_the_worker_status_follows_its_last_heartbeat_and_the_start_grace(beat_at, booted_at, status):
    assert worker(beat_at, booted_at).status == status


def test_the_age_of_the_last_beat_is_reported():
    assert worker(ago(42)).last_probe_age == 42
    assert worker(None).last_probe_age is None


def test_only_a_stale_or_never_seen_worker_is_down():
    assert worker(ago(500)).down and worker(None).down
    assert not worker(ago(5)).down and not worker(None, ago(5)).down and not worker(None, inline=True).down


def test_inline_tasks_need_no_worker():
    assert worker(None, inline=True).status == "inline"


def test_a_backlog_ages_its_oldest_item_and_never_goes_negative():
    assert backlog(now=NOW, count=3, oldest=ago(90)) == Backlog(3, 90.0)
    assert backlog(now=NOW, count=0, oldest=None) == Backlog(0, None)
    assert backlog(now=NOW, count=1, oldest=NOW + timedelta(seconds=5)) == Backlog(1, 0.0)


@pytest.mark.parametrize(
    ("tasks", "runs", "sessions", "status"),
    [
        (Backlog(0, None), Backlog(0, None), Backlog(0, None), "ok"),
        (Backlog(5, 299), Backlog(1, 10), Backlog(0, None), "ok"),
        (Backlog(5, 301), Backlog(0, None), Backlog(0, None), "stalled"),
        (None, Backlog(1, 400), Backlog(0, None), "stalled"),  # another broker: runs still tell
        (None, Backlog(0, None), Backlog(2, 301), "stalled"),
    ],
)
def test_the_queue_is_stalled_when_its_oldest_work_waited_past_the_threshold(tasks, runs, sessions, status):
    assert queue_health(tasks=tasks, runs=runs, sessions=sessions, stalled_after=300).status == status


@pytest.mark.parametrize(
    ("provider", "has_key", "has_base_url", "status"),
    [
        ("none", True, True, "none"),
        ("", False, False, "none"),
        ("openai", True, False, "configured"),
        ("Anthropic", True, False, "configured"),
        ("openai", False, True, "configured"),  # a local compatible server
        ("openai", False, False, "missing_key"),
    ],
)
def test_the_llm_is_configured_with_a_provider_and_a_key_or_base_url(provider, has_key, has_base_url, status):
    assert llm_health(provider=provider, has_key=has_key, has_base_url=has_base_url).status == status


def test_a_dead_worker_and_no_llm_each_get_a_banner_with_its_fix():
    worker_banner, llm_banner = status_banners(worker=worker(ago(720)), llm=LlmHealth("none", "none"))
    assert worker_banner.kind == "worker" and "last seen 12 minutes ago" in worker_banner.message
    assert worker_banner.text.endswith("Start the worker: `.venv/bin/python manage.py qcluster`")
    assert llm_banner.kind == "llm"
    assert llm_banner.fix == "Set LLM_PROVIDER and LLM_API_KEY, then restart the service (docs/configuration.md#llm)."


def test_a_worker_never_seen_without_its_schedule_is_told_to_create_the_schedules():
    (banner,) = status_banners(worker=worker(None, scheduled=False), llm=LlmHealth("configured", "openai"))
    assert banner.message.startswith("No background worker has run yet")
    assert banner.command == ".venv/bin/python manage.py setup_schedules && .venv/bin/python manage.py qcluster"


def test_a_provider_without_a_key_names_the_missing_setting():
    (banner,) = status_banners(worker=worker(ago(5)), llm=LlmHealth("missing_key", "openai"))
    assert "LLM_PROVIDER=openai has no API key" in banner.message and "LLM_API_KEY" in banner.fix


def test_a_healthy_or_starting_product_shows_no_banner():
    llm = LlmHealth("configured", "openai")
    assert status_banners(worker=worker(ago(5)), llm=llm) == []
    assert status_banners(worker=worker(None, ago(10)), llm=llm) == []
    assert status_banners(worker=WorkerHealth("inline", None, 180), llm=llm) == []


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 seconds"), (1, "1 second"), (59.9, "59 seconds"), (60, "1 minute"), (7200, "2 hours"), (90000, "1 day")],
)
def test_ages_read_as_short_human_durations(seconds, text):
    assert age_text(seconds) == text


def test_running_work_is_orphaned_when_any_run_or_session_lost_its_worker():
    assert running_health(runs=0, sessions=0, stale_after=45).status == "ok"
    assert running_health(runs=1, sessions=0, stale_after=45).status == "orphaned"
    assert running_health(runs=0, sessions=2, stale_after=45).status == "orphaned"
