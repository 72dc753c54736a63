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


def _sign_in_method(request: Any, user: Any) -> tuple[str, dict[str, Any]]:
    """How the person proved who they are, from allauth's record of this session's authentications:
    ``password`` or ``sso`` (a social or SSO login, with its provider), and whether a second factor
    followed; ``session`` for a sign-in allauth did not record (the Django admin's own form)."""
    from allauth.account.authentication import get_authentication_records

    records = get_authentication_records(request, user) if request is not None and hasattr(request, "session") else []
    methods = [record.get("method") for record in records if isinstance(record, dict)]
    first = next((method for method in methods if method != "mfa"), None)
    extra: dict[str, Any] = {"mfa": True} if "mfa" in methods else {}
    if first == "socialaccount":
        provider = next((r.get("provider") for r in records if r.get("method") == "socialaccount"), None)
        return "sso", {**extra, **({"provider": str(provider)[:100]} if provider else {})}
    return (str(first)[:40] if first else "session"), extra


def audit_user_logged_in(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """A dashboard sign-in (Django's ``user_logged_in``, which allauth's every login flow ends in)."""
    from accounts.audit_log.services import auth_sign_in_record

    method, extra = _sign_in_method(request, user)
    auth_sign_in_record(user=user, method=method, data=extra)


def audit_user_login_failed(sender: Any, credentials: dict[str, Any], request: Any = None, **kwargs: Any) -> None:
    """A failed sign-in (Django's ``user_login_failed``: allauth's password form and the admin's send it).
    ``credentials`` come with the password already masked by Django; only the login is read."""
    from accounts.audit_log.services import auth_sign_in_failed_record

    login = credentials.get("email") or credentials.get("username") or credentials.get("login") or ""
    if isinstance(login, str):
        auth_sign_in_failed_record(login=login)


def audit_user_logged_out(sender: Any, request: Any, user: Any = None, **kwargs: Any) -> None:
    from accounts.audit_log.services import auth_sign_out_record

    if user is not None and getattr(user, "is_authenticated", False):
        auth_sign_out_record(user=user)
