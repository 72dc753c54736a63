"""Admin for consolidation: runs and per-project schedules (read-only: runs are history, and
schedules change through the dashboard so the plan gate applies)."""

from __future__ import annotations

from django.contrib import admin

from consolidation.models import ConsolidationRun, ProjectConsolidationSettings
from reasoningbank.admin import ReadOnlyAdmin


@admin.register(ConsolidationRun)
class ConsolidationRunAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "organization",
        "project",
        "trigger",
        "dry_run",
        "status",
        "phase",
        "progress",
        "llm_calls",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "trigger", "dry_run", "organization")
    search_fields = ("id", "project__slug", "organization__slug")
    list_select_related = ("organization", "project")
    date_hierarchy = "created_at"


@admin.register(ProjectConsolidationSettings)
class ProjectConsolidationSettingsAdmin(ReadOnlyAdmin):
    list_display = ("project", "organization", "scheduled", "interval_seconds", "similarity_threshold", "updated_at")
    list_filter = ("scheduled", "organization")
    search_fields = ("project__slug", "organization__slug")
    list_select_related = ("project", "organization")
