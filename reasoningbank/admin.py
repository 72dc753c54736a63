"""Admin for cross-cutting records (LLM calls) and the read-only base used by the other apps."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from reasoningbank.ai.purposes import purposes
from reasoningbank.models import LlmBudget, LlmBudgetPeriod, LlmCall, LlmPrice


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


class PurposeFilter(admin.SimpleListFilter):
    """By purpose, labelled as the apps registered them (the field has no choices: purposes are a registry)."""

    title = "purpose"
    parameter_name = "purpose"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(p.name, p.label) for p in purposes()]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        return queryset.filter(purpose=self.value()) if self.value() else queryset


@admin.register(LlmCall)
class LlmCallAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "organization",
        "purpose_label",
        "provider",
        "model",
        "input_tokens",
        "output_tokens",
        "tokens_estimated",
        "latency_ms",
        "attempts",
        "outcome",
        "subject_type",
        "subject_id",
    )
    list_filter = (PurposeFilter, "outcome", "provider", "tokens_estimated", "subject_type", "organization")
    search_fields = ("model", "error", "subject_id")
    list_select_related = ("organization",)
    date_hierarchy = "created_at"


@admin.register(LlmPrice)
class LlmPriceAdmin(admin.ModelAdmin):
    """The price table of the spend page's estimated cost (docs/llm-spend.md#estimated-cost): editable
    here by staff, since provider prices change between deployments."""

    list_display = (
        "provider",
        "model",
        "input_per_million",
        "cached_input_per_million",
        "cache_write_per_million",
        "output_per_million",
        "currency",
        "updated_at",
    )
    search_fields = ("provider", "model")


@admin.register(LlmBudget)
class LlmBudgetAdmin(ReadOnlyAdmin):
    """Set by each organization's admins (Settings → LLM spend, or the REST API): shown, not edited."""

    list_display = ("organization", "daily_tokens", "monthly_tokens", "alert_percent", "updated_at")


@admin.register(LlmBudgetPeriod)
class LlmBudgetPeriodAdmin(ReadOnlyAdmin):
    list_display = ("organization", "period", "start", "used_tokens", "reserved_tokens", "alerted_at", "reached_at")
    list_filter = ("period",)
