"""Admin for tenancy: organizations, teams, projects, memberships, API tokens and the audit log.

Staff changes that the dashboard audits go through the same services here (plan changes, token
revocation). Token digests are never shown.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.access import staff_principal
from accounts.audit import audit_record
from accounts.models import ApiToken, AuditEvent, Membership, Organization, Project, Team
from accounts.organizations.services import organization_set_auto_promote
from accounts.plans.services import organization_set_plan
from accounts.tokens.services import token_revoke
from reasoningbank.admin import ReadOnlyAdmin


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ("user",)
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "plan", "auto_promote_institutional", "created_at")
    list_filter = ("plan", "auto_promote_institutional")
    search_fields = ("slug", "name")
    inlines = (MembershipInline,)
    # the trust settings are the organization's own: its admins change them on Settings → Trust (and
    # Connected apps) through services that check and audit them (docs/security/memory-poisoning.md#the-trust-policy)
    readonly_fields = ("poisoning_policy", "injection_policy", "trusted_hosts", "trusted_oauth_clients")

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        # a staff-made org starts on the same plan as any other new org unless staff pick another
        return {"plan": settings.DEFAULT_PLAN, **super().get_changeform_initial_data(request)}

    def save_model(self, request: HttpRequest, obj: Organization, form: Any, change: bool) -> None:
        if not change:
            super().save_model(request, obj, form, change)
            audit_record(
                organization=obj, actor=staff_principal(obj, request), verb="organization.create", target=obj,
                data={"plan": obj.plan, "via": "admin"},
            )
            return
        # the plan and automatic promotion change through their services, which audit them
        new_plan, auto_promote = obj.plan, obj.auto_promote_institutional
        if "plan" in form.changed_data:
            obj.plan = form.initial.get("plan", new_plan)
        if "auto_promote_institutional" in form.changed_data:
            obj.auto_promote_institutional = form.initial.get("auto_promote_institutional", auto_promote)
        super().save_model(request, obj, form, change)
        if "plan" in form.changed_data:
            organization_set_plan(organization=obj, plan=new_plan, actor=staff_principal(obj, request))
        if "auto_promote_institutional" in form.changed_data:
            organization_set_auto_promote(organization=obj, enabled=auto_promote, actor=staff_principal(obj, request))
            obj.auto_promote_institutional = auto_promote


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "organization", "created_at")
    list_filter = ("organization",)
    search_fields = ("slug", "name", "organization__slug")
    list_select_related = ("organization",)


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ("organization", "team", "slug", "name")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or self.cleaned_data
        team, org = data.get("team"), data.get("organization")
        if team is not None and org is not None and team.organization_id != org.pk:
            raise forms.ValidationError({"team": "The team must belong to the project's organization."})
        return data


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectForm
    list_display = ("slug", "name", "organization", "team", "created_at")
    list_filter = ("organization",)
    search_fields = ("slug", "name", "organization__slug")
    list_select_related = ("organization", "team")
    autocomplete_fields = ("team",)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "organization", "role", "created_at")
    list_filter = ("role", "organization")
    search_fields = ("user__email", "user__username", "organization__slug")
    list_select_related = ("user", "organization")
    raw_id_fields = ("user",)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created in the dashboard or with ``manage.py create_token`` (the raw value is
    shown once there); here staff look and revoke. The digest is excluded everywhere."""

    exclude = ("digest",)
    list_display = (
        "prefix",
        "label",
        "organization",
        "scope_list",
        "created_by",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    list_filter = (("revoked_at", admin.EmptyFieldListFilter), "organization")
    search_fields = ("prefix", "label", "organization__slug")
    list_select_related = ("organization", "created_by")
    readonly_fields = (
        "organization",
        "label",
        "prefix",
        "scopes",
        "projects",
        "teams",
        "created_by",
        "created_at",
        "expires_at",
        "revoked_at",
        "last_used_at",
    )
    actions = ("revoke",)

    @admin.display(description="scopes")
    def scope_list(self, obj: ApiToken) -> str:
        return ", ".join(obj.scopes)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # the change page is view-only; the changelist keeps the revoke action for staff with change rights
        return obj is None and super().has_change_permission(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead: the audit log keeps pointing at the token

    @admin.action(description="Revoke selected tokens", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        count = 0
        for token in queryset.select_related("organization").filter(revoked_at__isnull=True):
            token_revoke(token=token, actor=staff_principal(token.organization, request))
            count += 1
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "organization", "actor", "verb", "target_type", "target_id", "ip")
    list_filter = ("verb", "target_type", "organization")
    search_fields = ("actor", "verb", "target_id", "organization__slug", "ip", "client")
    list_select_related = ("organization",)
    date_hierarchy = "created_at"
