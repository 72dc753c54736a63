"""LLM budgets in the database (reasoningbank/ai/budget.py) through the one metered path,
``llm_complete``: a call whose likely cost would cross a cap waits (nothing asked, nothing spent), one
that exactly reaches it runs, the next period lets it through; the plan's monthly budget is the same
mechanism; the alert fires once per period; a call is charged what was reported up to its ceiling;
concurrent workers on their own connections never pass a cap by more than one call. The 60 concurrent
``memory_ask`` calls are in tests/memories/ask/test_ask_budget.py."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
import respx
from django.db import connection
from django.utils import timezone
from prometheus_client import REGISTRY

from accounts.models import AuditEvent, Organization
from reasoningbank.ai.budget import (
    LLMBudgetExceeded,
    budget_reserve,
    budget_settle,
    budget_status,
    call_ceiling,
    llm_budget_alert,
)
from reasoningbank.ai.budget_rules import CallCost, call_cost
from reasoningbank.ai.llm import LLMResult, OpenAILLM, tokens_estimate
from reasoningbank.ai.metered import llm_complete
from reasoningbank.models import LlmBudget, LlmBudgetPeriod, LlmCall
from tests.reasoningbank.test_llm import openai_reply
from tests.respx_httpx2 import serve_httpx2_from

SYSTEM, PROMPT, MAX_TOKENS = "You distil.", "trace " * 50, 200


@dataclass
class FixedLLM:
    """Answers every call with the same usage (a provider's reply is what settles the reservation)."""

    input_tokens: int = 100
    output_tokens: int = 50
    provider: str = "fake"
    model: str = "fixed-1"
    calls: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2048, temperature: float = 0.0) -> LLMResult:
        with self.lock:
            self.calls.append(prompt)
        return LLMResult("ok", self.provider, self.model, self.input_tokens, self.output_tokens, 1.0, 1)


def call(org: Organization, llm: FixedLLM, **kwargs: Any) -> LLMResult:
    return llm_complete(
        organization=org, purpose="distill", system=SYSTEM, prompt=PROMPT, max_tokens=MAX_TOKENS, llm=llm, **kwargs
    )


CEILING = call_ceiling(system=SYSTEM, prompt=PROMPT, max_tokens=MAX_TOKENS)
# the likely cost of a call whose purpose's replies were 50 tokens long: FixedLLM's, and also the
# quarter of MAX_TOKENS a purpose without replies on record is expected to use
LIKELY = call_cost(
    prompt_tokens=tokens_estimate(SYSTEM) + tokens_estimate(PROMPT),
    recent_replies=[50],
    max_tokens=MAX_TOKENS,
    ceiling=CEILING,
).likely


def caps(org: Organization, *, daily: int | None = None, monthly: int | None = None, alert: int | None = 80) -> None:
    LlmBudget.objects.update_or_create(
        organization=org, defaults={"daily_tokens": daily, "monthly_tokens": monthly, "alert_percent": alert}
    )


def test_a_call_that_exactly_reaches_the_daily_cap_runs_and_the_next_one_waits(cast: Any) -> None:
    llm = FixedLLM()
    caps(cast.org_a, daily=150 + LIKELY, alert=None)
    call(cast.org_a, llm)  # 150 spent: exactly one estimate left
    call(cast.org_a, llm)  # reaches the cap at most: allowed
    with pytest.raises(LLMBudgetExceeded) as refused:
        call(cast.org_a, llm)
    assert len(llm.calls) == 2  # the third call never reached the provider
    assert refused.value.cap.name == "daily" and refused.value.cap.source == "organization"
    assert "daily LLM cap" in str(refused.value)
    tomorrow = (timezone.now() + timedelta(days=1)).date()
    assert refused.value.resets_at.date() == tomorrow and refused.value.resets_at.hour == 0
    assert LlmCall.objects.filter(organization=cast.org_a).count() == 2  # a refusal spends and meters nothing


