"""Reads for the dashboard's system page (``system/views_system.py``).

Who sees what: the worker, the queue and the LLM are the service's (``system.selectors``,
cached, no tenant rows) and shown to everyone who may open the page; consolidation runs, failed
sessions and failed background tasks are tenant rows — an org admin's page reads their org's only,
a staff user's every org's (each row naming its org). A failed django-q2 task carries no org: it is
attributed through the run or session id it was given, and tasks that belong to no org (the
schedules: heartbeat, rollup, scheduler tick) are a staff matter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from django.db.models import F, QuerySet

from accounts.access import access_filter
from accounts.models import Membership, Organization
from consolidation.models import ConsolidationRun, ProjectConsolidationSettings
from memories.models import AgentSession

FailureKind = Literal["run", "session", "task"]

# the tasks that act for one org, and the model whose id is their first argument
ATTRIBUTABLE_TASKS: dict[str, type[ConsolidationRun] | type[AgentSession]] = {
    "consolidation.tasks.consolidation_run_task": ConsolidationRun,
    "memories.tasks.session_distill": AgentSession,
}
# failed tasks read per page: django-q2 keeps every failure, and its arguments are pickled (the org
# of one is only known after unpickling), so the newest few hundred are looked at, not the table
TASK_SCAN_LIMIT = 300
ERROR_CHARS = 500


@dataclass(frozen=True)
class SystemScope:
    """Whose tenant rows the page shows: one org's (``organization``), or every org's (staff)."""

    organization: Organization | None
    staff: bool = False

    @property
    def all_orgs(self) -> bool:
        return self.organization is None


def system_scope(*, user: Any, membership: Membership | None) -> SystemScope | None:
    """The page's scope for this user, or None when they may not see it: staff see every org; an
    owner or admin of the current org sees that org; members and viewers are refused."""
    if user is None or not user.is_authenticated:
        return None
    if user.is_staff:
        return SystemScope(None, staff=True)
    if membership is not None and membership.has_role(Membership.ROLE_ADMIN):
        return SystemScope(membership.organization)
    return None


def _scoped(model_or_qs: Any, scope: SystemScope) -> QuerySet[Any]:
    if scope.organization is not None:
        return access_filter(model_or_qs, scope.organization)
    return model_or_qs if isinstance(model_or_qs, QuerySet) else model_or_qs._default_manager.all()


def system_runs(scope: SystemScope) -> QuerySet[ConsolidationRun]:
    """Consolidation runs, newest first (paginated by the page)."""
    return (
        _scoped(ConsolidationRun, scope)
        .select_related("organization", "project")
        .defer("preview", "result")  # a dry run's preview can be large; the list shows status and timings
        .order_by("-created_at", "-pk")
    )


def system_waiting_for_llm(scope: SystemScope) -> dict[str, int]:
    """Work kept until an LLM is configured (or the org's budget resets), in the scope."""
    return {
        "sessions": _scoped(AgentSession, scope).filter(status=AgentSession.STATUS_WAITING).count(),
        "runs": _scoped(ConsolidationRun, scope).filter(status=ConsolidationRun.STATUS_WAITING).count(),
    }


@dataclass(frozen=True)
class SystemFailure:
    """One recent error: a failed run, a session whose distillation failed, or a failed task."""

    kind: FailureKind
    at: datetime
    object_id: str  # the run, the session, or the django-q2 task
    title: str
    error: str
    organization: Organization | None  # None: a task that acted for no org (a schedule)
    project_slug: str = ""


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 1] + "…"


def task_error_text(result: Any) -> str:
    """django-q2 keeps a failed task's result as ``"<error> : <traceback>"``: the traceback's last line
    (``ValueError: boom``) names the exception, so it is what the page shows; else the text as it is."""
    text = str(result or "").strip()
    head, marker, trace = text.partition(" : Traceback (most recent call last):")
    if marker:
        lines = [line.strip() for line in trace.strip().splitlines() if line.strip()]
        if lines:
            return _clip(lines[-1])
    return _clip(head or text or "no error recorded")


