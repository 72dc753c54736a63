"""The arithmetic of LLM budgets (reasoningbank/ai/budget_rules.py): UTC periods and their turns, the
caps in force, a call's likely cost and ceiling, admission, the charge and the alert threshold. Pure:
no database."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta, timezone

from reasoningbank.ai.budget_rules import (
    ADMIT,
    DAY,
    MESSAGE_OVERHEAD_TOKENS,
    MONTH,
    REFUSE,
    WAIT,
    CallCost,
    admission,
    alert_threshold,
    call_cost,
    caps_in_force,
    charge,
    period_end,
    period_start,
    reply_expected,
    tokens_ceiling,
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


def test_a_call_whose_likely_cost_exactly_reaches_a_cap_runs_and_one_token_more_is_refused() -> None:
    cost = CallCost(likely=50, ceiling=500)
    assert admission(used=900, reserved=50, ceilings=0, cost=cost, limit=1_000) == ADMIT  # nothing else in flight
    assert admission(used=900, reserved=51, ceilings=0, cost=cost, limit=1_000) == REFUSE


def test_a_call_waits_while_the_calls_in_flight_could_fill_the_cap_at_their_ceilings() -> None:
    cost = CallCost(likely=100, ceiling=400)
    # room for the likely costs, and for every ceiling: it runs alongside the others
    assert admission(used=0, reserved=300, ceilings=1_200, cost=cost, limit=2_000) == ADMIT
    # room for the likely costs, not for the ceilings: it waits for the others to settle
    assert admission(used=0, reserved=300, ceilings=1_700, cost=cost, limit=2_000) == WAIT
    # once they settled, alone, it runs even if its ceiling passes the cap
    assert admission(used=1_800, reserved=0, ceilings=0, cost=cost, limit=2_000) == ADMIT
    # no room for its likely cost: refused, however little is in flight
    assert admission(used=1_950, reserved=0, ceilings=0, cost=cost, limit=2_000) == REFUSE


def test_admitted_calls_spending_up_to_their_ceilings_pass_the_cap_by_at_most_one_ceiling() -> None:
    """A simulation of any interleaving of admissions and settlements, each call charged anything up
    to its ceiling: the spend never passes the cap by more than the largest ceiling."""
    rng = random.Random(7)
    for _ in range(200):
        limit = rng.randrange(1_000, 50_000)
        used, reserved, ceilings, in_flight = 0, 0, 0, []
        for _ in range(400):
            if in_flight and rng.random() < 0.4:  # one settles
                cost = in_flight.pop(rng.randrange(len(in_flight)))
                used += charge(rng.randrange(0, 3 * cost.ceiling), cost.ceiling)  # honest or over-reporting
                reserved, ceilings = reserved - cost.likely, ceilings - cost.ceiling
                continue
            ceiling = rng.randrange(200, 4_000)
            cost = CallCost(likely=rng.randrange(1, ceiling + 1), ceiling=ceiling)
            if admission(used=used, reserved=reserved, ceilings=ceilings, cost=cost, limit=limit) == ADMIT:
                in_flight.append(cost)
                reserved, ceilings = reserved + cost.likely, ceilings + cost.ceiling
            assert used + ceilings <= limit + 4_000
        assert used <= limit + 4_000


def test_a_call_is_charged_what_was_reported_up_to_its_ceiling() -> None:
    assert charge(700, 1_000) == 700
    assert charge(48_000, 1_000) == 1_000  # an over-report counts the call's most
    assert charge(-5, 1_000) == 0


def test_the_ceiling_bounds_the_reply_by_max_tokens_and_the_prompt_by_its_bytes() -> None:
    ceiling = tokens_ceiling(system="ab", prompt="é" * 10, max_tokens=300, bytes_per_token=2)
    assert ceiling == (2 + 20) // 2 + MESSAGE_OVERHEAD_TOKENS + 300  # é is two bytes in UTF-8
    strict = tokens_ceiling(system="", prompt="x" * 1001, max_tokens=0, bytes_per_token=1)
    assert strict == 1001 + MESSAGE_OVERHEAD_TOKENS


def test_the_usual_reply_is_the_average_of_recent_replies_each_at_most_max_tokens() -> None:
    assert reply_expected([100, 200, 301], max_tokens=2_048) == 201  # rounded up
    assert reply_expected([100, 9_000], max_tokens=1_000) == 550  # 9,000 counts as the 1,000 it could be
    assert reply_expected([], max_tokens=2_048) == 512  # no reply yet: a quarter of the bound


def test_the_likely_cost_is_the_prompt_and_the_usual_reply_never_above_the_ceiling() -> None:
    cost = call_cost(prompt_tokens=400, recent_replies=[120], max_tokens=2_048, ceiling=3_000)
    assert cost == CallCost(likely=400 + MESSAGE_OVERHEAD_TOKENS + 120, ceiling=3_000)
    assert call_cost(prompt_tokens=5_000, recent_replies=[], max_tokens=100, ceiling=2_000).likely == 2_000


def test_the_alert_threshold_rounds_up_and_none_means_no_alert() -> None:
    assert alert_threshold(999, 80) == 800
    assert alert_threshold(1_000, 100) == 1_000
    assert alert_threshold(1_000, None) is None
