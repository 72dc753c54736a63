"""Admin for cross-cutting records (LLM calls) and the read-only base used by the other apps."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from reasoningbank.models import LlmCall


class ReadOnlyAdmin(admin.ModelAdmin):
    """Staff can look, never add, change or delete (logs, traces, metering)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(LlmCall)
class LlmCallAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "organization",
        "purpose",
        "provider",
        "model",
        "input_tokens",
        "output_tokens",
        "latency_ms",
        "attempts",
        "outcome",
    )
    list_filter = ("purpose", "outcome", "provider", "organization")
    search_fields = ("model", "error", "session__id", "run__id")
    list_select_related = ("organization",)
    date_hierarchy = "created_at"
    raw_id_fields = ("session", "run")
