"""No organization holds more than its share of the worker (reasoningbank/fair_share.py,
docs/security/worker-fairness.md): a slow task (a session's distillation, a consolidation run) of an
organization at WORKER_ORG_CONCURRENCY does not start while another organization's work waits — it is
deferred, its slot freed at once, its work kept queued and its deferral written down as a schedule — and
a finished task hands its slot to the deferred work next in line."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import Schedule

from consolidation.models import ConsolidationRun
from consolidation.runs import consolidation_execute, runs_recover_stale
from memories.models import AgentSession
from memories.sessions.services import session_process
from reasoningbank import fair_share
from tests.factories import AgentSessionFactory, ConsolidationRunFactory, OrganizationFactory, ProjectFactory
from tests.fakes import ScriptedLLM, memory_block

ONE_MEMORY = memory_block(1, "Seed the RNG in flaky tests", "When a test fails at random", "Call random.seed(0).")


@pytest.fixture
def handed_on(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """(kind, id) of every task the hand-on queues, instead of queuing it."""
    queued: list[tuple[str, str]] = []
    for kind, work in list(fair_share._KINDS.items()):
        monkeypatch.setitem(
            fair_share._KINDS, kind, dataclasses.replace(work, enqueue=lambda pk, k=kind: queued.append((k, pk)))
        )
    return queued


@pytest.fixture
def share_of_one(settings) -> None:
    settings.WORKER_ORG_CONCURRENCY = 1


def deferred_names() -> list[str]:
    return sorted(Schedule.objects.filter(name__startswith="deferred ").values_list("name", flat=True))


def running_session(project) -> AgentSession:
    now = timezone.now()
    return AgentSessionFactory(project=project, status="running", started_at=now, heartbeat_at=now)


def test_an_organization_at_its_share_is_deferred_while_another_organizations_session_waits(
    cast, share_of_one, handed_on
):
    running_session(cast.project_a)
    theirs = AgentSessionFactory(project=cast.project_b)
    deferred = AgentSessionFactory(project=cast.project_a)

    llm = ScriptedLLM([])
    assert session_process(deferred.id, llm=llm) is None
    assert llm.calls == []  # the slot was given back at once, nothing was asked of the LLM
    deferred.refresh_from_db()
    assert deferred.status == "queued" and deferred.attempts == 0  # not lost, not counted as a failure
    # written down: queued again by its own schedule, on the worker's queue, if no hand-on comes first
    schedule = Schedule.objects.get(name=f"deferred session {cast.org_a.pk} {deferred.id}")
    assert (schedule.func, schedule.args, schedule.schedule_type) == (
        "memories.tasks.session_distill", repr((deferred.id,)), Schedule.ONCE
    )  # fmt: skip
    assert schedule.cluster == "reasoningbank"
    assert 50 <= (schedule.next_run - timezone.now()).total_seconds() <= 61

    assert session_process(theirs.id, llm=ScriptedLLM([ONE_MEMORY])).status == "done"


def test_alone_an_organization_uses_every_free_slot(cast, share_of_one, handed_on):
    running_session(cast.project_a)
    second = AgentSessionFactory(project=cast.project_a)
    assert session_process(second.id, llm=ScriptedLLM([ONE_MEMORY])).status == "done"


def test_a_running_consolidation_run_counts_toward_the_organizations_share(cast, share_of_one, handed_on):
    at = timezone.now()
    ConsolidationRunFactory(project=cast.project_a, status="running", started_at=at, heartbeat_at=at)
    AgentSessionFactory(project=cast.project_b)
    session = AgentSessionFactory(project=cast.project_a)
    assert session_process(session.id, llm=ScriptedLLM([])) is None


def test_a_consolidation_run_beyond_the_share_is_deferred_and_stays_queued(cast, share_of_one, handed_on):
    running_session(cast.project_a)
    AgentSessionFactory(project=cast.project_b)
    run = ConsolidationRunFactory(project=ProjectFactory(organization=cast.org_a))
    assert consolidation_execute(run.id) is None
    run.refresh_from_db()
    assert run.status == ConsolidationRun.STATUS_QUEUED


def test_a_finished_distillation_hands_its_slot_to_the_deferred_work_of_the_organization_running_the_least(
    cast, share_of_one, handed_on
):
    org_c = OrganizationFactory(slug="initech", plan="pro")
    for _ in range(2):
        running_session(cast.project_a)
    running_session(cast.project_b)
    a_deferred = AgentSessionFactory(project=cast.project_a)
    b_deferred = AgentSessionFactory(project=cast.project_b)
    c_waiting = AgentSessionFactory(project=ProjectFactory(organization=org_c))
    assert session_process(a_deferred.id, llm=ScriptedLLM([])) is None
    assert session_process(b_deferred.id, llm=ScriptedLLM([])) is None
    assert len(deferred_names()) == 2

    assert session_process(c_waiting.id, llm=ScriptedLLM([ONE_MEMORY])).status == "done"

    assert handed_on == [("session", b_deferred.id)]  # globex runs one, acme two: globex's turn
    assert deferred_names() == [f"deferred session {cast.org_a.pk} {a_deferred.id}"]


def test_work_whose_task_is_still_queued_is_not_handed_on_a_second_task(cast, share_of_one, handed_on):
    mine = AgentSessionFactory(project=cast.project_a)
    AgentSessionFactory(project=cast.project_b)  # its own task is in the queue
    assert session_process(mine.id, llm=ScriptedLLM([ONE_MEMORY])).status == "done"
    assert handed_on == []


def test_a_deferred_session_that_gets_its_turn_loses_its_schedule(cast, share_of_one, handed_on):
    busy = running_session(cast.project_a)
    AgentSessionFactory(project=cast.project_b)
    deferred = AgentSessionFactory(project=cast.project_a)
    assert session_process(deferred.id, llm=ScriptedLLM([])) is None
    AgentSession.objects.filter(pk=busy.pk).update(status="done")
    assert session_process(deferred.id, llm=ScriptedLLM([ONE_MEMORY])).status == "done"
    assert deferred_names() == []


def test_a_session_still_being_handed_in_is_not_work_waiting_for_a_slot(cast, share_of_one, handed_on):
    """Sessions submitted while they went on wait to be idle (docs/claude-code.md#capture), not for a
    worker: they hold nobody back."""
    running_session(cast.project_a)
    AgentSessionFactory(project=cast.project_b, next_attempt_at=timezone.now() - timedelta(seconds=1), attempts=0)
    second = AgentSessionFactory(project=cast.project_a)
    assert session_process(second.id, llm=ScriptedLLM([ONE_MEMORY])).status == "done"


def test_a_queued_run_waiting_for_its_organizations_turn_is_not_failed_as_unclaimed(cast, settings):
    settings.CONSOLIDATION_QUEUE_TIMEOUT = 600
    long_ago = timezone.now() - timedelta(minutes=20)
    running_session(cast.project_a)
    waiting_its_turn = ConsolidationRunFactory(project=cast.project_a)
    unclaimed = ConsolidationRunFactory(project=cast.project_b)
    ConsolidationRun.objects.filter(pk__in=[waiting_its_turn.pk, unclaimed.pk]).update(created_at=long_ago)
    assert runs_recover_stale() == 1
    waiting_its_turn.refresh_from_db()
    unclaimed.refresh_from_db()
    assert waiting_its_turn.status == ConsolidationRun.STATUS_QUEUED
    assert unclaimed.status == ConsolidationRun.STATUS_FAILED


def test_distillations_and_runs_are_queued_on_the_workers_queue_whichever_process_queues_them(
    db, monkeypatch, settings
):
    """The webhook worker's processes default to their own queue: a session or a run they queued (a sweep,
    a hand-on) must still go to the worker, never sit among the deliveries."""
    from django_q import tasks

    from consolidation.runs import run_enqueue
    from memories.sessions.services import session_enqueue

    sent: list[dict] = []
    monkeypatch.setattr(tasks, "async_task", lambda func, *args, **kwargs: sent.append({"func": func, **kwargs}))
    session_enqueue("ses_1")
    run_enqueue("run_1")
    assert [(s["func"], s["cluster"]) for s in sent] == [
        ("memories.tasks.session_distill", settings.Q_CLUSTER["name"]),
        ("consolidation.tasks.consolidation_run_task", settings.Q_CLUSTER["name"]),
    ]


def test_a_webhook_worker_process_that_starts_leaves_the_sweep_to_the_worker(monkeypatch, settings):
    from consolidation import receivers

    swept: list[str] = []
    monkeypatch.setattr(receivers, "work_sweep", lambda: swept.append("swept") or {})
    monkeypatch.setattr(receivers, "cluster_name", lambda: settings.WEBHOOKS_CLUSTER)
    receivers.on_worker_spawned(None, proc_name="Process-1")
    assert swept == []
    monkeypatch.setattr(receivers, "cluster_name", lambda: settings.Q_CLUSTER["name"])
    receivers.on_worker_spawned(None, proc_name="Process-2")
    assert swept == ["swept"]
