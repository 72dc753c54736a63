"""The arithmetic of LLM budgets (reasoningbank/ai/budget_rules.py): UTC periods and their turns, the
caps in force, a call's estimate and the alert threshold. Pure: no database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

from reasoningbank.ai.budget_rules import (
    DAY,
    MESSAGE_OVERHEAD_TOKENS,
    MONTH,
    alert_threshold,
    caps_in_force,
    fits,
    period_end,
    period_start,
    tokens_estimate,
)


def test_a_day_and_a_month_start_at_utc_midnight_whatever_the_clock_s_zone() -> None:
    tokyo = timezone(timedelta(hours=9))
    moment = datetime(2026, 12, 1, 8, 30, tzinfo=tokyo)  # 2026-11-30 23:30 UTC
    assert period_start(DAY, moment) == date(2026, 11, 30)
    assert period_start(MONTH, moment) == date(2026, 11, 1)


def test_a_period_turns_at_the_next_utc_midnight_also_across_a_year() -> None:
    assert period_end(DAY, date(2026, 12, 31)) == datetime(2027, 1, 1, tzinfo=UTC)
    assert period_end(MONTH, date(2026, 12, 1)) == datetime(2027, 1, 1, tzinfo=UTC)
    assert period_end(MONTH, date(2027, 2, 1)) == datetime(2027, 3, 1, tzinfo=UTC)
    assert period_end(MONTH, date(2028, 1, 1)) == datetime(2028, 2, 1, tzinfo=UTC)


def test_the_smaller_monthly_cap_is_the_one_in_force_and_named() -> None:
    own = caps_in_force(daily=1_000, monthly=50_000, plan_monthly=200_000, plan="free")
    assert [(c.name, c.source, c.limit) for c in own] == [
        ("daily", "organization", 1_000),
        ("monthly", "organization", 50_000),
    ]
    plan = caps_in_force(daily=None, monthly=None, plan_monthly=200_000, plan="free")
    assert [(c.name, c.source, c.limit) for c in plan] == [("monthly", "plan", 200_000)]
    assert "free plan's monthly LLM budget of 200,000 tokens" in plan[0].describe()
    assert caps_in_force(daily=None, monthly=None, plan_monthly=None, plan="enterprise") == []


def test_a_call_that_exactly_reaches_a_cap_fits_and_one_token_more_does_not() -> None:
    assert fits(used=900, reserved=50, tokens=50, limit=1_000)
    assert not fits(used=900, reserved=50, tokens=51, limit=1_000)


def test_the_estimate_bounds_the_reply_by_max_tokens_and_the_prompt_by_its_bytes() -> None:
    estimate = tokens_estimate(system="ab", prompt="é" * 10, max_tokens=300, bytes_per_token=2)
    assert estimate == (2 + 20) // 2 + MESSAGE_OVERHEAD_TOKENS + 300  # é is two bytes in UTF-8
    strict = tokens_estimate(system="", prompt="x" * 1001, max_tokens=0, bytes_per_token=1)
    assert strict == 1001 + MESSAGE_OVERHEAD_TOKENS


def test_the_alert_threshold_rounds_up_and_none_means_no_alert() -> None:
    assert alert_threshold(999, 80) == 800
    assert alert_threshold(1_000, 100) == 1_000
    assert alert_threshold(1_000, None) is None
