"""Setting an organization's own LLM caps (docs/llm-spend.md#setting-the-caps): per UTC day and per
UTC month, each optional and never above the plan's ``llm_tokens_per_month``, and the percentage of a
cap at which its admins are warned. Owners and admins only (the ``admin`` scope), audited. The caps
are kept by ``reasoningbank.ai.budget`` on every LLM call.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.audit import audit_record
from accounts.models import SCOPE_ADMIN
from reasoningbank.ai.budget import budget_touch
from reasoningbank.errors import Forbidden, InvalidInput
from reasoningbank.models import LlmBudget

# a cap below this could not hold one call's reply (max_tokens) and would stop all LLM work for good
MIN_CAP_TOKENS = 1_000
ALERT_PERCENT_RANGE = (1, 100)


def _cap_clean(value: Any, field: str, plan_limit: int | None, plan: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be a whole number of tokens, or null for no cap", field=field)
    if value < MIN_CAP_TOKENS:
        raise InvalidInput(f"{field} must be at least {MIN_CAP_TOKENS:,} tokens (or null for no cap)", field=field)
    if plan_limit is not None and value > plan_limit:
        raise InvalidInput(
            f"{field} cannot be above the {plan} plan's {plan_limit:,} LLM tokens per month", field=field
        )
    return value


def llm_budget_get(principal: Principal) -> LlmBudget:
    """The organization's caps (an unsaved row with no caps when its admins never set any)."""
    organization = principal.organization
    return LlmBudget.objects.filter(organization=organization).first() or LlmBudget(organization=organization)


@transaction.atomic
def llm_budget_set(
    *, principal: Principal, daily_tokens: Any = None, monthly_tokens: Any = None, alert_percent: Any = None
) -> LlmBudget:
    """Replace the organization's caps. ``None`` is no cap (no alert, for ``alert_percent``); a cap is
    at least ``MIN_CAP_TOKENS`` and at most the plan's monthly budget; a daily cap above the monthly
    one is refused (it could never be reached). Work waiting for the budget is tried again at the next
    resume, since the caps moved."""
    if not principal.has_scope(SCOPE_ADMIN):
        raise Forbidden("changing the LLM budget needs the admin role (or a token with the 'admin' scope)")
    if principal.is_restricted:
        raise Forbidden("a token restricted to some projects cannot set the organization's LLM budget")
    organization = principal.organization
    plan_limit = organization.limit("llm_tokens_per_month")
    daily = _cap_clean(daily_tokens, "daily_tokens", plan_limit, organization.plan)
    monthly = _cap_clean(monthly_tokens, "monthly_tokens", plan_limit, organization.plan)
    if daily is not None and monthly is not None and daily > monthly:
        raise InvalidInput("daily_tokens cannot be above monthly_tokens", field="daily_tokens")
    if alert_percent is not None and (
        isinstance(alert_percent, bool)
        or not isinstance(alert_percent, int)
        or not ALERT_PERCENT_RANGE[0] <= alert_percent <= ALERT_PERCENT_RANGE[1]
    ):
        raise InvalidInput(
            "alert_percent must be a whole number from 1 to 100, or null for no alert", field="alert_percent"
        )
    budget, _ = LlmBudget.objects.select_for_update().get_or_create(organization=organization)
    before = {
        "daily_tokens": budget.daily_tokens,
        "monthly_tokens": budget.monthly_tokens,
        "alert_percent": budget.alert_percent,
    }
    budget.daily_tokens, budget.monthly_tokens, budget.alert_percent = daily, monthly, alert_percent
    budget.updated_at = timezone.now()
    budget.save()
    budget_touch(organization.pk)
    audit_record(
        organization=organization,
        actor=principal,
        verb="llm.budget_set",
        data={"from": before, "to": {"daily_tokens": daily, "monthly_tokens": monthly, "alert_percent": alert_percent}},
    )
    return budget
