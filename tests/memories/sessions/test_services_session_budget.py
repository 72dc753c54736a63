"""Sessions and the organization's LLM budget (docs/llm-spend.md#what-waits): a distillation that
would cross a cap waits as ``waiting_for_budget`` without an LLM call and without an attempt counted;
the resume task queues it again once the period turned, or once an admin moved the caps — not before."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.budgets.services import llm_budget_set
from memories.models import AgentSession, Memory
from memories.sessions.services import session_process, session_submit, sessions_resume_waiting
from reasoningbank.models import LlmBudget, LlmBudgetPeriod, LlmCall
from tests.fakes import ScriptedLLM
from tests.memories.sessions.test_services_sessions import TRACE, TWO_MEMORIES, queued  # noqa: F401 (fixture)

DAILY_CAP = 5_000
pytestmark = pytest.mark.usefixtures("queued")  # an LLM is configured, the queue is a list


@pytest.fixture
def spent_today(cast: Any) -> None:
    """acme's daily cap, all of it spent today (a call earlier in the day)."""
    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=DAILY_CAP, alert_percent=None)
    LlmCall.objects.create(organization=cast.org_a, provider="x", model="y", purpose="distill", input_tokens=DAILY_CAP)


def waiting_session(agent: Any) -> AgentSession:
    session = session_submit(principal=agent, session_id="s-budget", outcome="success", trace=TRACE).session
    llm = ScriptedLLM([])  # any call would fail the test: the budget refuses before the provider
    session = session_process(session.id, llm=llm)
    assert llm.calls == []
    return session


def test_a_session_over_the_daily_cap_waits_for_the_next_day_without_an_attempt(agent, spent_today):
    session = waiting_session(agent)
    assert session.status == "waiting_for_budget" and session.attempts == 0
    assert "daily LLM cap of 5,000 tokens" in session.error
    tomorrow = (timezone.now() + timedelta(days=1)).date()
    assert session.next_attempt_at.date() == tomorrow and session.next_attempt_at.hour == 0


def test_the_resume_task_leaves_it_waiting_until_the_day_turns_then_it_is_distilled(agent, spent_today, monkeypatch):
    session = waiting_session(agent)
    assert sessions_resume_waiting() == 0
    assert AgentSession.objects.get(pk=session.pk).status == "waiting_for_budget"
    later = session.next_attempt_at + timedelta(minutes=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert sessions_resume_waiting() == 1
    assert AgentSession.objects.get(pk=session.pk).status == "queued"
    done = session_process(session.id, llm=ScriptedLLM([TWO_MEMORIES]))
    assert done.status == "done" and Memory.objects.filter(source_session=done).count() == 2


def test_raising_the_cap_resumes_the_session_at_once(agent, spent_today, cast):
    session = waiting_session(agent)
    llm_budget_set(principal=cast.principal(cast.alice), daily_tokens=50_000, monthly_tokens=None, alert_percent=80)
    assert sessions_resume_waiting() == 1
    done = session_process(session.id, llm=ScriptedLLM([TWO_MEMORIES]))
    assert done.status == "done"


def test_another_organization_s_cap_change_does_not_resume_acme_s_session(agent, spent_today, cast):
    session = waiting_session(agent)
    llm_budget_set(principal=cast.principal(cast.charlie), daily_tokens=50_000, monthly_tokens=None, alert_percent=80)
    assert sessions_resume_waiting() == 0
    assert AgentSession.objects.get(pk=session.pk).status == "waiting_for_budget"


def test_a_continued_session_over_the_cap_waits_with_its_new_turns_and_distils_only_them_later(agent, cast):
    session = session_submit(principal=agent, session_id="s-resumed", outcome="success", trace=TRACE).session
    session_process(session.id, llm=ScriptedLLM(["NO_EXTRACTIONS"]))
    resumed = TRACE + "\nuser: the promo test fails with a KeyError\nagent: defaulted missing promo codes"
    session_submit(principal=agent, session_id="s-resumed", outcome="success", trace=resumed)
    owner = cast.principal(cast.alice)
    llm_budget_set(principal=owner, daily_tokens=DAILY_CAP, monthly_tokens=None, alert_percent=None)
    LlmBudgetPeriod.objects.filter(organization=cast.org_a).update(used_tokens=DAILY_CAP)  # the day's spent since
    refused = ScriptedLLM([])
    waiting = session_process(session.id, llm=refused)
    assert waiting.status == "waiting_for_budget" and refused.calls == []
    assert waiting.rounds == 1 and waiting.trace[waiting.distilled_upto :].strip().startswith("user: the promo test")

    llm_budget_set(principal=owner, daily_tokens=50_000, monthly_tokens=None, alert_percent=80)
    assert sessions_resume_waiting() == 1
    llm = ScriptedLLM(["NO_EXTRACTIONS"])
    done = session_process(session.id, llm=llm)
    assert done.status == "done" and done.rounds == 2
    ((_, prompt),) = llm.calls
    assert "the promo test fails" in prompt and "the tests hang" not in prompt
