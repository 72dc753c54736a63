"""Dashboard pages of consolidation: dry-run preview and apply, run history, run detail, schedules.

Everyone in the org reads; previews, runs and schedule changes need the member role. Manual runs
need the Pro plan, schedules the Teams plan: the page shows the gate instead of the form, and the
services refuse anyway. Service errors come back as form errors with status 400.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_POST

from accounts.access import access_filter, access_project, reachable_projects
from accounts.models import Membership, Project
from accounts.plans.catalogue import FEATURE_CONSOLIDATION_MANUAL, FEATURE_CONSOLIDATION_SCHEDULED
from accounts.views_base import org_view
from consolidation.models import ConsolidationRun, ProjectConsolidationSettings
from consolidation.phases.registry import phases, run_counters
from consolidation.run_state import RunOptions
from consolidation.runs import consolidation_enqueue, consolidation_execute, consolidation_request, run_options_validate
from consolidation.selectors import run_get, run_list
from consolidation.triggers import project_settings_update
from memories.models import Memory
from reasoningbank.errors import InvalidInput, NotFound, ServiceError

MEMBER = Membership.ROLE_MEMBER
ACTIVE_STATUSES = (ConsolidationRun.STATUS_QUEUED, ConsolidationRun.STATUS_RUNNING)
RUNS_PER_PAGE = 25
PREVIEW_KEYS = ("duplicates", "clusters", "judge_pairs", "stale", "pattern_sources", "ladder")

MANUAL_GATE = "Manual consolidation needs the Pro plan"
SCHEDULE_GATE = "Scheduled consolidation needs the Teams plan"


# --- helpers -------------------------------------------------------------------------------------


def _project(request: HttpRequest, slug: str) -> Project:
    if not slug:
        raise InvalidInput("choose a project", field="project")
    return access_project(request.principal, slug)  # type: ignore[attr-defined]  # 404 for other orgs


def _float(value: str, field: str, *, required: bool = True) -> float | None:
    value = (value or "").strip()
    if not value:
        if required:
            raise InvalidInput(f"{field.replace('_', ' ')} is required", field=field)
        return None
    try:
        return float(value)
    except ValueError:
        raise InvalidInput(f"{field.replace('_', ' ')} must be a number", field=field) from None


def _int(value: str, field: str) -> int:
    value = (value or "").strip() or "0"
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(f"{field.replace('_', ' ')} must be a whole number", field=field) from None


def _options(request: HttpRequest, *, dry_run: bool) -> tuple[dict[str, str], RunOptions]:
    values = {
        "project": request.POST.get("project", "").strip(),
        "similarity_threshold": request.POST.get("similarity_threshold", "").strip(),
        "max_clusters": request.POST.get("max_clusters", "").strip(),
    }
    options = run_options_validate(
        similarity_threshold=_float(values["similarity_threshold"], "similarity_threshold"),
        max_clusters=_int(values["max_clusters"], "max_clusters"),
        dry_run=dry_run,
    )
    return values, options


def _errors_of(exc: ServiceError) -> dict[str, str]:
    return {exc.field or "form": exc.message}


def preview_view(request: HttpRequest, run: ConsolidationRun) -> dict[str, Any]:
    """The dry run's preview with titles: what would merge, archive and be checked."""
    preview = run.preview or {}
    ids: set[str] = set()
    for item in preview.get("duplicates", []):
        ids.add(item["keep"])
        ids.update(item["archive"])
    for item in preview.get("clusters", []):
        ids.update(item["members"])
    for item in preview.get("judge_pairs", []):
        ids.update((item["older"], item["newer"]))
    ids.update(preview.get("stale", []))
    for item in preview.get("ladder", []):
        ids.update(item.get("sources") or [item["memory"]])
    # near-identical rows often share a title: the id, creation time and project tell them apart
    rows = {
        row[0]: row
        for row in access_filter(Memory, request.principal)  # type: ignore[attr-defined]
        .filter(pk__in=list(ids))
        .values_list("id", "title", "created_at", "project__slug")
    }

    def memo(memory_id: str) -> dict[str, Any]:
        _, title, created_at, project = rows.get(memory_id, (memory_id, "", None, ""))
        return {"id": memory_id, "title": title, "created_at": created_at, "project": project or ""}

    return {
        "duplicates": [
            {"keep": memo(d["keep"]), "archive": [memo(m) for m in d["archive"]], "similarity": d["similarity"]}
            for d in preview.get("duplicates", [])
        ],
        "clusters": [
            {
                "members": [memo(m) for m in c["members"]],
                "average_similarity": c["average_similarity"],
                "then": c.get("then", ""),
            }
            for c in preview.get("clusters", [])
        ],
        "judge_pairs": [
            {
                "older": memo(p["older"]),
                "newer": memo(p["newer"]),
                "similarity": p["similarity"],
                "cues": p.get("cues", []),
                "then": p.get("then", ""),
            }
            for p in preview.get("judge_pairs", [])
        ],
        "stale": [memo(m) for m in preview.get("stale", [])],
        "pattern_episodes": sum(len(group) for group in preview.get("pattern_sources", [])),
        # the promotion ladder: a fact promoted in place names its ``memory``, a pattern its ``sources``
        "ladder": [
            {
                "from": item["from"],
                "to": item["to"],
                "reason": item["reason"],
                "memory": memo(item["memory"]) if "memory" in item else None,
                "sources": [memo(m) for m in item.get("sources", [])],
            }
            for item in preview.get("ladder", [])
        ],
        "empty": not any(preview.get(key) for key in PREVIEW_KEYS),
    }


