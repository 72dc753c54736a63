"""The dashboard's LLM spend page (Settings → LLM spend, docs/llm-spend.md): the organization's caps and
how much of each is spent, the form to change them (owners and admins; everyone else reads them), and
the tokens, calls and estimated cost per UTC day by purpose, provider and model.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.budgets.selectors import MAX_DAYS, spend_of
from accounts.budgets.services import llm_budget_get, llm_budget_set
from accounts.views_base import ADMIN, org_view, settings_context
from reasoningbank.ai.budget import budget_status
from reasoningbank.errors import InvalidInput, ServiceError

DAYS_CHOICES = (7, 30, MAX_DAYS)


def _days(request: HttpRequest) -> int:
    try:
        days = int(request.GET.get("days", "30"))
    except ValueError:
        return 30
    return days if days in DAYS_CHOICES else 30


def _spend_page(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    organization = principal.organization
    budget = llm_budget_get(principal)
    days = _days(request)
    extra.setdefault(
        "values",
        {
            "daily_tokens": budget.daily_tokens or "",
            "monthly_tokens": budget.monthly_tokens or "",
            "alert_percent": budget.alert_percent or "",
        },
    )
    context = settings_context(
        request,
        "usage",
        budget=budget,
        caps=budget_status(organization),
        plan_monthly=organization.limit("llm_tokens_per_month"),
        spend=spend_of(principal, days=days),
        days=days,
        days_choices=DAYS_CHOICES,
        **extra,
    )
    return render(request, "accounts/settings_usage.html", context, status=status)


@org_view()
def settings_spend(request: HttpRequest) -> HttpResponse:
    return _spend_page(request)


def _optional_int(value: str, field: str) -> int | None:
    value = value.strip().replace(",", "").replace("_", "")
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(f"{field.replace('_', ' ')} must be a whole number, or empty", field=field) from None


@require_POST
@org_view(min_role=ADMIN)
def settings_budget(request: HttpRequest) -> HttpResponse:
    """Owners and admins set the caps (a lower role: 403, nothing changed); bad values: the page again, 400."""
    values = {name: request.POST.get(name, "") for name in ("daily_tokens", "monthly_tokens", "alert_percent")}
    try:
        llm_budget_set(
            principal=request.principal,  # type: ignore[attr-defined]
            **{name: _optional_int(value, name) for name, value in values.items()},
        )
    except ServiceError as exc:
        return _spend_page(request, status=400, errors={exc.field or "form": exc.message}, values=values)
    messages.success(request, "LLM budget saved.")
    return redirect("settings-usage")
