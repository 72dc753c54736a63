"""What starts a consolidation run — manual, scheduled, on demand — and the plan gates: manual runs on
Pro, automatic ones on Teams (docs/consolidation.md#what-starts-a-run)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import Project
from consolidation import triggers
from consolidation.models import ConsolidationRun, ProjectConsolidationSettings
from consolidation.runs import consolidation_request, run_options_validate
from consolidation.triggers import consolidation_schedule_due, project_settings_update
from reasoningbank.ai.llm import NoLLM
from reasoningbank.errors import Forbidden, PlanRequired
from tests.factories import ConsolidationRunFactory, MemoryFactory


@pytest.fixture
def enqueued(monkeypatch):
    """Runs handed to the task queue (recorded instead of queued)."""
    runs: list[ConsolidationRun] = []
    monkeypatch.setattr(triggers, "consolidation_enqueue", runs.append)
    return runs


def set_plan(org, plan: str) -> None:
    org.plan = plan
    org.save(update_fields=["plan"])


def request_manual(principal, project) -> ConsolidationRun:
    return consolidation_request(principal=principal, project=project, options=run_options_validate())


def record(principal, n: int, project: str) -> None:
    MemoryFactory(principal=principal, title=f"Lesson {n}", project=project)


def past_run(project, *, hours_ago: float, status: str = ConsolidationRun.STATUS_COMPLETED) -> ConsolidationRun:
    at = timezone.now() - timedelta(hours=hours_ago)
    return ConsolidationRunFactory(
        project=project,
        trigger=ConsolidationRun.TRIGGER_SCHEDULED,
        status=status,
        created_at=at,
        started_at=at,
        finished_at=at,
    )


# --- manual ------------------------------------------------------------------------------------------


def test_manual_consolidation_on_the_free_plan_asks_for_the_pro_plan(cast, make_token):
    set_plan(cast.org_a, "free")
    _, principal = make_token(cast.org_a)

    with pytest.raises(PlanRequired) as raised:
        request_manual(principal, cast.project_a)

    assert "pro plan" in str(raised.value) and raised.value.code == "plan_required"
    assert not ConsolidationRun.objects.exists()


def test_manual_consolidation_on_the_pro_plan_queues_a_run(cast, make_token):
    _, principal = make_token(cast.org_a)

    run = consolidation_request(
        principal=principal, project=cast.project_a, options=run_options_validate(similarity_threshold=0.85)
    )

    assert (run.status, run.trigger, run.project, run.organization) == ("queued", "manual", cast.project_a, cast.org_a)
    assert run.requested_by_token == principal.token
    assert run.options["similarity_threshold"] == 0.85 and run.dry_run is False


def test_a_token_without_the_consolidation_run_scope_may_not_request_a_run(cast, make_token):
    _, principal = make_token(cast.org_a, scopes=["memories:read", "memories:write"])

    with pytest.raises(Forbidden) as raised:
        request_manual(principal, cast.project_a)

    assert "consolidation:run" in str(raised.value)
    assert not ConsolidationRun.objects.exists()


# --- scheduled ---------------------------------------------------------------------------------------


def test_the_scheduler_queues_nothing_for_pro_plan_projects(cast, enqueued):
    assert consolidation_schedule_due() == []
    assert enqueued == [] and not ConsolidationRun.objects.exists()


def test_the_scheduler_queues_a_scheduled_run_for_a_due_teams_plan_project(cast, enqueued, settings):
    set_plan(cast.org_a, "teams")

    (run,) = consolidation_schedule_due()

    assert enqueued == [run]
    assert (run.project, run.trigger, run.status) == (cast.project_a, "scheduled", "queued")
    assert run.options["similarity_threshold"] == settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD
    assert not ConsolidationRun.objects.filter(project=cast.project_b).exists(), "globex is on pro"


def test_the_scheduler_uses_the_projects_own_similarity_threshold(cast, enqueued, make_token):
    set_plan(cast.org_a, "teams")
    _, admin = make_token(cast.org_a)
    project_settings_update(
        principal=admin, project=cast.project_a, scheduled=True, interval_hours=None, similarity_threshold=0.9
    )

    (run,) = consolidation_schedule_due()

    assert run.options["similarity_threshold"] == 0.9


def test_one_projects_failure_does_not_stop_the_scheduler_from_queueing_the_next(cast, enqueued, monkeypatch):
    set_plan(cast.org_a, "teams")
    set_plan(cast.org_b, "teams")
    real_request = triggers.consolidation_request
    failed = []

    def request_failing_once(**kwargs):
        if not failed:
            failed.append(kwargs["project"])
            raise RuntimeError("database hiccup")
        return real_request(**kwargs)

    monkeypatch.setattr(triggers, "consolidation_request", request_failing_once)

    queued = consolidation_schedule_due()

    (broken,) = failed
    other = cast.project_b if broken == cast.project_a else cast.project_a
    assert [run.project for run in queued] == [other]
    assert enqueued == queued


def test_scheduling_on_the_pro_plan_asks_for_the_teams_plan(cast, make_token):
    _, admin = make_token(cast.org_a)

    with pytest.raises(PlanRequired) as raised:
        project_settings_update(
            principal=admin, project=cast.project_a, scheduled=True, interval_hours=12, similarity_threshold=None
        )

    assert "teams plan" in str(raised.value)
    assert not ProjectConsolidationSettings.objects.filter(project=cast.project_a, interval_seconds=43200).exists()


def test_a_project_consolidated_within_its_interval_is_not_queued_until_the_interval_passes(cast, enqueued, make_token):
    set_plan(cast.org_a, "teams")
    set_plan(cast.org_b, "teams")
    past_run(cast.project_a, hours_ago=2)  # default interval 24 h: not due
    past_run(cast.project_b, hours_ago=25)  # due

    assert [run.project for run in consolidation_schedule_due()] == [cast.project_b]

    _, admin = make_token(cast.org_a)
    project_settings_update(
        principal=admin, project=cast.project_a, scheduled=True, interval_hours=1, similarity_threshold=None
    )
    assert [run.project for run in consolidation_schedule_due()] == [cast.project_a]


def test_a_project_with_its_schedule_switched_off_is_not_queued(cast, enqueued, make_token):
    set_plan(cast.org_a, "teams")
    _, admin = make_token(cast.org_a)
    project_settings_update(
        principal=admin, project=cast.project_a, scheduled=False, interval_hours=None, similarity_threshold=None
    )

    assert consolidation_schedule_due() == []


def test_the_scheduler_does_nothing_when_disabled(cast, enqueued, settings):
    set_plan(cast.org_a, "teams")
    settings.CONSOLIDATION_SCHEDULER_ENABLED = False

    assert consolidation_schedule_due() == [] and enqueued == []


# --- on demand: after N new memories -----------------------------------------------------------------


def test_a_teams_project_reaching_the_new_memory_threshold_gets_an_on_demand_run(cast, make_token, enqueued, settings):
    settings.CONSOLIDATION_ON_DEMAND_THRESHOLD = 3
    set_plan(cast.org_a, "teams")
    _, agent = make_token(cast.org_a, projects=[cast.project_a])

    record(agent, 1, "web-app")
    record(agent, 2, "web-app")
    assert enqueued == [] and not ConsolidationRun.objects.exists()

    record(agent, 3, "web-app")

    (run,) = enqueued
    assert (run.project, run.trigger, run.status) == (cast.project_a, "on_demand", "queued")
    record(agent, 4, "web-app")
    assert len(enqueued) == 1, "no second run while one is queued"


def test_new_memories_since_the_last_run_count_towards_the_next_on_demand_run(cast, make_token, enqueued, settings):
    settings.CONSOLIDATION_ON_DEMAND_THRESHOLD = 3
    set_plan(cast.org_a, "teams")
    _, agent = make_token(cast.org_a, projects=[cast.project_a])
    record(agent, 1, "web-app")
    record(agent, 2, "web-app")
    past_run(cast.project_a, hours_ago=0)  # a run just finished: the two memories above are not new

    record(agent, 3, "web-app")
    record(agent, 4, "web-app")
    assert enqueued == []
    record(agent, 5, "web-app")
    assert len(enqueued) == 1


def test_a_record_asks_whether_its_project_is_due_in_one_statement_however_many_memories_it_has(
    cast, make_token, enqueued, settings
):
    settings.CONSOLIDATION_ON_DEMAND_THRESHOLD = 3
    set_plan(cast.org_a, "teams")
    _, agent = make_token(cast.org_a, projects=[cast.project_a])
    record(agent, 1, "web-app")
    past_run(cast.project_a, hours_ago=0)
    record(agent, 2, "web-app")
    project = Project.objects.select_related("organization").get(pk=cast.project_a.pk)

    with CaptureQueriesContext(connection) as captured:
        assert triggers.consolidation_on_demand(project=project) is None

    assert len(captured.captured_queries) == 1, "\n\n".join(q["sql"] for q in captured.captured_queries)
    assert enqueued == []


def test_a_pro_plan_project_gets_no_on_demand_run(cast, make_token, enqueued, settings):
    settings.CONSOLIDATION_ON_DEMAND_THRESHOLD = 3
    _, agent = make_token(cast.org_b, projects=[cast.project_b])

    for n in range(1, 5):
        record(agent, n, "billing")

    assert enqueued == [] and not ConsolidationRun.objects.exists()


# --- a project whose runs keep failing backs off ---------------------------------------------------------


@pytest.fixture
def failing_phase(monkeypatch):
    """The scan phase raises, as the judge did on an imported bank (ValueError from a thread pool)."""

    def boom(state):
        raise ValueError("max_workers must be greater than 0")

    monkeypatch.setattr("consolidation.phases.scan.memories_load", boom)


def execute_queued(runs: list[ConsolidationRun]) -> ConsolidationRun:
    from consolidation.runs import consolidation_execute

    finished = consolidation_execute(runs.pop().id, llm=NoLLM())
    assert finished is not None
    return finished


def backoff_row(project) -> ProjectConsolidationSettings:
    return ProjectConsolidationSettings.objects.get(project=project)


def test_a_project_whose_runs_keep_failing_waits_twice_as_long_after_each_failure(
    cast, enqueued, settings, failing_phase
):
    settings.CONSOLIDATION_FAILURE_BACKOFF = 5 * 60
    settings.CONSOLIDATION_FAILURE_BACKOFF_MAX = 24 * 3600
    set_plan(cast.org_a, "teams")
    waits = []
    for failures in range(1, 4):
        consolidation_schedule_due()
        assert len(enqueued) == 1, f"not queued again after {failures - 1} failure(s)"
        failed = execute_queued(enqueued)
        assert failed.status == ConsolidationRun.STATUS_FAILED
        row = backoff_row(cast.project_a)
        assert row.consecutive_failures == failures
        assert "max_workers must be greater than 0" in row.last_error
        wait = (row.retry_after - failed.finished_at).total_seconds()
        waits.append(wait)
        # every tick of the next wait queues nothing (the scheduler ticks every 5 minutes)
        for tick in range(1, int(wait // 300)):
            assert consolidation_schedule_due(now=failed.finished_at + timedelta(seconds=tick * 300 - 1)) == []
        ProjectConsolidationSettings.objects.filter(pk=row.pk).update(retry_after=timezone.now())  # wait it out
    assert waits == pytest.approx([300, 600, 1200], abs=2)


def test_the_wait_is_capped_and_a_completed_run_resets_it(cast, enqueued, settings):
    settings.CONSOLIDATION_FAILURE_BACKOFF = 5 * 60
    settings.CONSOLIDATION_FAILURE_BACKOFF_MAX = 24 * 3600
    set_plan(cast.org_a, "teams")
    ProjectConsolidationSettings.objects.create(
        project=cast.project_a, organization=cast.org_a, consecutive_failures=12, retry_after=timezone.now()
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "consolidation.phases.scan.memories_load", lambda state: (_ for _ in ()).throw(RuntimeError("boom"))
        )
        consolidation_schedule_due()
        failed = execute_queued(enqueued)
    row = backoff_row(cast.project_a)
    assert row.consecutive_failures == 13
    assert (row.retry_after - failed.finished_at).total_seconds() == pytest.approx(24 * 3600, abs=2)

    row.retry_after = timezone.now()
    row.save()
    consolidation_schedule_due()
    completed = execute_queued(enqueued)
    assert completed.status == ConsolidationRun.STATUS_COMPLETED, completed.errors
    row = backoff_row(cast.project_a)
    assert (row.consecutive_failures, row.retry_after, row.last_error) == (0, None, "")


def test_a_manual_run_may_be_requested_while_the_project_backs_off(cast, make_token, enqueued):
    set_plan(cast.org_a, "teams")
    ProjectConsolidationSettings.objects.create(
        project=cast.project_a, organization=cast.org_a, consecutive_failures=3,
        retry_after=timezone.now() + timedelta(hours=1),
    )  # fmt: skip
    _, principal = make_token(cast.org_a)

    assert consolidation_schedule_due() == []
    run = request_manual(principal, cast.project_a)
    assert run.status == ConsolidationRun.STATUS_QUEUED


def test_a_project_backing_off_gets_no_on_demand_run(cast, make_token, enqueued, settings):
    settings.CONSOLIDATION_ON_DEMAND_THRESHOLD = 3
    set_plan(cast.org_a, "teams")
    ProjectConsolidationSettings.objects.create(
        project=cast.project_a, organization=cast.org_a, consecutive_failures=1,
        retry_after=timezone.now() + timedelta(minutes=5),
    )  # fmt: skip
    _, agent = make_token(cast.org_a, projects=[cast.project_a])

    for n in range(1, 5):
        record(agent, n, "web-app")

    assert enqueued == []


def test_a_dry_run_that_fails_does_not_count(cast, make_token, failing_phase):
    from consolidation.runs import consolidation_execute

    _, principal = make_token(cast.org_a)
    run = consolidation_request(principal=principal, project=cast.project_a, options=run_options_validate(dry_run=True))
    assert consolidation_execute(run.id, llm=NoLLM()).status == ConsolidationRun.STATUS_FAILED

    assert not ProjectConsolidationSettings.objects.filter(project=cast.project_a, consecutive_failures__gt=0).exists()
