"""Consolidation runs (docs/consolidation.md): request (plan gates, one active
run per project), execute (the phases in the cycle's order, each timed and reported), finish, and
the recovery of runs a dead worker left behind.

The phases and their order are the registry's (``consolidation.phases.registry``; each module of
``consolidation/phases/`` registers its own and says why it comes where it does). Each phase commits
its own work: a run that fails or crashes keeps what committed, and a re-run picks up what is left.
Nothing is ever deleted.
"""

from __future__ import annotations

import functools
import logging
import time
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.db.models.functions import Now
from django.utils import timezone

from accounts.access import Principal, system_principal
from accounts.models import SCOPE_CONSOLIDATION_RUN, Project
from accounts.plans.catalogue import FEATURE_CONSOLIDATION_MANUAL, FEATURE_CONSOLIDATION_SCHEDULED
from accounts.services import audit_record
from consolidation import events
from consolidation.backoff import failure_backoff
from consolidation.batch_mode import run_batch_send, run_batch_session
from consolidation.models import ConsolidationRun, ProjectConsolidationSettings
from consolidation.phases.registry import Phase, phases
from consolidation.run_state import RunOptions, RunState, RunTimeout
from consolidation.validation import feature_require
from reasoningbank.ai.batch_services import batches_open
from reasoningbank.errors import Conflict, Forbidden, InvalidInput
from reasoningbank.fair_share import slow_work_claim, slow_work_hand_on, slow_work_running_organizations
from reasoningbank.models import LlmCall
from reasoningbank.tracing import current_set, span, task_carrier, traced
from reasoningbank.work_heartbeat import WorkHeartbeat, database_now, worker_identity, worker_is_gone

logger = logging.getLogger("consolidation")


# the run's ``phase`` once every phase is done (not a phase: nothing runs in it)
PHASE_COMPLETED = "completed"


def run_options_validate(
    *, similarity_threshold: Any = None, max_clusters: Any = 0, dry_run: Any = False
) -> RunOptions:
    threshold = (
        settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD if similarity_threshold is None else similarity_threshold
    )
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.5 <= threshold <= 0.99:
        raise InvalidInput("similarity_threshold must be a number from 0.5 to 0.99", field="similarity_threshold")
    if isinstance(max_clusters, bool) or not isinstance(max_clusters, int) or not 0 <= max_clusters <= 10_000:
        raise InvalidInput("max_clusters must be an integer from 0 (no limit) to 10000", field="max_clusters")
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run must be true or false", field="dry_run")
    return RunOptions(similarity_threshold=float(threshold), max_clusters=max_clusters, dry_run=dry_run)


def project_argument(*, project: str | None, project_id: str | None) -> str | None:
    """The slug a request names: ``project`` (every other tool's name) or ``project_id`` (the
    consolidate tool's own); None when neither is given (``memories.core.selectors.project_target`` then
    picks the only one)."""
    project, project_id = (project or "").strip() or None, (project_id or "").strip() or None
    if project and project_id and project != project_id:
        raise InvalidInput(
            f"project {project!r} and project_id {project_id!r} name different projects: pass one of them",
            field="project",
        )
    return project or project_id


def consolidation_request(
    *,
    principal: Principal,
    project: Project | None,
    options: RunOptions,
    trigger: str = ConsolidationRun.TRIGGER_MANUAL,
) -> ConsolidationRun:
    """Create a run (queued). Gates: manual needs Pro, automatic needs Teams; one active run per project.
    ``project`` None (no slug, and the token reaches several projects) is a clear 4xx."""
    if project is None:
        raise InvalidInput("project_id is required: the slug of the project to consolidate", field="project_id")
    org = principal.organization
    if trigger == ConsolidationRun.TRIGGER_MANUAL:
        if not principal.has_scope(SCOPE_CONSOLIDATION_RUN):
            raise Forbidden(f"running consolidation needs the '{SCOPE_CONSOLIDATION_RUN}' scope")
        feature_require(org, FEATURE_CONSOLIDATION_MANUAL, "manual consolidation")
    else:
        feature_require(org, FEATURE_CONSOLIDATION_SCHEDULED, "automatic consolidation")
    # a run left behind by a dead worker must not block this request
    # (docs/operations.md#work-whose-worker-died-is-released-within-a-minute)
    runs_recover_stale(project=project)
    try:
        with transaction.atomic():
            run = ConsolidationRun.objects.create(
                organization=org,
                project=project,
                trigger=trigger,
                options=options.as_dict(),
                dry_run=options.dry_run,
                requested_by_token=principal.token,
                requested_by_user=principal.user,
            )
            audit_record(
                organization=org,
                actor=principal,
                verb="consolidation.request",
                target=run,
                data={"project": project.slug, "trigger": trigger, **options.as_dict()},
            )
    except IntegrityError:
        active = ConsolidationRun.objects.filter(project=project, status__in=ConsolidationRun.STATUSES_ACTIVE).first()
        waiting = (
            f"; it is failed if no worker picks it up within {minutes_text(settings.CONSOLIDATION_QUEUE_TIMEOUT)}"
            if active is not None and active.status == ConsolidationRun.STATUS_QUEUED
            else ""
        )
        if active is not None and active.status == ConsolidationRun.STATUS_WAITING and active.resume_at:
            waiting = f"; it goes on at {active.resume_at:%Y-%m-%d %H:%M} UTC, or once the LLM caps are raised"
        if active is not None and active.status == ConsolidationRun.STATUS_WAITING_BATCH:
            waiting = "; it goes on once the LLM provider answered its batch, within a day"
        raise Conflict(
            f"a consolidation run for {project.slug!r} is already {active.status if active else 'active'}"
            + (f" ({active.id}{waiting})" if active else ""),
            field="project_id",
        ) from None
    return run


