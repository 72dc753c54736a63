"""The quality report's dashboard page (docs/consolidation.md#the-review-queue-and-disputes): a
project's merges, contradictions, pairs waiting for review, what the write gate refused and merges
undone, now and per week.

Everyone in the org reads. The project comes through ``access_project`` with ``request.principal``,
so another organization's project is a 404.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.access import access_project, reachable_projects
from accounts.models import Project
from accounts.views_base import org_view
from consolidation.quality.selectors import QualityReport, quality_report
from memories.pages import Bucket, bar_chart  # the overview's chart geometry: one look for every bar chart

# the report's weekly series, in the order the page draws them
SERIES = (
    ("merged", "Memories merged away (duplicates and syntheses)"),
    ("rejected", "Writes the write gate refused"),
    ("near_copies", "Near copies answered with an existing memory"),
    ("unmerged", "Merges undone"),
    ("contradictions", "Contradictions found"),
    ("reviews", "Pairs set aside for review"),
)


def _selected_project(request: HttpRequest, projects: list[Project]) -> Project | None:
    """The ``?project=`` of the page (404 for a project the user cannot reach), else the first one."""
    slug = request.GET.get("project", "").strip()
    if slug:
        return access_project(request.principal, slug)  # type: ignore[attr-defined]
    return projects[0] if projects else None


def _charts(report: QualityReport) -> list[dict[str, Any]]:
    charts = []
    for name, title in SERIES:
        buckets = [
            Bucket(week.start.strftime("%d %b"), getattr(week, name), f"week of {week.start.isoformat()}")
            for week in report.weeks
        ]
        charts.append(
            {
                "name": name,
                "title": title,
                "total": sum(b.count for b in buckets),
                "chart": bar_chart(buckets, width=360, height=120, label_every=3),
            }
        )
    return charts


@org_view()
@require_GET
def quality_page(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    projects = list(reachable_projects(principal).order_by("slug"))
    project = _selected_project(request, projects)
    report = quality_report(principal, project) if project is not None else None
    charts = _charts(report) if report is not None else []
    context = {
        "nav": "quality",
        "projects": projects,
        "project": project,
        "report": report,
        "charts": charts,
        # six flat lines say nothing: until something has happened the page says what makes them move
        "charted": any(chart["total"] for chart in charts),
    }
    return render(request, "consolidation/quality.html", context)
