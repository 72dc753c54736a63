"""Settings → Plan & limits: the organization's plan, its features and limits with what the org uses of
each, the plans compared; the owner changes the plan here (docs/tenancy.md#plans-and-the-default-plan)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from accounts.access import access_filter
from accounts.models import Membership, Project
from accounts.plans.catalogue import (
    FEATURE_CONSOLIDATION_MANUAL,
    FEATURE_CONSOLIDATION_SCHEDULED,
    FEATURE_INSTITUTIONAL_PROMOTION,
    FEATURE_TEAMS,
    PLAN_ORDER,
    PLANS,
    plan_get,
    usage_count,
)
from accounts.plans.services import organization_set_plan
from accounts.views_base import OWNER, errors_of, org_view, require_role, settings_context
from reasoningbank.errors import InvalidInput, ServiceError

FEATURE_LABELS = {
    FEATURE_CONSOLIDATION_MANUAL: "Manual consolidation",
    FEATURE_CONSOLIDATION_SCHEDULED: "Scheduled consolidation",
    FEATURE_TEAMS: "Teams",
    FEATURE_INSTITUTIONAL_PROMOTION: "Institutional promotion (team and org knowledge)",
}
LIMIT_LABELS = {
    "projects": "Projects",
    "memories": "Active memories",
    "members": "Members",
    "llm_tokens_per_month": "LLM tokens per month",
}


@org_view()
def settings_plan(request: HttpRequest) -> HttpResponse:
    from reasoningbank.ai.metered import llm_usage_this_month

    principal = request.principal  # type: ignore[attr-defined]
    org = principal.organization
    errors: dict[str, str] = {}
    status = 200
    if request.method == "POST":
        require_role(request, OWNER)
        wanted = request.POST.get("plan", "")
        try:
            if wanted == org.plan:
                raise InvalidInput(f"the organization is already on the {org.get_plan_display()} plan", field="plan")
            previous = org.get_plan_display()
            organization_set_plan(organization=org, plan=wanted, actor=principal)
        except ServiceError as exc:
            errors, status = errors_of(exc), 400
        else:
            messages.success(request, f"Plan changed from {previous} to {org.get_plan_display()}.")
            return redirect("settings-plan")
    used = {
        "projects": access_filter(Project, org).count(),
        "memories": usage_count("memories", org),
        "members": access_filter(Membership, org).count(),
        "llm_tokens_per_month": llm_usage_this_month(org).total_tokens,
    }
    current = plan_get(org.plan)
    limits = []
    for name, label in LIMIT_LABELS.items():
        limit = current.limits.get(name)
        limits.append(
            {
                "name": name,
                "label": label,
                "used": used[name],
                "limit": limit,
                "percent": None if not limit else min(100.0, round(used[name] * 100 / limit, 1)),
                "over": limit is not None and used[name] > limit,
            }
        )
    plans = [PLANS[name] for name in PLAN_ORDER]
    comparison = {
        "features": [
            {"label": label, "cells": [feature in plan.features for plan in plans]}
            for feature, label in FEATURE_LABELS.items()
        ],
        "limits": [
            {"label": label, "cells": [plan.limits.get(name) for plan in plans]} for name, label in LIMIT_LABELS.items()
        ],
    }
    context = settings_context(
        request,
        "plan",
        plan=current,
        features=[(label, feature in current.features) for feature, label in FEATURE_LABELS.items()],
        limits=limits,
        plans=plans,
        comparison=comparison,
        errors=errors,
    )
    return render(request, "accounts/settings_plan.html", context, status=status)