def _schedule_rows(request: HttpRequest, projects: list[Project]) -> list[dict[str, Any]]:
    stored = {
        row.project_id: row
        for row in access_filter(ProjectConsolidationSettings, request.principal).filter(  # type: ignore[attr-defined]
            project__in=projects
        )
    }
    rows = []
    for project in projects:
        row = stored.get(project.pk)
        rows.append(
            {
                "project": project,
                # a project without a settings row follows the model default: scheduled
                "scheduled": row.scheduled if row else True,
                "interval_hours": round(row.interval_seconds / 3600, 2) if row and row.interval_seconds else None,
                "threshold": row.similarity_threshold if row else None,
                "updated_at": row.updated_at if row else None,
            }
        )
    return rows


def _history_context(request: HttpRequest, projects: list[Project]) -> dict[str, Any]:
    """The runs list of the page: a page of runs, filtered by ``?project=``."""
    project_filter = request.GET.get("project", "")
    runs = run_list(request.principal)  # type: ignore[attr-defined]
    if project_filter:
        runs = runs.filter(project__slug=project_filter)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    return {"projects": projects, "runs": page, "project_filter": project_filter}


def _index_page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    org = principal.organization
    projects = list(reachable_projects(principal).order_by("slug"))
    context = {
        "nav": "consolidation",
        "org": org,
        **_history_context(request, projects),
        "can_run": request.membership.has_role(MEMBER),  # type: ignore[attr-defined]
        "manual_enabled": org.has_feature(FEATURE_CONSOLIDATION_MANUAL),
        "scheduled_enabled": org.has_feature(FEATURE_CONSOLIDATION_SCHEDULED),
        "manual_gate": MANUAL_GATE,
        "schedule_gate": SCHEDULE_GATE,
        "schedules": _schedule_rows(request, projects),
        "default_threshold": settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD,
        "default_interval_hours": round(settings.CONSOLIDATION_SCHEDULER_INTERVAL / 3600, 2),
        "values": {"similarity_threshold": settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD, "max_clusters": 0},
        "errors": {},
        "schedule_errors": {},
        "active_statuses": ACTIVE_STATUSES,
        **extra,
    }
    return render(request, "consolidation/index.html", context, status=status)


# --- pages ---------------------------------------------------------------------------------------


@org_view()
def consolidation_index(request: HttpRequest) -> HttpResponse:
    return _index_page(request)


