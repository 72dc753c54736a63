"""OAuth 2.1 pages and endpoints of the accounts app (docs/oauth.md; MCP 2026-07-28 "Authorization").

* ``ProtectedResourceMetadataView`` — RFC 9728 metadata of ``/mcp`` and ``/api/v1`` (what the 401
  challenge's ``resource_metadata`` points at).
* ``ServerMetadataView`` — RFC 8414 metadata of the authorization server (django-oauth-toolkit's).
* ``ConsentView`` — the authorization endpoint after allauth login: the user picks the org (one of
  theirs), optionally projects, and the scopes (never above their role); the library then issues
  the code (PKCE S256 only, ``iss`` in the response, the ``resource`` bound into the grant).
* ``RegistrationView`` — Dynamic Client Registration (RFC 7591) with this server's redirect-URI
  policy, limited per client address; clients that name themselves by a metadata URL need no
  registration (``oauth_cimd``).
* ``cors_open`` — the token, registration and revocation endpoints answer browser-based clients
  at any origin (the metadata views do so themselves).
* ``settings_connected_apps`` / ``connected_app_revoke`` — Settings → Connected apps.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.forms import AllowForm
from oauth2_provider.views import (
    AuthorizationView,
    DynamicClientRegistrationManagementView,
    DynamicClientRegistrationView,
    OAuthProtectedResourceMetadataView,
    OAuthServerMetadataView,
    TokenView,
)
from oauthlib.oauth2.rfc6749.errors import AccessDeniedError, CustomOAuth2Error

from accounts.access import access_filter, access_get, principal_for_membership
from accounts.mfa.selectors import mfa_consent_problem
from accounts.models import SCOPE_HELP, Membership, OAuthConnection, Project
from accounts.oauth.protocol import OAUTH_SCOPES, RESOURCE_PATHS, client_metadata_problem, mcp_resource, resource_known
from accounts.oauth.selectors import oauth_application, oauth_connections_of_org
from accounts.oauth.services import oauth_connection_grant, oauth_connection_revoke, oauth_scopes_for_role
from accounts.organizations.selectors import memberships_of_user
from accounts.sso.selectors import sso_domain_owner
from accounts.sso.sessions import sso_session_satisfies
from accounts.throttling import grant_failure, registration_throttled, request_client_address
from accounts.views_base import org_view, settings_context
from reasoningbank.errors import ServiceError
from reasoningbank.http_errors import oauth_error_body

# --- metadata --------------------------------------------------------------------------------------


class ProtectedResourceMetadataView(OAuthProtectedResourceMetadataView):
    """RFC 9728 Protected Resource Metadata for one of our resources (``resource_path`` kwarg)."""

    resource_path = "/mcp"

    def get_resource(self, request: HttpRequest) -> str:
        from accounts.oauth.protocol import resource_identifier

        return resource_identifier(self.resource_path)

    def get_scopes_supported(self) -> list[str]:
        return list(OAUTH_SCOPES)

    def get_resource_name(self) -> str:
        return "ReasoningBank MCP endpoint" if self.resource_path == "/mcp" else "ReasoningBank REST API"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().get(request, *args, **kwargs)
        response["Cache-Control"] = "public, max-age=300"
        return response


class ServerMetadataView(OAuthServerMetadataView):
    """RFC 8414 Authorization Server Metadata (the library's document: issuer, endpoints, S256 only,
    ``authorization_response_iss_parameter_supported``, ``client_id_metadata_document_supported``)."""


# --- consent ---------------------------------------------------------------------------------------


class ConsentForm(AllowForm):
    """The library's hidden authorization-request fields plus the user's choices."""


def _error(error: Any, redirect_uri: str) -> OAuthToolkitError:
    return OAuthToolkitError(error=error, redirect_uri=redirect_uri)


def _sso_detour(request: HttpRequest, next_url: str) -> HttpResponse:
    """Through the organization's identity provider first, then back to the same authorization request: an
    agent's grant follows the company's identity policy (docs/oauth.md, docs/identity.md#single-sign-on)."""
    query = urlencode({"next": next_url, "email": getattr(request.user, "email", "")})
    return redirect(f"{reverse('sso-start')}?{query}")


class ConsentView(AuthorizationView):
    """The authorization endpoint (GET: the consent page; POST: the decision)."""

    template_name = "accounts/oauth_consent.html"
    form_class = ConsentForm

    def _refuse(self, request: HttpRequest, error: str, description: str) -> HttpResponse:
        """An error sent back to the client's (validated) redirect URI, or shown when the client or
        its redirect URI is itself invalid."""
        try:
            _scopes, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as invalid:
            return self.error_response(invalid, application=None)
        refusal = CustomOAuth2Error(error=error, description=description, state=credentials.get("state"))
        return self.error_response(
            _error(refusal, credentials["redirect_uri"]), oauth_application(credentials["client_id"])
        )

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        method = request.GET.get("code_challenge_method")
        if request.GET.get("code_challenge") and method != "S256":
            return self._refuse(request, "invalid_request", "code_challenge_method must be S256")
        resources = request.GET.getlist("resource")
        if resources:
            unknown = [value for value in resources if resource_known(value) is None]
            if unknown:
                return self._refuse(
                    request, "invalid_target", f"this server does not serve the resource {unknown[0]!r}"
                )
            chosen = [resource_known(value) for value in resources]
        else:
            chosen = [mcp_resource()]  # RFC 8707 §2: the default resource, so every token is bound
        # a person whose domain's organization requires SSO, signed in some other way (a password, their
        # owner's break-glass): through the identity provider before the consent page
        owner = sso_domain_owner(email=getattr(request.user, "email", "") or "")
        if owner is not None and not sso_session_satisfies(request, owner):
            return _sso_detour(request, request.get_full_path())
        query = request.GET.copy()
        query.setlist("resource", list(dict.fromkeys(value for value in chosen if value)))
        request.GET = query  # type: ignore[assignment]
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        requested = [scope for scope in kwargs.get("scopes", []) if scope in OAUTH_SCOPES] or list(OAUTH_SCOPES)
        memberships = list(memberships_of_user(user=self.request.user))
        # an organization that requires MFA is offered only to a person who passed it in this session
        # (docs/identity.md#multi-factor-authentication); the others can still be chosen
        problems = {m.pk: mfa_consent_problem(request=self.request, organization=m.organization) for m in memberships}
        open_slugs = [m.organization.slug for m in memberships if not problems[m.pk]]
        chosen_slug = kwargs.get("chosen_org") or (open_slugs[0] if open_slugs else "")
        context.update(
            requested_scopes=[(scope, SCOPE_HELP.get(scope, "")) for scope in requested],
            orgs=[
                {
                    "membership": membership,
                    "slug": membership.organization.slug,
                    "allowed": oauth_scopes_for_role(membership.role),
                    "projects": list(access_filter(Project, membership.organization).order_by("slug")),
                    "mfa_problem": problems[membership.pk],
                }
                for membership in memberships
            ],
            mfa_blocked=bool(memberships) and not open_slugs,
            mfa_blocked_org=kwargs.get("mfa_blocked_org"),
            here=self.request.get_full_path(),
            chosen_org=chosen_slug,
            chosen_scopes=kwargs.get("chosen_scopes"),
            consent_error=kwargs.get("consent_error", ""),
            resources=(self.oauth2_data.get("resource") or kwargs.get("resource") or "").split(),
        )
        return context

    def render_to_response(self, context: dict[str, Any], **response_kwargs: Any) -> HttpResponse:
        # every organization of the person requires a second factor they have not passed: the page names
        # the fix, and it is a refusal (403), not a consent screen
        if context.get("mfa_blocked") and "status" not in response_kwargs and not context.get("error"):
            response_kwargs["status"] = 403
        return super().render_to_response(context, **response_kwargs)

    def form_valid(self, form: ConsentForm) -> HttpResponse:
        request = self.request
        data = form.cleaned_data
        application = oauth_application(data["client_id"])
        credentials: dict[str, Any] = {
            "client_id": data.get("client_id"),
            "redirect_uri": data.get("redirect_uri"),
            "response_type": data.get("response_type"),
            "state": data.get("state"),
        }
        for optional in ("code_challenge", "code_challenge_method"):
            if data.get(optional):
                credentials[optional] = data[optional]
        state = data.get("state")
        resources = [resource_known(value) for value in (data.get("resource") or "").split()]
        if not resources or None in resources:
            error = CustomOAuth2Error(error="invalid_target", description="unknown resource", state=state)
            return self.error_response(_error(error, credentials["redirect_uri"]), application)
        credentials["resource"] = resources
        if not data.get("allow"):
            denied = AccessDeniedError(description="the user denied the request", state=state)
            return self.error_response(_error(denied, credentials["redirect_uri"]), application)

        slug = request.POST.get("organization", "")
        membership = (
            memberships_of_user(user=request.user).filter(organization__slug=slug).first()
            if slug and "\x00" not in slug
            else None
        )
        if membership is None:
            denied = AccessDeniedError(description="you are not a member of that organization", state=state)
            return self.error_response(_error(denied, credentials["redirect_uri"]), application)
        if not sso_session_satisfies(request, membership.organization):
            # the chosen organization requires SSO and this session came another way: the same request
            # again after its identity provider signed the person in
            again: dict[str, Any] = {key: value for key, value in credentials.items() if value}
            again.update(scope=data.get("scope") or "", resource=(data.get("resource") or "").split())
            return _sso_detour(request, f"{reverse('oauth2_provider:authorize')}?{urlencode(again, doseq=True)}")
        problem = mfa_consent_problem(request=request, organization=membership.organization)
        if problem:
            # the page says how to pass the second factor and come back; nothing is granted meanwhile
            context = self.get_context_data(
                form=form,
                application=application,
                scopes=sorted(set((data.get("scope") or "").split())),
                mfa_blocked_org={"membership": membership, "mfa_problem": problem},
            )
            return self.render_to_response(context, status=403)

        requested = set((data.get("scope") or "").split())
        scopes = [scope for scope in request.POST.getlist("scopes") if scope in requested]
        wanted_projects = {value for value in request.POST.getlist(f"projects-{membership.organization.slug}") if value}
        try:
            with transaction.atomic():
                projects = list(
                    access_filter(Project, membership.organization).filter(
                        pk__in=[int(value) for value in wanted_projects if value.isdigit()]
                    )
                )
                if len(projects) != len(wanted_projects):
                    from reasoningbank.errors import InvalidInput

                    raise InvalidInput("choose projects of this organization", field="projects")
                connection = oauth_connection_grant(
                    membership=membership,
                    application=application,
                    scopes=scopes,
                    projects=projects,
                    actor=principal_for_membership(membership),
                )
                credentials["rb_connection_id"] = connection.pk
                uri, _headers, _body, _status = self.create_authorization_response(
                    request=request, scopes=" ".join(sorted(connection.scopes)), credentials=credentials, allow=True
                )
        except ServiceError as exc:
            context = self.get_context_data(
                form=form,
                application=application,
                scopes=sorted(requested),
                chosen_org=membership.organization.slug,
                chosen_scopes=scopes,
                consent_error=exc.message,
            )
            return self.render_to_response(context, status=400)
        except OAuthToolkitError as error:  # rolled back: no connection, no grant, no audit row
            return self.error_response(error, application)
        return self.redirect(uri, application)


# --- the token endpoint ----------------------------------------------------------------------------


TOKEN_BODY_MESSAGE = (
    "The token endpoint reads a form: send 'Content-Type: application/x-www-form-urlencoded' (RFC 6749 section 4.1.3)."
)
# the refusals that mean a credential was wrong (a code, refresh token, PKCE verifier or client id),
# as opposed to a malformed request: counted per address like failed bearer tokens
_GRANT_FAILURES = frozenset({"invalid_grant", "invalid_client"})


class JsonTokenView(TokenView):
    """The library's token endpoint; its errors raised from inside the validator (``invalid_target``)
    come back without a JSON content type, which strict clients refuse to parse. A refused grant
    counts towards the address's failed-grant limit (``accounts/throttling.py``): past it, a refusal
    is a 429; a good grant is served whatever the address did before."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.content_type not in ("application/x-www-form-urlencoded", "multipart/form-data"):
            # the library reads no other body (Django parses both form encodings) and would answer
            # "unsupported_grant_type", which sends a client looking in the wrong place
            refusal = JsonResponse(oauth_error_body("invalid_request", TOKEN_BODY_MESSAGE), status=400)
            refusal["Cache-Control"] = "no-store"
            return refusal
        response = super().post(request, *args, **kwargs)
        if response.get("Content-Type", "").startswith("text/html") and response.content[:1] == b"{":
            response["Content-Type"] = "application/json"
        response.setdefault("Cache-Control", "no-store")
        if response.status_code in (400, 401) and _oauth_error(response) in _GRANT_FAILURES:
            throttled = grant_failure(request_client_address(request))
            if throttled is not None:
                body = oauth_error_body("too_many_requests", throttled.message, code="throttled")
                limited = JsonResponse(body, status=429)
                limited["Retry-After"] = str(throttled.retry_after)
                limited["Cache-Control"] = "no-store"
                return limited
        return response


def _oauth_error(response: HttpResponse) -> str | None:
    """The RFC 6749 ``error`` of a JSON error answer, or None."""
    try:
        data = json.loads(response.content) if response.content[:1] == b"{" else None
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, str) else None


# --- dynamic client registration -------------------------------------------------------------------


def _metadata_refusal(request: HttpRequest) -> JsonResponse | None:
    """The registration body refused under this server's client policy, or None to let the library
    judge the rest (a body that is not a JSON object included)."""
    try:
        data = json.loads(request.body or b"null")
    except ValueError:  # RequestBodyGuardMiddleware has refused bodies too deep to parse
        return None
    if not isinstance(data, dict):
        return None
    problem = client_metadata_problem(data)
    return _registration_error(*problem) if problem else None


class RegistrationView(DynamicClientRegistrationView):
    """RFC 7591 registration, open to any client, for the authorization code grant only, with
    redirect URIs and web page URLs this server accepts (``accounts.oauth.client_metadata_problem``)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # counted before anything is read: registration is open to anyone, so without a limit one
        # address could fill the applications table (every attempt counts, valid or not)
        throttled = registration_throttled(request_client_address(request))
        if throttled is not None:
            response = _registration_error("too_many_requests", throttled.message, status=429)
            response["Retry-After"] = str(throttled.retry_after)
            return response
        return _metadata_refusal(request) or super().post(request, *args, **kwargs)


class RegistrationManagementView(DynamicClientRegistrationManagementView):
    """RFC 7592 client configuration: an update (PUT, with the registration access token) is held to
    the same policy as a registration."""

    def put(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # the policy is public (the open registration endpoint applies it to anyone), so a refusal
        # may come before the token is checked
        return _metadata_refusal(request) or super().put(request, *args, **kwargs)


def _registration_error(error: str, description: str, status: int = 400) -> JsonResponse:
    code = "throttled" if status == 429 else None
    return JsonResponse(oauth_error_body(error, description, code=code), status=status)


# --- one error shape --------------------------------------------------------------------------------

# status → (RFC 6749's ``error``, the shape's ``code``) for an error the library answered without a body
_STATUS_ERRORS = {
    401: ("invalid_client", "invalid_client"),
    404: ("not_found", "not_found"),
    405: ("invalid_request", "method_not_allowed"),
    429: ("too_many_requests", "throttled"),
}


def oauth_json_errors(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Every error answer of a client-facing OAuth endpoint in the one error shape
    (``reasoningbank/http_errors.py``): RFC 6749's ``error`` / ``error_description`` — what OAuth
    clients read, as the library writes them — and ``detail`` / ``code`` / ``errors``, as the REST API
    answers. An error the library answered without a JSON body (a 405, say) gets one."""

    @wraps(view)  # keeps the view's csrf_exempt
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if response.status_code < 400 or getattr(response, "streaming", False):
            return response
        try:
            data = json.loads(response.content) if response.content[:1] == b"{" else None
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("error"), str):
            if {"detail", "code", "errors"} <= data.keys():
                return response
            # the library's members (state, ...) as they are, the shape's three keys added
            body = {**oauth_error_body(data["error"], str(data.get("error_description") or data["error"])), **data}
        else:
            error, code = _STATUS_ERRORS.get(response.status_code, ("invalid_request", "invalid_request"))
            description = response.reason_phrase or error
            if response.status_code == 405 and response.get("Allow"):
                description = f"Method {request.method} is not allowed here (allowed: {response['Allow']})."
            body = oauth_error_body(error, description, code=code)
        shaped = JsonResponse(body, status=response.status_code)
        for header, value in response.items():
            if header.lower() not in ("content-type", "content-length"):
                shaped[header] = value
        return shaped

    return wrapped


def oauth_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Any other URL under ``/oauth/`` or ``/.well-known/``: a JSON 404 in the error shape rather than
    the HTML page (a client probing for ``openid-configuration`` reads why)."""
    return JsonResponse(oauth_error_body("not_found", f"No OAuth endpoint at {request.path!r}."), status=404)


# --- CORS for browser-based clients ----------------------------------------------------------------

CORS_ALLOW_HEADERS = "Authorization, Content-Type, MCP-Protocol-Version"
# what a script may read of the answer: the challenge of a 401, the wait of a 429
CORS_EXPOSE_HEADERS = "WWW-Authenticate, Retry-After"
CORS_MAX_AGE = "86400"


def cors_open(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Let an OAuth client that runs in a web page at another origin (a web-based MCP client or
    inspector) call this POST endpoint: a preflight is answered here, and every answer carries
    ``Access-Control-Allow-Origin: *``.

    Any origin, and never with credentials: the token, registration and revocation endpoints trust
    only what the request carries (client id, PKCE verifier, the token itself), never a cookie, so a
    page at another origin learns nothing it could not already send. The authorization endpoint is
    not opened: it runs on the signed-in session and is navigated to, never fetched."""

    @wraps(view)  # keeps the view's csrf_exempt
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method == "OPTIONS" and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in request.META:
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = "POST, OPTIONS"
            response["Access-Control-Allow-Headers"] = CORS_ALLOW_HEADERS
            response["Access-Control-Max-Age"] = CORS_MAX_AGE
        else:
            response = view(request, *args, **kwargs)
        response["Access-Control-Allow-Origin"] = "*"
        response["Access-Control-Expose-Headers"] = CORS_EXPOSE_HEADERS
        return response

    return wrapped


# --- Settings → Connected apps ---------------------------------------------------------------------


@org_view()
def settings_connected_apps(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    membership: Membership = request.membership  # type: ignore[attr-defined]
    context = settings_context(
        request,
        "apps",
        connections=oauth_connections_of_org(organization=principal.organization),
        can_admin=membership.has_role(Membership.ROLE_ADMIN),
        mcp_url=mcp_resource(),
        resource_paths=RESOURCE_PATHS,
    )
    return render(request, "accounts/settings_connected_apps.html", context)


@require_POST
@org_view()
def connected_app_revoke(request: HttpRequest, connection_id: int) -> HttpResponse:
    """Admins revoke any connected app of the org, members the ones they connected themselves; an id
    of another org is a 404."""
    principal = request.principal  # type: ignore[attr-defined]
    membership: Membership = request.membership  # type: ignore[attr-defined]
    connection = access_get(OAuthConnection.objects.select_related("application"), principal, pk=connection_id)
    if connection.user_id != request.user.pk and not membership.has_role(Membership.ROLE_ADMIN):
        raise PermissionDenied("only admins revoke apps other members connected")
    oauth_connection_revoke(connection=connection, actor=principal)
    name = connection.application.name or connection.application.client_id
    messages.success(request, f"{name} can no longer reach this organization: its access was revoked.")
    return redirect("settings-connected-apps")
