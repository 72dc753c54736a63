"""Writes of plans: an organization's plan changes here (owners on the dashboard, staff in the admin,
``manage.py set_plan``), audited; the plan's monthly LLM budget moves with it."""

from __future__ import annotations

from django.db import transaction

from accounts.access import Principal
from accounts.audit import audit_record
from accounts.models import Organization
from accounts.plans.catalogue import plan_get
from reasoningbank.ai.budget import budget_touch
from reasoningbank.errors import InvalidInput


@transaction.atomic
def organization_set_plan(*, organization: Organization, plan: str, actor: Principal | None) -> Organization:
    try:
        plan_get(plan)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="plan") from None
    previous = organization.plan
    organization.plan = plan
    organization.save(update_fields=["plan"])
    audit_record(
        organization=organization, actor=actor, verb="organization.plan_change", target=organization,
        data={"from": previous, "to": plan},
    )
    budget_touch(organization.pk)  # the plan's monthly budget moved: work waiting for it is tried again
    return organization