@require_POST
@org_view(min_role=MEMBER)
def consolidation_preview(request: HttpRequest) -> HttpResponse:
    """Run a dry run now (synchronously) and show what it would do, with an Apply button."""
    principal = request.principal  # type: ignore[attr-defined]
    values: dict[str, Any] = dict(request.POST.items())
    try:
        values, options = _options(request, dry_run=True)
        project = _project(request, values["project"])
        run = consolidation_request(principal=principal, project=project, options=options)
        run = consolidation_execute(run.id) or run_get(principal, run.id)
    except ServiceError as exc:
        if request.htmx:  # type: ignore[attr-defined]
            context = {"errors": _errors_of(exc), "preview_run": None}
            return render(request, "consolidation/index.html#preview", context, status=400)
        return _index_page(request, status=400, errors=_errors_of(exc), values=values)
    extra: dict[str, Any] = {"preview_run": run, "preview": preview_view(request, run), "values": values}
    if request.htmx:  # type: ignore[attr-defined]
        # the dry run is a run: the runs list below is swapped too (out of band), or it would still say
        # there are none
        projects = list(reachable_projects(principal).order_by("slug"))
        history = {**_history_context(request, projects), "out_of_band": True}
        return HttpResponse(
            render_to_string("consolidation/index.html#preview", {"can_run": True, **extra}, request=request)
            + render_to_string("consolidation/index.html#history", history, request=request)
        )
    return _index_page(request, **extra)


@require_POST
@org_view(min_role=MEMBER)
def consolidation_apply(request: HttpRequest) -> HttpResponse:
    """Queue a real run with the previewed options."""
    principal = request.principal  # type: ignore[attr-defined]
    values: dict[str, Any] = dict(request.POST.items())
    try:
        values, options = _options(request, dry_run=False)
        project = _project(request, values["project"])
        run = consolidation_request(principal=principal, project=project, options=options)
    except ServiceError as exc:
        return _index_page(request, status=400, errors=_errors_of(exc), values=values)
    consolidation_enqueue(run)
    messages.success(request, f"Consolidation of {project.slug} is queued.")
    return redirect("consolidation-run", run_id=run.id)


def _counter_rows(counters: dict[str, int], *, dry_run: bool = False) -> list[tuple[str, int]]:
    """Counters in the cycle's own order (jsonb does not keep key order), unknown keys last; a dry run's
    are proposals, named for what a real run would do (each phase's ``dry_run_label``)."""
    declared = run_counters()
    order = [c.key for c in declared]
    labels = {c.key: c.dry_run_label for c in declared if c.dry_run_label} if dry_run else {}
    names = sorted(counters, key=lambda n: (order.index(n) if n in order else len(order), n))
    return [(labels.get(name) or name.replace("_", " ").capitalize(), counters[name]) for name in names]


def _duration_rows(durations: dict[str, float]) -> list[tuple[str, float, str]]:
    """(phase, seconds, what the phase does) of a finished run, the slowest first."""
    described = {p.name: p.description for p in phases()}
    rows = sorted(durations.items(), key=lambda kv: -kv[1])
    return [(name, seconds, described.get(name, "")) for name, seconds in rows]


@org_view()
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    try:
        run = run_get(principal, run_id)
    except NotFound:
        raise Http404("Not found.") from None
    context = {
        "nav": "consolidation",
        "run": run,
        "polling": run.status in ACTIVE_STATUSES,
        "progress_percent": round((run.progress or 0) * 100),
        "preview": preview_view(request, run) if run.dry_run else None,
        "counters": _counter_rows(run.counters or {}, dry_run=run.dry_run),
        "queue_timeout_minutes": f"{settings.CONSOLIDATION_QUEUE_TIMEOUT / 60:g}",
        "durations": _duration_rows(run.phase_durations or {}),
        "result": run.result or {},
    }
    template = "consolidation/run_detail.html#status" if request.htmx else "consolidation/run_detail.html"  # type: ignore[attr-defined]
    return render(request, template, context)


@require_POST
@org_view(min_role=MEMBER)
def schedule_update(request: HttpRequest, project_slug: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    project = access_project(principal, project_slug)
    try:
        row = project_settings_update(
            principal=principal,
            project=project,
            scheduled=request.POST.get("scheduled") in ("on", "true", "1"),
            interval_hours=_float(request.POST.get("interval_hours", ""), "interval_hours", required=False),
            similarity_threshold=_float(
                request.POST.get("similarity_threshold", ""), "similarity_threshold", required=False
            ),
        )
    except ServiceError as exc:
        return _index_page(request, status=400, schedule_errors={project.slug: exc.message})
    messages.success(
        request,
        f"Schedule of {project.slug} saved: " + ("runs automatically." if row.scheduled else "automatic runs are off."),
    )
    return redirect("/consolidation/#schedule")
