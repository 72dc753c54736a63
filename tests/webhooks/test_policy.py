"""The delivery policy (webhooks/policy.py, pure): success, backoff, switching off, URLs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from webhooks.policy import response_is_success, retry_delay_seconds, subscription_is_failing_too_long, url_problem


@pytest.mark.parametrize(
    ("code", "success"), [(200, True), (204, True), (299, True), (199, False), (301, False), (404, False), (500, False)]
)
def test_only_a_2xx_answer_is_a_success(code: int, success: bool) -> None:
    assert response_is_success(code) is success


def test_each_retry_waits_four_times_longer_than_the_last() -> None:
    delays = [retry_delay_seconds(n, base_seconds=30) for n in range(1, 6)]
    assert delays == pytest.approx([30, 120, 480, 1920, 7680])


def test_a_subscription_is_switched_off_only_once_it_has_failed_for_the_whole_period() -> None:
    now = datetime(2026, 1, 10, tzinfo=UTC)
    day = 86400.0
    assert not subscription_is_failing_too_long(None, now, after_seconds=day)
    assert not subscription_is_failing_too_long(now - timedelta(hours=23), now, after_seconds=day)
    assert subscription_is_failing_too_long(now - timedelta(hours=24), now, after_seconds=day)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://hooks.example.com/rb", "must use https"),
        ("ftp://hooks.example.com/rb", "must use https"),
        ("https:///rb", "must name a host"),
        ("https://user:pw@hooks.example.com/rb", "user name or password"),
        ("https://hooks.example.com/rb#x", "fragment"),
        ("https://hooks.example.com:99999/rb", "port"),
        ("https://hooks.example.com/r b", "spaces"),
        ("", "https URL"),
        ("https://hooks.example.com/" + "a" * 2000, "at most 2000"),
    ],
)
def test_a_url_that_cannot_receive_webhooks_is_refused_with_the_reason(url: str, problem: str) -> None:
    found = url_problem(url)
    assert found is not None and problem in found


def test_an_https_url_with_a_port_and_a_query_is_fine() -> None:
    assert url_problem("https://hooks.example.com:8443/rb?team=core") is None
