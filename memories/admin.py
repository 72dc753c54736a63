"""Admin moderation of memories, their links and signals, and agent sessions.

Archive / restore / edit go through the memory services (audited, re-embedded) with a system
principal of the memory's org, recorded as the staff user. Embeddings are never shown.
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from accounts.access import staff_principal
from memories.core.services import UPDATABLE, memory_draft, memory_update
from memories.models import AgentSession, Memory, MemoryLink, MemorySignal, MemorySummary, SessionCommit
from memories.moderation.services import memory_archive, memory_restore
from memories.sessions.services import RETRYABLE, sessions_requeue
from reasoningbank.admin import ReadOnlyAdmin, ReadOnlyInline
from reasoningbank.errors import ServiceError

SIGNALS_SHOWN = 50


class OutgoingLinkInline(ReadOnlyInline):
    model = MemoryLink
    fk_name = "source"
    fields = ("kind", "target", "weight", "reason", "run", "resolved_at", "created_at")
    readonly_fields = fields
    show_change_link = True
    verbose_name = "outgoing link"
    verbose_name_plural = "outgoing links"


class RecentSignalsFormSet(BaseInlineFormSet):
    def get_queryset(self) -> Any:
        if not hasattr(self, "_recent"):
            self._recent = list(super().get_queryset().order_by("-created_at")[:SIGNALS_SHOWN])
        return self._recent


class SignalInline(ReadOnlyInline):
    model = MemorySignal
    formset = RecentSignalsFormSet
    fields = ("created_at", "type", "positive", "actor", "session_id", "comment", "confidence_after")
    readonly_fields = fields
    verbose_name = "signal"
    verbose_name_plural = f"signals (latest {SIGNALS_SHOWN})"


class MemoryForm(forms.ModelForm):
    class Meta:
        model = Memory
        fields = UPDATABLE

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        values = {name: data.get(name, getattr(self.instance, name)) for name in UPDATABLE}
        try:
            memory_draft(**values)
        except ServiceError as exc:
            raise forms.ValidationError({exc.field: exc.message} if exc.field in UPDATABLE else exc.message) from None
        return data


EDITABLE_FIELDS = frozenset({"title", "description", "content", "outcome", "tags", "kind"})


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    form = MemoryForm
    list_display = (
        "id",
        "title",
        "organization",
        "project",
        "kind",
        "outcome",
        "state",
        "tier",
        "confidence",
        "usage_count",
        "origin",
        "created_at",
    )
    list_filter = ("state", "kind", "outcome", "tier", "origin", "archived_reason", "organization")
    search_fields = ("title", "description", "id")
    list_select_related = ("organization", "project")
    date_hierarchy = "created_at"
    exclude = ("embedding", "search_vector")
    fieldsets = (
        (None, {"fields": ("id", "title", "description", "content", "outcome", "tags", "kind")}),
        ("Place", {"fields": ("organization", "team", "project")}),
        (
            "Life",
            {
                "fields": (
                    "state",
                    "archived_reason",
                    "archived_at",
                    "consolidated_into",
                    "tier",
                    "retention",
                    "importance",
                    "expires_at",
                )
            },
        ),
        (
            "Trust",
            {"fields": ("confidence", "prior_alpha", "prior_beta", "alpha", "beta", "usage_count", "last_used_at")},
        ),
        (
            "Provenance",
            {
                "fields": (
                    "origin",
                    "source_session",
                    "created_by_token",
                    "created_by_user",
                    "embedding_model",
                    "created_at",
                    "updated_at",
                )
            },
        ),
    )
    # staff may correct the text; everything else is the system's record
    readonly_fields = tuple(
        name
        for _, options in fieldsets
        for name in cast(tuple[str, ...], options["fields"])
        if name not in EDITABLE_FIELDS
    )
    inlines = (OutgoingLinkInline, SignalInline)
    actions = ("archive_selected", "restore_selected")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories are recorded by agents (MCP / REST) or distilled

    def save_model(self, request: HttpRequest, obj: Memory, form: Any, change: bool) -> None:
        changes = {name: form.cleaned_data[name] for name in form.changed_data if name in UPDATABLE}
        if changes:
            memory_update(principal=staff_principal(obj.organization, request), memory=obj, changes=changes)
            obj.refresh_from_db()

    def _apply(self, request: HttpRequest, queryset: QuerySet[Memory], action: Any, verb: str) -> None:
        done, failed = 0, []
        for memory in queryset.select_related("organization"):
            try:
                action(principal=staff_principal(memory.organization, request), memory=memory)
                done += 1
            except ServiceError as exc:
                failed.append(f"{memory.id}: {exc.message}")
        self.message_user(request, f"{verb} {done} memor{'y' if done == 1 else 'ies'}.", messages.SUCCESS)
        for failure in failed:
            self.message_user(request, failure, messages.ERROR)

    @admin.action(description="Archive selected memories", permissions=["change"])
    def archive_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        self._apply(request, queryset.filter(state=Memory.STATE_ACTIVE), memory_archive, "Archived")

    @admin.action(description="Restore selected memories", permissions=["change"])
    def restore_selected(self, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        self._apply(request, queryset.filter(state=Memory.STATE_ARCHIVED), memory_restore, "Restored")


class MemoryLinkForm(forms.ModelForm):
    class Meta:
        model = MemoryLink
        fields = ("source", "target", "kind", "weight", "reason", "resolved_at")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        source, target = data.get("source"), data.get("target")
        if source is not None and target is not None:
            if source.organization_id != target.organization_id:
                raise forms.ValidationError("Both memories must belong to the same organization.")
            if source.pk == target.pk:
                raise forms.ValidationError("A memory cannot link to itself.")
        return data


@admin.register(MemoryLink)
class MemoryLinkAdmin(admin.ModelAdmin):
    form = MemoryLinkForm
    list_display = ("source", "kind", "target", "weight", "organization", "resolved_at", "created_at")
    list_filter = ("kind", ("resolved_at", admin.EmptyFieldListFilter), "organization")
    search_fields = ("source__id", "target__id", "source__title", "target__title", "reason")
    list_select_related = ("source", "target", "organization")
    raw_id_fields = ("source", "target")
    readonly_fields = ("run", "created_at")

    def save_model(self, request: HttpRequest, obj: MemoryLink, form: Any, change: bool) -> None:
        obj.organization_id = obj.source.organization_id
        super().save_model(request, obj, form, change)


@admin.register(MemorySignal)
class MemorySignalAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "memory", "type", "positive", "actor", "confidence_after", "organization")
    list_filter = ("type", "positive", "organization")
    search_fields = ("memory__id", "memory__title", "actor", "session_id", "comment")
    list_select_related = ("memory", "organization")
    date_hierarchy = "created_at"


@admin.register(MemorySummary)
class MemorySummaryAdmin(ReadOnlyAdmin):
    """Consolidated summaries (docs/memory-model.md#summaries), written by consolidation's summarize phase."""

    list_display = ("created_at", "id", "memory", "status", "activation_count", "project", "organization")
    list_filter = ("status", "organization")
    search_fields = ("id", "memory__id", "memory__title", "summary", "consolidation_run_id")
    list_select_related = ("memory", "project", "organization")
    exclude = ("embedding",)
    date_hierarchy = "created_at"


@admin.register(SessionCommit)
class SessionCommitAdmin(ReadOnlyAdmin):
    """Commits tied to agent sessions and their code-stability verdicts (``session_code_report``)."""

    list_display = ("created_at", "commit", "session_key", "status", "verdict_at", "reported_by", "organization")
    list_filter = ("status", "organization")
    search_fields = ("commit", "session_key")
    list_select_related = ("organization",)
    date_hierarchy = "created_at"


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "organization",
        "project",
        "external_id",
        "outcome",
        "status",
        "attempts",
        "created_at",
        "finished_at",
    )
    list_filter = ("status", "outcome", "organization")
    search_fields = ("id", "external_id", "error")
    list_select_related = ("organization", "project")
    date_hierarchy = "created_at"
    readonly_fields = (
        "id",
        "organization",
        "project",
        "external_id",
        "outcome",
        "status",
        "attempts",
        "error",
        "next_attempt_at",
        "redactions",
        "submitted_by_token",
        "created_at",
        "updated_at",
        "started_at",
        "finished_at",
        "raw_reply",
        "trace",
    )
    actions = ("retry",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # the trace is read-only; the changelist keeps the retry action for staff with change rights
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Retry selected failed / waiting sessions", permissions=["change"])
    def retry(self, request: HttpRequest, queryset: QuerySet[AgentSession]) -> None:
        retryable = queryset.filter(status__in=RETRYABLE)
        skipped = queryset.count() - retryable.count()
        count = sessions_requeue(retryable)
        self.message_user(request, f"Queued {count} session(s) again.", messages.SUCCESS)
        if skipped:
            self.message_user(
                request, f"Skipped {skipped} session(s) that are not failed or waiting.", messages.WARNING
            )