def _failed_runs(scope: SystemScope, limit: int) -> list[SystemFailure]:
    rows = (
        _scoped(ConsolidationRun, scope)
        .filter(status=ConsolidationRun.STATUS_FAILED)
        .select_related("organization", "project")
        .order_by(F("finished_at").desc(nulls_last=True), "-created_at")[:limit]
    )
    return [
        SystemFailure(
            "run",
            run.finished_at or run.created_at,
            run.id,
            ("Dry run" if run.dry_run else "Consolidation run") + (f" of {run.project.slug}" if run.project else ""),
            _clip("; ".join(str(e) for e in run.errors or []) or "failed without an error message"),
            run.organization,
            run.project.slug if run.project else "",
        )
        for run in rows
    ]


def _failed_sessions(scope: SystemScope, limit: int) -> list[SystemFailure]:
    rows = (
        _scoped(AgentSession, scope)
        .filter(status=AgentSession.STATUS_FAILED)
        .select_related("organization", "project")
        .defer("trace", "raw_reply")  # a trace may be half a megabyte; the page shows the error only
        .order_by("-updated_at")[:limit]
    )
    return [
        SystemFailure(
            "session",
            session.finished_at or session.updated_at,
            session.id,
            f"Distillation of session {session.external_id}",
            _clip(session.error or "failed without an error message"),
            session.organization,
            session.project.slug,
        )
        for session in rows
    ]


def _task_target(func: str, args: Any) -> str | None:
    if func not in ATTRIBUTABLE_TASKS or not isinstance(args, tuple | list) or not args:
        return None
    return args[0] if isinstance(args[0], str) else None


def _failed_tasks(scope: SystemScope, limit: int) -> list[SystemFailure]:
    from django_q.models import Failure

    failures = Failure.objects.order_by("-stopped").only("id", "name", "func", "args", "result", "stopped")
    if not scope.all_orgs:
        failures = failures.filter(func__in=list(ATTRIBUTABLE_TASKS))  # an org never sees a schedule's failure
    rows = list(failures[:TASK_SCAN_LIMIT])
    wanted: dict[type[Any], set[str]] = {}
    for task in rows:
        target = _task_target(task.func, task.args)
        if target is not None:
            wanted.setdefault(ATTRIBUTABLE_TASKS[task.func], set()).add(target)
    owner_ids: dict[tuple[type[Any], str], int] = {}
    for model, ids in wanted.items():
        for pk, org_id in _scoped(model, scope).filter(pk__in=ids).values_list("pk", "organization_id"):
            owner_ids[(model, pk)] = org_id
    orgs = {org.pk: org for org in Organization.objects.filter(pk__in=set(owner_ids.values()))}
    owners = {key: orgs[org_id] for key, org_id in owner_ids.items()}
    found: list[SystemFailure] = []
    for task in rows:
        target = _task_target(task.func, task.args)
        org = owners.get((ATTRIBUTABLE_TASKS[task.func], target)) if target is not None else None
        if org is None and not scope.all_orgs:
            continue  # another org's task, or one whose object is gone
        found.append(
            SystemFailure("task", task.stopped, task.id, task.name or task.func, task_error_text(task.result), org)
        )
        if len(found) >= limit:
            break
    return found


def system_failures(scope: SystemScope, *, limit: int = 25) -> list[SystemFailure]:
    """The most recent errors of the three kinds together, newest first."""
    merged = _failed_runs(scope, limit) + _failed_sessions(scope, limit) + _failed_tasks(scope, limit)
    merged.sort(key=lambda failure: failure.at, reverse=True)
    return merged[:limit]


def system_backing_off(scope: SystemScope) -> QuerySet[ProjectConsolidationSettings]:
    """Projects whose consolidation runs keep failing (``consolidation.runs.project_backoff_record``):
    their automatic runs wait, longer after each failure; most failures first."""
    return (
        _scoped(ProjectConsolidationSettings, scope)
        .filter(consecutive_failures__gt=0)
        .select_related("organization", "project")
        .order_by("-consecutive_failures", "-last_failed_at")
    )
