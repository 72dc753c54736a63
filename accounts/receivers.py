from typing import Any

from accounts.organizations.services import user_signup_provision


def provision_org_on_signup(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """Every self-service signup gets its own org (on DEFAULT_PLAN) with the new user as owner."""
    user_signup_provision(user=user)


def audit_llm_budget_alert(sender: Any, organization_id: int, data: dict[str, Any], **kwargs: Any) -> None:
    """An organization's LLM spend reached its alert threshold (once per period): an audit row, by the
    system, with the cap and the numbers (docs/llm-spend.md#the-alert)."""
    from accounts.audit import audit_record
    from accounts.models import Organization

    organization = Organization.objects.filter(pk=organization_id).first()
    if organization is not None:
        audit_record(organization=organization, actor=None, verb="llm.budget_alert", data=data)