def consolidation_enqueue(run: ConsolidationRun) -> None:
    carrier = task_carrier()  # the run's trace continues the request's (or the tick's) that asked for it
    transaction.on_commit(lambda: run_enqueue(run.id, carrier=carrier))


def run_enqueue(run_id: str, *, carrier: dict[str, Any] | None = None) -> None:
    """A task for a queued run, now (the hand-on of a freed worker slot calls this too)."""
    from django_q.tasks import async_task

    async_task(
        "consolidation.tasks.consolidation_run_task",
        run_id,
        task_name=f"consolidate {run_id}",
        cluster=settings.Q_CLUSTER["name"],  # the worker's queue, whichever process queues it
        **(carrier or {}),
    )


def last_completed_run(project: Project) -> ConsolidationRun | None:
    return (
        ConsolidationRun.objects.filter(project=project, status=ConsolidationRun.STATUS_COMPLETED, dry_run=False)
        .order_by("-started_at")
        .first()
    )


def run_claim(run_id: str) -> ConsolidationRun | None:
    """Queued → running, when the organization's share of the worker admits it now
    (reasoningbank/fair_share.py); None when another worker has it, or it was deferred (it stays queued
    and is handed on when a slot frees)."""
    rows = ConsolidationRun.objects.filter(pk=run_id, status=ConsolidationRun.STATUS_QUEUED)
    organization_id = rows.values_list("organization_id", flat=True).first()
    now = timezone.now()
    claim = functools.partial(
        rows.update,
        status=ConsolidationRun.STATUS_RUNNING,
        started_at=now,
        heartbeat_at=Now(),  # the database's clock, as every later beat (reasoningbank.work_heartbeat)
        phase=phases()[0].name,
        worker=worker_identity(),
    )
    if organization_id is None or not slow_work_claim("consolidation_run", run_id, organization_id, claim):
        return None
    return ConsolidationRun.objects.select_related("organization", "project", "requested_by_token").get(pk=run_id)


def _run_span_result(run: ConsolidationRun | None) -> dict[str, Any]:
    """What a finished run adds to its ``consolidation.run`` span: status and counts (no content)."""
    if run is None:
        return {"claimed": False}
    return {
        "status": run.status, "created": len(run.result.get("created_memories", [])),
        "archived": len(run.result.get("archived_memories", [])), "processed": run.counters.get("processed", 0),
        "llm_calls": run.llm_calls, "warnings": len(run.warnings), "errors": len(run.errors),
    }


@traced("consolidation.run", result=_run_span_result)
def consolidation_execute(run_id: str, *, llm: Any = None) -> ConsolidationRun | None:
    """Run one queued consolidation run to the end. Returns None if another worker has it. While it
    runs, its heartbeat is stamped (``WORK_HEARTBEAT_INTERVAL``), so a run whose worker dies is
    failed within a minute (``runs_recover_stale``)."""
    run = run_claim(run_id)
    if run is None:
        return None
    try:
        with WorkHeartbeat(ConsolidationRun, run.id, interval=settings.WORK_HEARTBEAT_INTERVAL) as heartbeat:
            finished = _run_execute(run, llm=llm, heartbeat=heartbeat)
        project_backoff_record(finished)
    finally:
        slow_work_hand_on(after=run.organization_id)  # the slot this run held goes to the next in line
    return finished


