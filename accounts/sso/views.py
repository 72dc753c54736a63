"""Pages of single sign-on: Settings → Single sign-on (admins configure the provider, roles and domains;
owners set the policy) and the public start page "Sign in with single sign-on" (an address's domain
names the organization, whose provider then signs the person in)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from accounts.models import SsoConnection
from accounts.sso.rules import role_map_text, verification_record_name, verification_record_value
from accounts.sso.selectors import sso_connection_of_org, sso_domain_owner, sso_domains_of_org
from accounts.sso.services import (
    sso_domain_add,
    sso_domain_remove,
    sso_domain_verify,
    sso_oidc_configure,
    sso_policy_set,
    sso_roles_set,
    sso_saml_configure,
)
from accounts.views_base import ADMIN, errors_of, org_view, settings_context
from reasoningbank.errors import ServiceError


def _principal(request: HttpRequest) -> Any:
    return request.principal  # type: ignore[attr-defined]  # set by @org_view


def _provider_endpoints(request: HttpRequest, connection: SsoConnection | None) -> dict[str, str]:
    """What the admin enters at the identity provider: where it sends people back to."""
    org = request.membership.organization  # type: ignore[attr-defined]
    provider_id = f"org-{org.slug}"
    return {
        "oidc_redirect_uri": request.build_absolute_uri(
            reverse("openid_connect_callback", kwargs={"provider_id": provider_id})
        ),
        "saml_acs_url": request.build_absolute_uri(reverse("saml_acs", args=[org.slug])),
        "saml_metadata_url": request.build_absolute_uri(reverse("saml_metadata", args=[org.slug])),
    }


def _page(
    request: HttpRequest,
    *,
    errors: dict[str, str] | None = None,
    values: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    principal = _principal(request)
    connection = sso_connection_of_org(tenant=principal)
    app = connection.social_app if connection is not None else None
    domains: list[dict[str, Any]] = [
        {
            "row": row,
            "record_name": verification_record_name(row.domain),
            "record_value": verification_record_value(row.token),
        }
        for row in sso_domains_of_org(tenant=principal)
    ]
    is_oidc = app is not None and connection is not None and connection.protocol == SsoConnection.PROTOCOL_OIDC
    is_saml = app is not None and connection is not None and connection.protocol == SsoConnection.PROTOCOL_SAML
    idp = app.settings.get("idp", {}) if is_saml and app is not None else {}
    stored = {
        "server_url": app.settings.get("server_url", "") if is_oidc and app is not None else "",
        "client_id": app.client_id if is_oidc and app is not None else "",
        "metadata_url": app.settings.get("rb_metadata_url", "") if is_saml and app is not None else "",
        "entity_id": idp.get("entity_id", ""),
        "sso_url": idp.get("sso_url", ""),
        "metadata_xml": "",
        "x509cert": "",
        "role_claim": connection.role_claim if connection is not None else "groups",
        "role_map": role_map_text(connection.role_map) if connection is not None else "",
        "domain": "",
    }
    # what the admin typed wins over what is stored (a refused form keeps its input)
    fields = {key: (values or {}).get(key, value) for key, value in stored.items()}
    context = settings_context(
        request,
        "sso",
        connection=connection,
        has_oidc_secret=is_oidc,
        fields=fields,
        jit_roles=SsoConnection.JIT_ROLES,
        domains=domains,
        has_verified_domain=any(item["row"].verified_at for item in domains),
        endpoints=_provider_endpoints(request, connection),
        errors=errors or {},
        values=values or {},
    )
    return render(request, "accounts/settings_sso.html", context, status=status)


@org_view(min_role=ADMIN)
def settings_sso(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _act(request: HttpRequest, action: Any, success: str) -> HttpResponse:
    try:
        action()
    except ServiceError as exc:
        return _page(request, errors=errors_of(exc), values=request.POST.dict(), status=400)
    messages.success(request, success)
    return redirect("settings-sso")


@require_POST
@org_view(min_role=ADMIN)
def sso_oidc_save(request: HttpRequest) -> HttpResponse:
    post = request.POST
    return _act(
        request,
        lambda: sso_oidc_configure(
            principal=_principal(request),
            server_url=post.get("server_url", ""),
            client_id=post.get("client_id", ""),
            secret=post.get("secret", ""),
        ),
        "The OpenID Connect provider was saved.",
    )


@require_POST
@org_view(min_role=ADMIN)
def sso_saml_save(request: HttpRequest) -> HttpResponse:
    post = request.POST
    return _act(
        request,
        lambda: sso_saml_configure(
            principal=_principal(request),
            metadata_url=post.get("metadata_url", ""),
            metadata_xml=post.get("metadata_xml", ""),
            entity_id=post.get("entity_id", ""),
            sso_url=post.get("sso_url", ""),
            x509cert=post.get("x509cert", ""),
        ),
        "The SAML identity provider was saved.",
    )


@require_POST
@org_view(min_role=ADMIN)
def sso_roles_save(request: HttpRequest) -> HttpResponse:
    post = request.POST
    return _act(
        request,
        lambda: sso_roles_set(
            principal=_principal(request),
            default_role=post.get("default_role", ""),
            role_claim=post.get("role_claim", ""),
            role_map=post.get("role_map", ""),
            groups_required=post.get("groups_required") == "on",
        ),
        "Roles were saved.",
    )


@require_POST
@org_view(min_role=ADMIN)
def sso_domain_create(request: HttpRequest) -> HttpResponse:
    return _act(
        request,
        lambda: sso_domain_add(
            principal=_principal(request),
            domain=request.POST.get("domain", ""),  # type: ignore[attr-defined]
        ),
        "The domain was added: publish its TXT record, then verify it.",
    )


@require_POST
@org_view(min_role=ADMIN)
def sso_domain_check(request: HttpRequest, domain_id: int) -> HttpResponse:
    return _act(
        request,
        lambda: sso_domain_verify(
            principal=_principal(request),
            domain_id=domain_id,  # type: ignore[attr-defined]
        ),
        "The domain is verified.",
    )


@require_POST
@org_view(min_role=ADMIN)
def sso_domain_delete(request: HttpRequest, domain_id: int) -> HttpResponse:
    return _act(
        request,
        lambda: sso_domain_remove(
            principal=_principal(request),
            domain_id=domain_id,  # type: ignore[attr-defined]
        ),
        "The domain was removed.",
    )


@require_POST
@org_view(min_role=ADMIN)
def sso_policy_save(request: HttpRequest) -> HttpResponse:
    required = request.POST.get("sso_required") == "on"
    return _act(
        request,
        lambda: sso_policy_set(
            principal=_principal(request),
            required=required,  # type: ignore[attr-defined]
        ),
        "Single sign-on is now required." if required else "Single sign-on is no longer required.",
    )


# --- the public start page -------------------------------------------------------------------------


def _next_url(request: HttpRequest) -> str:
    value = request.POST.get("next") or request.GET.get("next") or ""
    if value and url_has_allowed_host_and_scheme(value, {request.get_host()}, require_https=request.is_secure()):
        return value
    return ""


def sso_start(request: HttpRequest) -> HttpResponse:
    """GET: the address form; POST: the organization that verified the address's domain sends the person to
    its identity provider (allauth's provider redirect; back here at its callback, then to ``next``)."""
    next_url = _next_url(request)
    email = (request.POST.get("email") or request.GET.get("email") or "").strip()
    if request.user.is_authenticated and not email:
        email = request.user.email
    error = ""
    if request.method == "POST":
        organization = sso_domain_owner(email=email) if "\x00" not in email else None
        connection = sso_connection_of_org(tenant=organization) if organization is not None else None
        if connection is None:
            error = (
                "No organization has set up single sign-on for this address's domain: sign in with your "
                "password instead."
            )
        else:
            provider = connection.social_app.get_provider(request)
            return provider.redirect(request, "login", next_url=next_url or None)
    context = {"email": email, "next": next_url, "error": error}
    return render(request, "accounts/sso_start.html", context, status=400 if error else 200)
