from typing import Any

from accounts.organizations.services import user_signup_provision


def provision_org_on_signup(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """Every self-service signup gets its own org (on DEFAULT_PLAN) with the new user as owner; a person
    signed up by their organization's single sign-on joins that organization instead (below)."""
    if kwargs.get("sociallogin") is not None:
        return
    user_signup_provision(user=user)


def sso_sign_in_record(sender: Any, request: Any, user: Any, sociallogin: Any = None, **kwargs: Any) -> None:
    """A sign-in through an organization's identity provider: just-in-time membership and the roles its
    groups map to (accounts/sso/services.py); the session then acts in that organization, and remembers
    that it was signed in there (the OAuth consent of an organization that requires SSO asks for it)."""
    if sociallogin is None:
        return
    from django.contrib import messages

    from accounts.sso.services import sso_sign_in_complete
    from accounts.sso.sessions import sso_session_mark
    from reasoningbank.errors import ServiceError

    app = sociallogin.provider.app
    try:
        membership = sso_sign_in_complete(user=user, social_app_id=app.pk, claims=sociallogin.account.extra_data)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return
    if membership is not None:
        sso_session_mark(request, membership.organization)


def audit_llm_budget_alert(sender: Any, organization_id: int, data: dict[str, Any], **kwargs: Any) -> None:
    """An organization's LLM spend reached its alert threshold (once per period): an audit row, by the
    system, with the cap and the numbers (docs/llm-spend.md#the-alert)."""
    from accounts.audit import audit_record
    from accounts.models import Organization

    organization = Organization.objects.filter(pk=organization_id).first()
    if organization is not None:
        audit_record(organization=organization, actor=None, verb="llm.budget_alert", data=data)