def _run_execute(run: ConsolidationRun, *, llm: Any, heartbeat: WorkHeartbeat) -> ConsolidationRun:
    options = RunOptions.of(run.options)
    project = run.project
    assert project is not None
    # No "too soon" rule here: a run that was requested runs. How often automatic runs come is the
    # scheduler's and the on-demand trigger's to decide (consolidation/triggers.py), and a person or an
    # agent who asks means now (docs/consolidation.md#what-starts-a-run).
    previous = last_completed_run(project)
    since = previous.started_at if previous is not None else None
    current_set(  # the consolidation.run span's attributes (checkpoint: the previous run it continues from)
        run_id=run.id, org_id=run.organization_id, project_id=project.id, trigger=run.trigger,
        mode="incremental" if since is not None else "full", dry_run=options.dry_run,
        similarity_threshold=options.similarity_threshold, checkpoint_id=previous.id if previous else None,
    )
    principal = Principal(
        organization=run.organization,
        scopes=system_principal(run.organization).scopes,
        token=run.requested_by_token,
        user=run.requested_by_user,
    )
    started = time.monotonic()
    state = RunState(
        run=run,
        project=project,
        options=options,
        principal=principal,
        llm=llm,
        started=started,
        deadline=started + settings.CONSOLIDATION_RUN_TIMEOUT,
        now=timezone.now(),
        since=previous.started_at if previous else None,
        heartbeat=heartbeat,
    )
    status = ConsolidationRun.STATUS_COMPLETED
    try:
        state.batch = run_batch_session(run, llm)
        for phase in phases():
            phase_run(state, phase)
        status = run_batch_send(state, _status_after_budget(state))
    except RunTimeout as exc:
        status = ConsolidationRun.STATUS_FAILED
        state.errors.append(str(exc))
    except Exception as exc:  # a bug or a database error: record it, keep what committed
        logger.exception("consolidation run %s failed", run.id)
        status = ConsolidationRun.STATUS_FAILED
        state.errors.append(f"{type(exc).__name__}: {exc}")
    if status == ConsolidationRun.STATUS_WAITING and state.budget_refused is not None:
        run.resume_at = state.budget_refused.resets_at
    finished = run_finish(
        run,
        status,
        counters=state.counters,
        preview=state.preview,
        warnings=state.warnings,
        errors=state.errors,
        durations=state.durations,
        created=state.created,
        archived=state.archived,
    )
    events.run_completed.send(sender=ConsolidationRun, run=finished)
    return finished


def _status_after_budget(state: RunState) -> str:
    """Completed, or waiting for the LLM budget when it refused some of the run's calls: every phase
    ran (those without an LLM did all their work), and the LLM's share waits for the run to be queued
    again at the period's turn (``runs_resume_budget``). A dry run only says what it could not ask."""
    if not state.budget_refusals or state.budget_refused is None:
        return ConsolidationRun.STATUS_COMPLETED
    state.warnings.append(
        f"{state.budget_refusals} LLM call(s) wait for the budget: {state.budget_refused}"
        + ("" if state.dry else "; the run goes on then")
    )
    return ConsolidationRun.STATUS_COMPLETED if state.dry else ConsolidationRun.STATUS_WAITING


def runs_resume_budget() -> int:
    """Periodic (``rb:consolidation-scheduler``'s tick): runs waiting for the LLM budget
    are queued again once the period that stopped them turned (``resume_at``) or their organization's
    caps moved since they stopped (``LlmBudget.updated_at``). A run still over a cap spends nothing and
    waits again after its phases without an LLM."""
    now = timezone.now()
    due = ConsolidationRun.objects.filter(status=ConsolidationRun.STATUS_WAITING).filter(
        Q(resume_at__lte=now) | Q(organization__llm_budget__updated_at__gt=F("finished_at"))
    )
    resumed = 0
    for run in due.select_related("organization", "project"):
        # conditional: a second resumer (another worker's tick) finds it queued and leaves it
        if ConsolidationRun.objects.filter(pk=run.pk, status=ConsolidationRun.STATUS_WAITING).update(
            status=ConsolidationRun.STATUS_QUEUED, resume_at=now, finished_at=None
        ):
            resumed += 1
            consolidation_enqueue(run)
    return resumed


def runs_resume_batch() -> int:
    """Periodic (``rb:llm-batches-poll``, after the poll): runs waiting for their LLM batch are queued again
    once none of their batches is still with the provider (docs/llm-spend.md#batch-mode)."""
    now = timezone.now()
    resumed = 0
    for run in ConsolidationRun.objects.filter(status=ConsolidationRun.STATUS_WAITING_BATCH).select_related(
        "organization", "project"
    ):
        if batches_open(run):
            continue
        # conditional: a second resumer finds it queued and leaves it
        if ConsolidationRun.objects.filter(pk=run.pk, status=ConsolidationRun.STATUS_WAITING_BATCH).update(
            status=ConsolidationRun.STATUS_QUEUED, resume_at=now, finished_at=None
        ):
            resumed += 1
            consolidation_enqueue(run)
    return resumed


