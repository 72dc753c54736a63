"""A consolidation run and the organization's LLM budget (docs/llm-spend.md#what-waits): when the budget
refuses the run's LLM calls, every phase without an LLM still does its work, the run ends
``waiting_for_budget`` (never failed) holding its project's place, and the scheduler's tick queues it
again once the period turned or the caps moved; it then does the LLM's share."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.budgets.services import llm_budget_set
from consolidation.models import ConsolidationRun
from consolidation.runs import consolidation_execute, consolidation_request, run_options_validate, runs_resume_budget
from reasoningbank.errors import Conflict
from reasoningbank.models import LlmBudget, LlmCall
from tests.consolidation.test_cycle_failures import RETRY_TITLES, TIMEOUT_TITLES, assert_merged, assert_untouched
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke

DAILY_CAP = 5_000


@pytest.fixture
def two_clusters(agent):
    """Two clusters for the synthesis (as in test_cycle_failures): 3 and 2 memories, cosine 0.87."""
    first = [remember(agent, t, spoke(0, n, 0.87)) for n, t in enumerate(TIMEOUT_TITLES, 1)]
    second = [remember(agent, t, spoke(20, 20 + n, 0.87)) for n, t in enumerate(RETRY_TITLES, 1)]
    return first, second


@pytest.fixture
def spent_today(cast):
    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=DAILY_CAP, alert_percent=None)
    LlmCall.objects.create(organization=cast.org_a, provider="x", model="y", purpose="distill", input_tokens=DAILY_CAP)


def test_a_run_over_the_daily_cap_waits_with_its_clusters_unmerged_and_no_llm_call(
    cast, agent, two_clusters, spent_today
):
    first, second = two_clusters
    llm = cycle_llm()
    run = run_cycle(agent, cast.project_a, llm)
    assert run.status == "waiting_for_budget" and not run.errors
    assert llm.calls == []
    tomorrow = (timezone.now() + timedelta(days=1)).date()
    assert run.resume_at.date() == tomorrow and run.resume_at.hour == 0
    assert any("wait for the budget" in w and "daily LLM cap" in w for w in run.warnings)
    assert_untouched(first + second)


def test_a_waiting_run_holds_its_project_s_place(cast, agent, two_clusters, spent_today):
    run_cycle(agent, cast.project_a, cycle_llm())
    with pytest.raises(Conflict, match="already waiting_for_budget"):
        consolidation_request(principal=agent, project=cast.project_a, options=run_options_validate())


def test_the_tick_queues_it_again_once_the_day_turned_and_it_merges_then(
    cast, agent, two_clusters, spent_today, monkeypatch, django_capture_on_commit_callbacks
):
    first, second = two_clusters
    run = run_cycle(agent, cast.project_a, cycle_llm())
    assert runs_resume_budget() == 0  # the day has not turned, the caps did not move
    later = run.resume_at + timedelta(minutes=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    with django_capture_on_commit_callbacks() as queued:
        assert runs_resume_budget() == 1
    assert len(queued) == 1  # handed to the worker
    assert ConsolidationRun.objects.get(pk=run.pk).status == "queued"
    llm = cycle_llm()
    finished = consolidation_execute(run.id, llm=llm)
    assert finished.status == "completed" and llm.calls
    assert_merged(first)
    assert_merged(second)


def test_raising_the_cap_queues_the_waiting_run_at_once(cast, agent, two_clusters, spent_today):
    run = run_cycle(agent, cast.project_a, cycle_llm())
    llm_budget_set(principal=cast.principal(cast.alice), daily_tokens=500_000, monthly_tokens=None, alert_percent=80)
    assert runs_resume_budget() == 1
    assert consolidation_execute(run.id, llm=cycle_llm()).status == "completed"


def test_a_dry_run_over_the_cap_completes_and_says_what_it_could_not_ask(cast, agent, two_clusters, spent_today):
    run = run_cycle(agent, cast.project_a, cycle_llm(), dry_run=True)
    assert run.status == "completed"
    assert any("wait for the budget" in w for w in run.warnings)