def test_a_call_that_would_cross_the_cap_by_one_token_waits(cast: Any) -> None:
    llm = FixedLLM()
    caps(cast.org_a, daily=150 + LIKELY - 1, alert=None)
    call(cast.org_a, llm)
    with pytest.raises(LLMBudgetExceeded):
        call(cast.org_a, llm)
    assert len(llm.calls) == 1


def test_the_next_day_lets_the_waiting_call_through(cast: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    llm = FixedLLM()
    caps(cast.org_a, daily=150 + LIKELY - 1, alert=None)
    call(cast.org_a, llm)
    with pytest.raises(LLMBudgetExceeded) as refused:
        call(cast.org_a, llm)
    later = refused.value.resets_at + timedelta(minutes=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    call(cast.org_a, llm)  # a new day: a new counter
    assert len(llm.calls) == 2
    days = dict(
        LlmBudgetPeriod.objects.filter(organization=cast.org_a, period="day").values_list("start", "used_tokens")
    )
    assert days == {later.date() - timedelta(days=1): 150, later.date(): 150}


def test_the_plan_s_monthly_budget_is_kept_by_the_same_reservation(cast: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        Organization, "limit", lambda self, name: 150 + LIKELY if name == "llm_tokens_per_month" else None
    )
    llm = FixedLLM()
    call(cast.org_a, llm)
    call(cast.org_a, llm)
    with pytest.raises(LLMBudgetExceeded) as refused:
        call(cast.org_a, llm)
    assert refused.value.cap.source == "plan" and "pro plan's monthly LLM budget" in str(refused.value)


def test_the_counters_equal_the_metered_rows_and_hold_nothing_after_the_calls(cast: Any) -> None:
    llm = FixedLLM(input_tokens=321, output_tokens=12)
    for _ in range(3):
        call(cast.org_a, llm)
    metered = sum(c.input_tokens + c.output_tokens for c in LlmCall.objects.filter(organization=cast.org_a))
    rows = LlmBudgetPeriod.objects.filter(organization=cast.org_a)
    assert {r.period: (r.used_tokens, r.reserved_tokens) for r in rows} == {"day": (metered, 0), "month": (metered, 0)}


def test_a_real_sdk_call_settles_to_the_usage_the_provider_reported(cast: Any) -> None:
    """Through the official OpenAI SDK against a mocked endpoint: the counters hold what the provider's
    ``usage`` said, not the estimate."""
    caps(cast.org_a, daily=100_000, alert=None)
    with respx.mock(base_url="https://api.openai.com/v1") as router, serve_httpx2_from(router):
        router.post("/chat/completions").mock(return_value=openai_reply(input_tokens=120, output_tokens=30))
        result = call(cast.org_a, OpenAILLM("gpt-4o-mini", api_key="sk-test"))
    assert (result.input_tokens, result.output_tokens) == (120, 30)
    day = LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day")
    assert (day.used_tokens, day.reserved_tokens) == (150, 0)
    assert LlmCall.objects.get(organization=cast.org_a).model == "gpt-4o-mini"


def test_a_failed_call_releases_its_reservation_and_spends_nothing(cast: Any) -> None:
    from reasoningbank.ai.llm import LLMPermanentError

    class Refusing(FixedLLM):
        def complete(self, **kwargs: Any) -> LLMResult:
            raise LLMPermanentError("400 bad request")

    with pytest.raises(LLMPermanentError):
        call(cast.org_a, Refusing())
    assert set(LlmBudgetPeriod.objects.values_list("used_tokens", "reserved_tokens")) == {(0, 0)}


def test_calls_before_budgets_existed_count_towards_the_first_counter(cast: Any) -> None:
    LlmCall.objects.create(
        organization=cast.org_a, provider="x", model="y", purpose="distill", input_tokens=650, output_tokens=50
    )
    caps(cast.org_a, daily=700 + LIKELY - 1, alert=None)
    with pytest.raises(LLMBudgetExceeded):
        call(cast.org_a, FixedLLM())


def test_the_alert_fires_once_per_period_with_an_audit_row(
    cast: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[dict[str, Any]] = []
    receiver = lambda sender, **kwargs: sent.append(kwargs)  # noqa: E731
    llm_budget_alert.connect(receiver, dispatch_uid="test-budget-alert")
    try:
        caps(cast.org_a, daily=1_000, alert=50)  # the alert at 500 tokens; each call spends 150
        llm = FixedLLM()
        with django_capture_on_commit_callbacks(execute=True):  # as if each call's transaction committed
            for _ in range(3):
                call(cast.org_a, llm)
            assert sent == []  # 450: below the threshold
            call(cast.org_a, llm)  # 600: crosses it
            call(cast.org_a, llm)  # 750: past it, already alerted
        assert len(sent) == 1
        assert sent[0]["organization_id"] == cast.org_a.pk
        assert sent[0]["data"].items() >= {"cap": "daily", "limit": 1_000, "used": 600, "threshold": 500}.items()
        audit = AuditEvent.objects.filter(organization=cast.org_a, verb="llm.budget_alert")
        assert audit.count() == 1 and audit.get().data["cap"] == "daily"
        status = next(s for s in budget_status(cast.org_a) if s.cap.name == "daily")
        assert status.alerted and not status.reached
        tomorrow = timezone.now() + timedelta(days=1)
        monkeypatch.setattr(timezone, "now", lambda: tomorrow)
        with django_capture_on_commit_callbacks(execute=True):
            for _ in range(4):
                call(cast.org_a, llm)
        assert len(sent) == 2  # a new day, a new alert
        assert sent[1]["data"]["period_start"] == tomorrow.date().isoformat()
    finally:
        llm_budget_alert.disconnect(dispatch_uid="test-budget-alert")


def test_another_organization_s_spend_never_counts_against_a_cap(cast: Any) -> None:
    caps(cast.org_a, daily=150 + LIKELY, alert=None)
    llm = FixedLLM()
    for _ in range(3):
        call(cast.org_b, llm)  # globex spends; acme's counter does not move
    call(cast.org_a, llm)
    call(cast.org_a, llm)
    assert LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day").used_tokens == 300


# --- reservation, settlement, over-reports -------------------------------------------------------------


def test_a_call_reserves_its_likely_cost_and_holds_its_ceiling_until_it_settles(cast: Any) -> None:
    caps(cast.org_a, daily=100_000, alert=None)
    seen: list[tuple[int, int]] = []

    class Watching(FixedLLM):
        def complete(self, **kwargs: Any) -> LLMResult:
            day = LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day")
            seen.append((day.reserved_tokens, day.ceiling_tokens))
            return super().complete(**kwargs)

    call(cast.org_a, Watching())
    assert seen == [(LIKELY, CEILING)]  # in flight: the likely cost held, the ceiling beside it
    day = LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day")
    assert (day.used_tokens, day.reserved_tokens, day.ceiling_tokens) == (150, 0, 0)


def test_the_usual_reply_follows_the_purpose_s_real_replies(cast: Any) -> None:
    caps(cast.org_a, daily=100_000, alert=None)
    held: list[int] = []

    class Watching(FixedLLM):
        def complete(self, **kwargs: Any) -> LLMResult:
            held.append(LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day").reserved_tokens)
            return super().complete(**kwargs)

    prompt_tokens = tokens_estimate(SYSTEM) + tokens_estimate(PROMPT)
    call(cast.org_a, Watching(output_tokens=150))  # no reply on record: a quarter of max_tokens (50)
    call(cast.org_a, Watching(output_tokens=150))  # the one reply so far: 150
    call(cast.org_a, Watching(output_tokens=9_999))  # replies of 150 and 150
    call(cast.org_a, Watching())  # 150, 150 and 9,999 taken as the 200 a reply can be: 167
    assert [h - prompt_tokens - 32 for h in held] == [50, 150, 150, 167]


def test_a_provider_reporting_more_than_a_call_can_spend_is_charged_the_ceiling_and_shown(cast: Any) -> None:
    """The over-report is in the metered row and on the caps' status; the counter the caps keep takes
    the most the call could have cost, so one call cannot carry the spend far past a cap."""
    caps(cast.org_a, daily=20_000, alert=None)
    call(cast.org_a, FixedLLM(input_tokens=40_000, output_tokens=8_000))
    metered = LlmCall.objects.get(organization=cast.org_a)
    assert (metered.input_tokens, metered.output_tokens) == (40_000, 8_000)
    day = LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day")
    assert (day.used_tokens, day.over_reported_tokens, day.reserved_tokens, day.ceiling_tokens) == (
        CEILING, 48_000 - CEILING, 0, 0,
    )  # fmt: skip
    status = next(s for s in budget_status(cast.org_a) if s.cap.name == "daily")
    assert (status.used, status.over_reported) == (CEILING, 48_000 - CEILING)


def test_a_call_the_calls_in_flight_could_crowd_out_is_refused_for_a_minute_not_the_day(cast: Any) -> None:
    """Inside a transaction a call never waits (it would sleep holding the rows' locks): the refusal says
    when to try again, and the cap is not marked reached."""
    caps(cast.org_a, daily=1_000, alert=None)
    held = budget_reserve(cast.org_a, CallCost(likely=100, ceiling=900))
    with pytest.raises(LLMBudgetExceeded) as refused:
        budget_reserve(cast.org_a, CallCost(likely=100, ceiling=200), wait_seconds=5)
    assert "nearly reached" in str(refused.value)
    assert refused.value.resets_at - timezone.now() < timedelta(minutes=2)
    assert not LlmBudgetPeriod.objects.filter(reached_at__isnull=False).exists()
    budget_settle(held, 80)
    budget_reserve(cast.org_a, CallCost(likely=100, ceiling=200))  # settled: room for it now


# --- concurrent workers ---------------------------------------------------------------------------------


def run_workers(workers: int, work: Any) -> list[BaseException]:
    """``work()`` on ``workers`` threads started together, each on its own database connection."""
    start = threading.Barrier(workers)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            start.wait()
            work()
        except BaseException as exc:  # surfaced by the caller, not lost in the thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


@pytest.mark.django_db(transaction=True)  # each worker commits on its own connection
def test_concurrent_workers_fill_the_cap_and_pass_it_by_at_most_one_call(cast: Any) -> None:
    """Eight threads, each with its own PostgreSQL connection, call at once, three times each, against a
    daily cap of five ceilings, with replies of every length up to ``max_tokens``: the spend passes the
    cap by less than one ceiling (a check-then-spend without the row lock, or an admission on likely
    costs alone, passes it by more)."""
    cap = 5 * CEILING
    caps(cast.org_a, daily=cap, alert=None)
    lengths = iter(range(10_000))
    outcomes: list[str] = []

    class Varying(FixedLLM):
        def complete(self, **kwargs: Any) -> LLMResult:
            reply = next(lengths) * 37 % (MAX_TOKENS + 1)  # 0 to max_tokens, spread
            return LLMResult("ok", self.provider, self.model, CEILING - MAX_TOKENS, reply, 1.0, 1)

    llm = Varying()

    def work() -> None:
        org = Organization.objects.get(pk=cast.org_a.pk)
        for _ in range(3):
            try:
                call(org, llm)
                outcomes.append("ran")
            except LLMBudgetExceeded:
                outcomes.append("refused")

    assert not run_workers(8, work)
    row = LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day")
    assert (row.reserved_tokens, row.ceiling_tokens) == (0, 0)
    assert row.used_tokens == sum(c.input_tokens + c.output_tokens for c in LlmCall.objects.all())
    assert LlmCall.objects.count() == outcomes.count("ran")
    assert "refused" in outcomes  # 24 calls of about 290 tokens do not fit in 5 ceilings
    assert row.used_tokens <= cap + CEILING


@pytest.mark.django_db(transaction=True)
def test_concurrent_workers_stop_exactly_at_a_cap_their_spend_fills(cast: Any) -> None:
    """Calls that spend their whole ceiling: the cap holds exactly four of them, and under eight
    concurrent workers exactly four run, whatever the interleaving (the others wait for them, then
    find the cap spent)."""
    caps(cast.org_a, daily=4 * CEILING, alert=None)
    llm = FixedLLM(input_tokens=CEILING - MAX_TOKENS, output_tokens=MAX_TOKENS)
    ran: list[int] = []

    def work() -> None:
        org = Organization.objects.get(pk=cast.org_a.pk)
        try:
            call(org, llm)
            ran.append(1)
        except LLMBudgetExceeded:
            pass

    assert not run_workers(8, work)
    row = LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day")
    assert len(ran) == 4 and row.used_tokens == 4 * CEILING and row.reserved_tokens == 0


@pytest.mark.django_db(transaction=True)
def test_a_held_back_call_runs_once_the_call_in_flight_settled(cast: Any) -> None:
    """A call the one in flight could crowd out waits for it (no refusal while the cap has room for its
    likely cost), then runs: observed through the holds counter and what the provider saw, not time."""
    caps(cast.org_a, daily=2 * CEILING - 1, alert=None)  # two ceilings do not fit, two likely costs do
    release, first_in_flight = threading.Event(), threading.Event()
    daily = {"cap": "daily", "source": "organization"}
    holds_before = budget_metric("holds", **daily)
    seen: list[str] = []

    class Slow(FixedLLM):
        def complete(self, **kwargs: Any) -> LLMResult:
            with self.lock:
                seen.append("first" if not seen else "second")
            if seen == ["first"]:
                first_in_flight.set()
                assert release.wait(30)
            return super().complete(**kwargs)

    llm = Slow()

    def first() -> None:
        call(Organization.objects.get(pk=cast.org_a.pk), llm)

    def second() -> None:
        assert first_in_flight.wait(30)
        call(Organization.objects.get(pk=cast.org_a.pk), llm)

    errors: list[BaseException] = []
    threads = [threading.Thread(target=lambda f=f: errors.extend(run_workers(1, f))) for f in (first, second)]
    for thread in threads:
        thread.start()
    held = threading.Event()
    for _ in range(3_000):  # the second call is held back while the first is in flight
        if budget_metric("holds", **daily) > holds_before:
            held.set()
            break
        held.wait(0.01)
    assert held.is_set() and seen == ["first"]  # held back: not refused, not sent
    release.set()
    for thread in threads:
        thread.join()
    assert not errors and seen == ["first", "second"]
    assert LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day").used_tokens == 300


def budget_metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(f"reasoningbank_llm_budget_{name}_total", labels) or 0.0


def test_each_refused_call_moves_the_refusals_counter_of_its_cap(cast: Any) -> None:
    caps(cast.org_a, daily=150 + LIKELY - 1, alert=None)
    daily = {"cap": "daily", "source": "organization"}
    before = budget_metric("refusals", **daily)
    call(cast.org_a, FixedLLM())  # runs: no refusal
    assert budget_metric("refusals", **daily) == pytest.approx(before)
    for _ in range(2):
        with pytest.raises(LLMBudgetExceeded):
            call(cast.org_a, FixedLLM())
    assert budget_metric("refusals", **daily) - before == pytest.approx(2)


def test_the_alerts_counter_moves_once_per_period_and_cap(cast: Any) -> None:
    caps(cast.org_a, daily=1_000, alert=50)  # the alert at 500 tokens; each call spends 150
    daily = {"cap": "daily", "source": "organization"}
    before = budget_metric("alerts", **daily)
    llm = FixedLLM()
    for _ in range(3):
        call(cast.org_a, llm)
    assert budget_metric("alerts", **daily) == pytest.approx(before)  # 450: below the threshold
    for _ in range(2):
        call(cast.org_a, llm)  # 600 crosses it, 750 is past it
    assert budget_metric("alerts", **daily) - before == pytest.approx(1)