def phase_run(state: RunState, phase: Phase) -> None:
    state.check_time()
    cycle = phases()
    ConsolidationRun.objects.filter(pk=state.run.pk).update(
        phase=phase.name,
        progress=cycle.index(phase) / len(cycle),
        heartbeat_at=timezone.now(),
        counters=state.counters,
    )
    started = time.perf_counter()
    before = dict(state.counters)
    try:
        # one span per phase (consolidation.scan, .cluster, ...) with the counts it changed
        with span(f"consolidation.{phase.name}", phase=phase.name) as phase_span:
            phase.step(state)
            phase_span.set_attributes(
                {k: v - before.get(k, 0) for k, v in state.counters.items() if v != before.get(k)}
            )
    finally:
        state.durations[phase.name] = round(time.perf_counter() - started, 4)


def run_finish(
    run: ConsolidationRun,
    status: str,
    *,
    counters: dict[str, int],
    preview: dict[str, Any],
    warnings: list[str],
    errors: list[str],
    durations: dict[str, float],
    created: list[str],
    archived: list[str],
) -> ConsolidationRun:
    now = timezone.now()
    run.status = status
    run.phase = PHASE_COMPLETED if status == ConsolidationRun.STATUS_COMPLETED else run.phase or ""
    run.progress = (
        1.0 if status in (ConsolidationRun.STATUS_COMPLETED, ConsolidationRun.STATUS_SKIPPED) else run.progress
    )
    run.counters, run.preview, run.warnings, run.errors = counters, preview, warnings, errors
    run.phase_durations = durations
    run.finished_at = now
    run.started_at = run.started_at or now
    calls = LlmCall.objects.for_subject(run)
    run.llm_calls = calls.count()
    run.llm_input_tokens = sum(c.input_tokens for c in calls)
    run.llm_output_tokens = sum(c.output_tokens for c in calls)
    run.result = {
        "created_memories": created,
        "archived_memories": archived,
        "skipped_count": counters.get("skipped", 0),
        "total_processed": counters.get("processed", 0),
        "duration_seconds": round((now - run.started_at).total_seconds(), 2),
        # a dry run's lists are proposals: say so wherever the result goes (MCP, REST, dashboard)
        "dry_run": run.dry_run,
    }
    run.save()
    logger.info(
        (
            "Consolidation dry run %s run=%s project=%s would create=%d would archive=%d duration=%.1fs"
            if run.dry_run
            else "Consolidation %s run=%s project=%s created=%d archived=%d duration=%.1fs"
        ),
        status,
        run.id,
        run.project.slug if run.project else "-",
        len(created),
        len(archived),
        run.result["duration_seconds"],
    )
    return run


def minutes_text(seconds: float) -> str:
    value = seconds / 60
    return f"{value:g} minute{'' if value == 1 else 's'}"


def seconds_text(seconds: float) -> str:
    return minutes_text(seconds) if seconds >= 120 else f"{seconds:g} seconds"


