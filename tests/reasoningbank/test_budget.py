"""LLM budgets in the database (reasoningbank/ai/budget.py) through the one metered path,
``llm_complete``: a call that would cross a cap waits (nothing asked, nothing spent), one that exactly
reaches it runs, the next period lets it through; the plan's monthly budget is the same mechanism; the
alert fires once per period; concurrent workers on their own connections never spend past a cap."""

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
from reasoningbank.ai.budget import LLMBudgetExceeded, budget_status, call_estimate, llm_budget_alert
from reasoningbank.ai.llm import LLMResult, OpenAILLM
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


ESTIMATE = call_estimate(system=SYSTEM, prompt=PROMPT, max_tokens=MAX_TOKENS)


def caps(org: Organization, *, daily: int | None = None, monthly: int | None = None, alert: int | None = 80) -> None:
    LlmBudget.objects.update_or_create(
        organization=org, defaults={"daily_tokens": daily, "monthly_tokens": monthly, "alert_percent": alert}
    )


def test_a_call_that_exactly_reaches_the_daily_cap_runs_and_the_next_one_waits(cast: Any) -> None:
    llm = FixedLLM()
    caps(cast.org_a, daily=150 + ESTIMATE, alert=None)
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
    caps(cast.org_a, daily=150 + ESTIMATE - 1, alert=None)
    call(cast.org_a, llm)
    with pytest.raises(LLMBudgetExceeded):
        call(cast.org_a, llm)
    assert len(llm.calls) == 1


def test_the_next_day_lets_the_waiting_call_through(cast: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    llm = FixedLLM()
    caps(cast.org_a, daily=150 + ESTIMATE - 1, alert=None)
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
        Organization, "limit", lambda self, name: 150 + ESTIMATE if name == "llm_tokens_per_month" else None
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
    LlmCall.objects.create(organization=cast.org_a, provider="x", model="y", purpose="distill", input_tokens=700)
    caps(cast.org_a, daily=700 + ESTIMATE - 1, alert=None)
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
    caps(cast.org_a, daily=150 + ESTIMATE, alert=None)
    llm = FixedLLM()
    for _ in range(3):
        call(cast.org_b, llm)  # globex spends; acme's counter does not move
    call(cast.org_a, llm)
    call(cast.org_a, llm)
    assert LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day").used_tokens == 300


# --- concurrent workers ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # each worker commits on its own connection
def test_concurrent_workers_never_spend_past_the_cap(cast: Any) -> None:
    """Eight threads, each with its own PostgreSQL connection, call at once, twice each, against a daily
    cap that holds exactly five calls' estimates: five run, the others wait, and what was spent stays
    within the cap (a check-then-spend without the row lock lets all of them through)."""
    workers, rounds, per_call = 8, 2, 150
    caps(cast.org_a, daily=5 * ESTIMATE, alert=None)
    llm = FixedLLM(input_tokens=per_call - 50, output_tokens=50)
    start = threading.Barrier(workers)
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            org = Organization.objects.get(pk=cast.org_a.pk)
            start.wait()
            for _ in range(rounds):
                try:
                    call(org, llm)
                    outcomes.append("ran")
                except LLMBudgetExceeded:
                    outcomes.append("waited")
        except BaseException as exc:  # surfaced below, not lost in the thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    # every estimate is held until its call settles, so at most 5 are ever in flight or spent together;
    # each call settles to 150 tokens, far below its estimate, so later calls find room again
    row = LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day")
    assert row.reserved_tokens == 0
    assert row.used_tokens == outcomes.count("ran") * per_call == len(llm.calls) * per_call
    assert row.used_tokens <= 5 * ESTIMATE
    assert LlmCall.objects.filter(organization=cast.org_a).count() == outcomes.count("ran")


@pytest.mark.django_db(transaction=True)
def test_concurrent_workers_stop_exactly_at_a_cap_their_spend_fills(cast: Any) -> None:
    """Calls that spend their whole estimate: the cap holds exactly four of them, and under eight
    concurrent workers exactly four run, whatever the interleaving."""
    workers = 8
    caps(cast.org_a, daily=4 * ESTIMATE, alert=None)
    llm = FixedLLM(input_tokens=ESTIMATE - 10, output_tokens=10)
    start = threading.Barrier(workers)
    ran: list[int] = []

    def worker() -> None:
        try:
            org = Organization.objects.get(pk=cast.org_a.pk)
            start.wait()
            try:
                call(org, llm)
                ran.append(1)
            except LLMBudgetExceeded:
                pass
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    row = LlmBudgetPeriod.objects.get(organization=cast.org_a, period="day")
    assert len(ran) == 4 and row.used_tokens == 4 * ESTIMATE and row.reserved_tokens == 0


def budget_metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(f"reasoningbank_llm_budget_{name}_total", labels) or 0.0


def test_each_refused_call_moves_the_refusals_counter_of_its_cap(cast: Any) -> None:
    caps(cast.org_a, daily=150 + ESTIMATE - 1, alert=None)
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
