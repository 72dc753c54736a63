"""The dashboard's system page: is the background work running, and what went wrong lately?

Org owners and admins see the service's health (worker, queue, LLM: the same for everyone) and their
org's consolidation runs and errors; staff see every org's. Members and viewers get a 403, like the
other admin pages. The health part re-renders itself every 10 seconds (htmx polling); the runs list
pages in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.models import Membership
from accounts.selectors import top_spenders
from accounts.views_base import current_membership, org_view
from consolidation.models import ConsolidationRun
from consolidation.phases.registry import phase_names
from consolidation.timeline import phase_legend, phase_timeline
from reasoningbank.ai.llm import llm_health_get
from reasoningbank.health import Backlog, age_text, llm_banner, worker_banner
from system.selectors import queue_health_cached, worker_health_cached, worker_presences_get
from system.selectors_system import (
    SystemFailure,
    SystemScope,
    system_backing_off,
    system_failures,
    system_runs,
    system_scope,
    system_waiting_for_llm,
)

RUNS_PER_PAGE = 20
RECENT_FAILURES = 25
BACKING_OFF_SHOWN = 50
POLL_SECONDS = 10
SPENDERS_DAYS = 30
SPENDERS_SHOWN = 10
TEMPLATE = "system/system.html"

WORKER_LABELS = {
    "ok": "Alive",
    "starting": "Starting",
    "stale": "Down",
    "never_seen": "Never seen",
    "inline": "Inline (Q_SYNC)",
}


@dataclass(frozen=True)
class QueueRow:
    name: str
    count: int
    oldest: str  # "3 minutes", or "" when nothing waits
    stalled: bool


@login_required
@require_GET
def system_page(request: HttpRequest) -> HttpResponse:
    # staff may belong to no org at all: they still see the page (every org's rows), without the org nav
    if request.user.is_staff and current_membership(request) is None:
        return _render(request, SystemScope(None, staff=True), current_org_id=None)
    return _system_page_of_member(request)


@org_view()
def _system_page_of_member(request: HttpRequest) -> HttpResponse:
    membership: Membership = request.membership  # type: ignore[attr-defined]
    scope = system_scope(user=request.user, membership=membership)
    if scope is None:
        raise PermissionDenied("the system page needs the admin role or above")
    return _render(request, scope, current_org_id=membership.organization_id)


def _render(request: HttpRequest, scope: SystemScope, *, current_org_id: int | None) -> HttpResponse:
    htmx = getattr(request, "htmx", None)
    target = htmx.target if htmx and not htmx.history_restore_request else None
    context: dict[str, Any] = {"nav": "system", "scope": scope, "poll_seconds": POLL_SECONDS}
    if target != "system-runs":
        context.update(_health(scope))
    if target == "system-health":
        return render(request, f"{TEMPLATE}#health", context)
    page = Paginator(system_runs(scope), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    order = phase_names()  # the cycle's phases, in its order (consolidation.phases.registry)
    runs = [
        (run, phase_timeline(run.phase_durations, order=order), _run_link(run, scope, current_org_id))
        for run in page.object_list
    ]
    # the key to the bars, shown when the page draws one
    legend = phase_legend(order) if any(timeline.drawn for _, timeline, _ in runs) else []
    context.update(page=page, runs=runs, legend=legend)
    if target == "system-runs":
        return render(request, f"{TEMPLATE}#runs", context)
    context["backing_off"] = list(system_backing_off(scope)[:BACKING_OFF_SHOWN])
    failures = system_failures(scope, limit=RECENT_FAILURES)
    context["failures"] = [(f, _failure_link(f, scope=scope, current_org_id=current_org_id)) for f in failures]
    if scope.staff:  # every organization's spend: staff only (docs/llm-spend.md#the-spend-page)
        context.update(spenders=top_spenders(days=SPENDERS_DAYS, limit=SPENDERS_SHOWN), spenders_days=SPENDERS_DAYS)
    return render(request, TEMPLATE, context)


def _age(seconds: float | None) -> str:
    return "" if seconds is None else age_text(seconds)


def _health(scope: SystemScope) -> dict[str, Any]:
    worker = worker_health_cached()
    queue = queue_health_cached()
    llm = llm_health_get()
    stalled_after = queue.stalled_after
    backlogs: list[tuple[str, Backlog | None]] = [
        ("Background tasks", queue.tasks),
        ("Consolidation runs", queue.runs),
        ("Sessions", queue.sessions),
    ]
    rows = [
        QueueRow(name, b.count, _age(b.oldest_age), b.oldest_age is not None and b.oldest_age > stalled_after)
        for name, b in backlogs
        if b is not None  # another broker than the ORM one: its queue is not measured here
    ]
    return {
        "worker": worker,
        "worker_label": WORKER_LABELS[worker.status],
        "worker_age": _age(worker.last_probe_age),
        "worker_stale_after": age_text(worker.stale_after),
        "worker_fix": worker_banner(worker),
        "worker_presences": [(beat, _age(beat.age)) for beat in worker_presences_get()],
        "queue": queue,
        "queue_rows": rows,
        "queue_stalled_after": age_text(stalled_after),
        "llm": llm,
        "llm_fix": llm_banner(llm),
        "waiting": system_waiting_for_llm(scope),
    }


ADMIN_CHANGE = {
    "run": "admin:consolidation_consolidationrun_change",
    "session": "admin:memories_agentsession_change",
    "task": "admin:django_q_failure_change",
}


def _run_link(run: ConsolidationRun, scope: SystemScope, current_org_id: int | None) -> str:
    if run.organization_id == current_org_id:
        return reverse("consolidation-run", args=[run.id])
    return reverse(ADMIN_CHANGE["run"], args=[run.id]) if scope.staff else ""


def _failure_link(failure: SystemFailure, *, scope: SystemScope, current_org_id: int | None) -> str:
    """The dashboard page of a run or session of the org being viewed; for staff, the admin's page of
    anything else (another org's object, a failed task); no link otherwise."""
    in_current_org = failure.organization is not None and failure.organization.pk == current_org_id
    if in_current_org and failure.kind == "run":
        return reverse("consolidation-run", args=[failure.object_id])
    if in_current_org and failure.kind == "session":
        return reverse("session-detail", args=[failure.object_id])
    if scope.staff:
        return reverse(ADMIN_CHANGE[failure.kind], args=[failure.object_id])
    return ""