def runs_recover_stale(*, project: Project | None = None, stale_after: timedelta | None = None) -> int:
    """Fail the runs whose worker is gone, so they never block their project (one active run per
    project): queued runs no worker claimed within CONSOLIDATION_QUEUE_TIMEOUT (no worker running,
    or it died before claiming) and running runs whose heartbeat, stamped every
    WORK_HEARTBEAT_INTERVAL by the process executing them, is older than WORK_HEARTBEAT_STALE_AFTER
    (killed, crashed, timed out, restarted) or whose process is known dead (``worker_is_gone``: on
    this host, at once). Their committed clusters stay merged, nothing is half-archived because each
    merge was one transaction. Called every minute (``rb:work-sweep``), when a worker process starts,
    by the scheduler tick, and when a new run is requested for the project. A late worker finds the
    run no longer queued and leaves it; a live one that lost its run stops at its next phase."""
    now = timezone.now()
    runs = ConsolidationRun.objects.all() if project is None else ConsolidationRun.objects.filter(project=project)
    queue_timeout = settings.CONSOLIDATION_QUEUE_TIMEOUT
    unclaimed_error = (
        f"no worker picked this run up within {minutes_text(queue_timeout)}; is the worker running? "
        "(`manage.py qcluster`, which scripts/run.sh starts) Request the run again once it is."
    )
    queued_before = now - timedelta(seconds=queue_timeout)
    unclaimed = runs_fail(
        # a run queued again after waiting for the LLM budget counts from then (resume_at); one whose
        # organization has slow work running is waiting its turn (its share of the worker), not unclaimed
        runs.filter(status=ConsolidationRun.STATUS_QUEUED)
        .filter(Q(resume_at__isnull=True, created_at__lt=queued_before) | Q(resume_at__lt=queued_before))
        .exclude(organization_id__in=slow_work_running_organizations()),
        unclaimed_error,
        now=now,
    )
    stale_after = stale_after or timedelta(seconds=settings.WORK_HEARTBEAT_STALE_AFTER)
    cutoff = database_now() - stale_after  # beats are stamped by the database's clock
    running = runs.filter(status=ConsolidationRun.STATUS_RUNNING)
    stale = running.filter(Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, created_at__lt=cutoff))
    dead = runs_fail(
        stale,
        f"no heartbeat from its worker for {seconds_text(stale_after.total_seconds())}: the worker running "
        "this stopped (killed, crashed or restarted); committed merges were kept, re-run to continue",
        now=now,
    )
    gone = [pk for pk, worker in running.exclude(worker="").values_list("pk", "worker") if worker_is_gone(worker)]
    dead += runs_fail(
        running.filter(pk__in=gone),
        "its worker process died (killed or crashed) while running it; committed merges were kept, re-run to continue",
        now=now,
    )
    if unclaimed or dead:
        logger.warning(
            "Consolidation runs failed: %d queued with no worker within %s, %d running whose worker died",
            unclaimed,
            minutes_text(queue_timeout),
            dead,
        )
    return unclaimed + dead


def runs_fail(runs: Any, error: str, *, now: datetime) -> int:
    """Fail ``runs`` (still in the state they were selected in) with ``error``; their projects' failure
    count goes up and ``run_completed`` is sent, as for any failed run. Row by row, so a run that moved on meanwhile is left alone."""
    failed = 0
    for run in runs.select_related("project"):
        updated = ConsolidationRun.objects.filter(pk=run.pk, status=run.status).update(
            status=ConsolidationRun.STATUS_FAILED, finished_at=now, errors=[error]
        )
        if updated:
            failed += 1
            run.status, run.errors, run.finished_at = ConsolidationRun.STATUS_FAILED, [error], now
            project_backoff_record(run)
            # as for a run that failed while running: metrics, the log line and the run_failed webhook
            events.run_completed.send(sender=ConsolidationRun, run=run)
    return failed


# --- projects whose runs keep failing -------------------------------------------------------------------


def project_backoff_record(run: ConsolidationRun) -> None:
    """Count a finished run towards its project's failures in a row: a completed run resets them; a
    failed one adds one and makes automatic runs (schedule, on-demand) wait CONSOLIDATION_FAILURE_BACKOFF,
    doubled per failure, at most CONSOLIDATION_FAILURE_BACKOFF_MAX — instead of failing again every
    scheduler tick (an imported bank the judge could not read failed 12 times an hour). A dry run or a
    skipped one says nothing about the project."""
    if run.dry_run or run.project_id is None:
        return
    if run.status == ConsolidationRun.STATUS_COMPLETED:
        ProjectConsolidationSettings.objects.filter(project_id=run.project_id, consecutive_failures__gt=0).update(
            consecutive_failures=0, retry_after=None, last_error=""
        )
        return
    if run.status != ConsolidationRun.STATUS_FAILED:
        return
    now = timezone.now()
    with transaction.atomic():
        ProjectConsolidationSettings.objects.get_or_create(
            project_id=run.project_id, defaults={"organization_id": run.organization_id}
        )
        row = ProjectConsolidationSettings.objects.select_for_update().get(project_id=run.project_id)
        row.consecutive_failures += 1
        delay = failure_backoff(
            row.consecutive_failures,
            base=settings.CONSOLIDATION_FAILURE_BACKOFF,
            cap=settings.CONSOLIDATION_FAILURE_BACKOFF_MAX,
        )
        row.retry_after = now + timedelta(seconds=delay)
        row.last_failed_at = now
        row.last_error = "; ".join(str(e) for e in run.errors or [])[:2000] or "failed without an error message"
        row.save(update_fields=["consecutive_failures", "retry_after", "last_failed_at", "last_error"])
    logger.warning(
        "Consolidation of project=%s failed %d time(s) in a row; its automatic runs wait %s (until %s)",
        run.project.slug if run.project else run.project_id,
        row.consecutive_failures,
        seconds_text(delay),
        row.retry_after.isoformat(timespec="seconds"),
    )
