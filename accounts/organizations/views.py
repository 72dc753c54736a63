"""Dashboard pages of the accounts app: the org switcher and the settings pages.

Settings: members & roles, teams, projects, API tokens, plan & limits (LLM spend and budget:
``accounts.views_spend``). Everyone in the
org (viewer and up) can read them; changes need the admin role, plan changes the owner role. A
POST by a lower role is a 403 and changes nothing. Anticipated failures from the services
(``ServiceError``) come back as form errors with status 400, never a 500.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from accounts.access import access_filter, access_get, principal_for_token, reachable_projects
from accounts.decorators import SESSION_ORG_KEY, org_view
from accounts.models import DEFAULT_TOKEN_SCOPES, SCOPE_HELP, TOKEN_SCOPES, ApiToken, Membership, Project, Team
from accounts.oauth import mcp_resource
from accounts.plans import (
    FEATURE_CONSOLIDATION_MANUAL,
    FEATURE_CONSOLIDATION_SCHEDULED,
    FEATURE_INSTITUTIONAL_PROMOTION,
    FEATURE_TEAMS,
    PLAN_ORDER,
    PLANS,
    minimum_plan_for,
    plan_get,
    usage_count,
)
from accounts.selectors import memberships_of_user, tokens_of_org
from accounts.services import (
    membership_add,
    membership_remove,
    membership_set_role,
    organization_set_auto_promote,
    organization_set_plan,
    project_create,
    team_create,
    token_create,
    token_revoke,
    user_create,
)
from reasoningbank.errors import InvalidInput, ServiceError

ADMIN = Membership.ROLE_ADMIN
OWNER = Membership.ROLE_OWNER

SECTIONS = [
    ("members", "Members & roles", "/settings/"),
    ("teams", "Teams", "/settings/teams/"),
    ("projects", "Projects", "/settings/projects/"),
    ("tokens", "API tokens", "/settings/tokens/"),
    ("apps", "Connected apps", "/settings/connected-apps/"),
    ("trust", "Trust", "/settings/trust/"),
    ("webhooks", "Webhooks", "/settings/webhooks/"),
    ("usage", "LLM spend", "/settings/usage/"),
    ("plan", "Plan & limits", "/settings/plan/"),
]
ADMIN_SECTIONS = {"webhooks"}

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


# --- helpers -------------------------------------------------------------------------------------


def _require_role(request: HttpRequest, role: str) -> None:
    if not request.membership.has_role(role):  # type: ignore[attr-defined]
        raise PermissionDenied(f"this change needs the {role} role or above")


def settings_context(request: HttpRequest, section: str, **extra: Any) -> dict[str, Any]:
    membership: Membership = request.membership  # type: ignore[attr-defined]
    return {
        "nav": "settings",
        "section": section,
        # admin-only sections (webhooks) are not offered to the roles that would get a 403 there
        "sections": [s for s in SECTIONS if s[0] not in ADMIN_SECTIONS or membership.has_role(ADMIN)],
        "org": membership.organization,
        "can_admin": membership.has_role(ADMIN),
        "is_owner": membership.has_role(OWNER),
        "errors": {},
        "values": {},
        **extra,
    }


def _errors_of(exc: ServiceError) -> dict[str, str]:
    return {exc.field or "form": exc.message}


# --- org switcher --------------------------------------------------------------------------------


@login_required
@require_POST
def switch_org(request: HttpRequest) -> HttpResponse:
    """Act in another org the user belongs to; an org they do not belong to is a 404."""
    slug = request.POST.get("org", "")
    membership = (
        memberships_of_user(user=request.user).filter(organization__slug=slug).first()
        if slug and "\x00" not in slug
        else None
    )
    if membership is None:
        raise Http404("Not found.")
    request.session[SESSION_ORG_KEY] = membership.organization.slug
    target = request.POST.get("next") or request.GET.get("next") or "/"
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = "/"
    return redirect(target)


# --- members & roles -----------------------------------------------------------------------------


def _members_page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    queryset = access_filter(Membership, request.principal).select_related("user")  # type: ignore[attr-defined]
    rows = sorted(queryset, key=lambda m: (-Membership.ROLE_RANK[m.role], (m.user.email or "").lower()))
    org = request.membership.organization  # type: ignore[attr-defined]
    context = settings_context(
        request,
        "members",
        members=rows,
        role_choices=Membership.ROLE_CHOICES,
        member_limit=org.limit("members"),
        **extra,
    )
    return render(request, "accounts/settings_members.html", context, status=status)


@org_view()
def settings_members(request: HttpRequest) -> HttpResponse:
    return _members_page(request)


@require_POST
@org_view(min_role=ADMIN)
def member_invite(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    email = request.POST.get("email", "").strip()
    role = request.POST.get("role", Membership.ROLE_MEMBER)
    if role == OWNER:
        _require_role(request, OWNER)
    try:
        with transaction.atomic():  # no stray account when the membership cannot be added
            user = user_create(email=email)
            membership_add(organization=principal.organization, user=user, role=role, actor=principal)
    except ServiceError as exc:
        return _members_page(request, status=400, errors=_errors_of(exc), values={"email": email, "role": role})
    messages.success(
        request,
        f"{user.email} was added as {role}. If they have no password yet, they set one with "
        "“Forgot password” on the sign-in page.",
    )
    return redirect("settings-members")


@require_POST
@org_view(min_role=ADMIN)
def member_role(request: HttpRequest, membership_id: int) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    membership = access_get(Membership.objects.select_related("user", "organization"), principal, pk=membership_id)
    role = request.POST.get("role", "")
    if OWNER in (role, membership.role):
        _require_role(request, OWNER)  # only owners grant or take the owner role
    try:
        membership_set_role(membership=membership, role=role, actor=principal)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _members_page(request, status=400)
    messages.success(request, f"{membership.user.email} is now {membership.get_role_display().lower()}.")
    return redirect("settings-members")


@require_POST
@org_view(min_role=ADMIN)
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    membership = access_get(Membership.objects.select_related("user", "organization"), principal, pk=membership_id)
    if membership.role == OWNER:
        _require_role(request, OWNER)
    email = membership.user.email
    try:
        membership_remove(membership=membership, actor=principal)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return _members_page(request, status=400)
    messages.success(request, f"{email} was removed from the organization.")
    return redirect("settings-members")


# --- teams ---------------------------------------------------------------------------------------


@org_view()
def settings_teams(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    org = principal.organization
    errors: dict[str, str] = {}
    values: dict[str, str] = {}
    status = 200
    if request.method == "POST":
        _require_role(request, ADMIN)
        values = {"name": request.POST.get("name", "").strip(), "slug": request.POST.get("slug", "").strip()}
        try:
            team = team_create(
                organization=org, slug=values["slug"] or slugify(values["name"]), name=values["name"], actor=principal
            )
        except ServiceError as exc:
            errors, status = _errors_of(exc), 400
        else:
            messages.success(request, f"Team “{team.name}” was created.")
            return redirect("settings-teams")
    teams = access_filter(Team, principal).annotate(project_count=Count("projects")).order_by("slug")
    context = settings_context(
        request,
        "teams",
        teams=teams,
        teams_enabled=org.has_feature(FEATURE_TEAMS),
        teams_plan=plan_get(minimum_plan_for(FEATURE_TEAMS) or "teams").label,
        promotion_enabled=org.has_feature(FEATURE_INSTITUTIONAL_PROMOTION),
        promotion_min_projects=settings.PROMOTION_MIN_PROJECTS,
        errors=errors,
        values=values,
    )
    return render(request, "accounts/settings_teams.html", context, status=status)


@org_view(min_role=ADMIN)
@require_POST
def settings_auto_promote(request: HttpRequest) -> HttpResponse:
    """The Teams page's "accept promotion proposals automatically" switch (org admins;
    docs/consolidation.md#institutional-promotion)."""
    principal = request.principal  # type: ignore[attr-defined]
    enabled = request.POST.get("auto_promote_institutional") == "on"
    try:
        organization_set_auto_promote(organization=principal.organization, enabled=enabled, actor=principal)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            "Promotion proposals are now accepted automatically."
            if enabled
            else "Promotion proposals now wait in the review queue for a moderator.",
        )
    return redirect("settings-teams")


# --- projects ------------------------------------------------------------------------------------


@org_view()
def settings_projects(request: HttpRequest) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    org = principal.organization
    errors: dict[str, str] = {}
    values: dict[str, str] = {}
    status = 200
    teams = list(access_filter(Team, principal).order_by("slug"))
    if request.method == "POST":
        _require_role(request, ADMIN)
        values = {
            "name": request.POST.get("name", "").strip(),
            "slug": request.POST.get("slug", "").strip(),
            "team": request.POST.get("team", "").strip(),
        }
        try:
            team = None
            if values["team"]:
                team = next((t for t in teams if str(t.pk) == values["team"]), None)
                if team is None:
                    raise InvalidInput("choose a team of this organization", field="team")
            project = project_create(
                organization=org,
                slug=values["slug"] or slugify(values["name"]),
                name=values["name"],
                team=team,
                actor=principal,
            )
        except ServiceError as exc:
            errors, status = _errors_of(exc), 400
        else:
            messages.success(request, f"Project “{project.name}” ({project.slug}) was created.")
            return redirect("settings-projects")
    projects = (
        access_filter(Project, principal)
        .select_related("team")
        .annotate(memory_count=Count("memories", filter=Q(memories__state="active")))
        .order_by("slug")
    )
    limit = org.limit("projects")
    used = len(projects)
    context = settings_context(
        request,
        "projects",
        projects=projects,
        teams=teams,
        project_limit=limit,
        projects_used=used,
        at_limit=limit is not None and used >= limit,
        errors=errors,
        values=values,
    )
    return render(request, "accounts/settings_projects.html", context, status=status)


# --- API tokens ----------------------------------------------------------------------------------


def _parse_expiry(value: str) -> datetime | None:
    """A date from the form → the end of that day (the token works through it)."""
    if not value:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise InvalidInput("expiry must be a date (YYYY-MM-DD)", field="expires") from None
    return timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min))


# the one name of the token's environment variable, which every plugin, hook and SDK reads
# (docs/connecting-agents.md)
TOKEN_ENV = "REASONINGBANK_TOKEN"
# the Claude Code plugin's install (docs/claude-code.md#install): its marketplace is a clone of this repository
PLUGIN_COMMANDS = "/plugin marketplace add /path/to/reasoningbank\n/plugin install reasoningbank@reasoningbank"


def mcp_snippets(raw: str) -> dict[str, str]:
    """Ready-to-paste client configuration for a new token: the Claude Code plugin first (it captures
    and recalls on its own, docs/claude-code.md), then each other client's MCP entry
    (docs/connecting-agents.md#other-agents)."""
    site = settings.SITE_URL.rstrip("/")
    url = site + "/mcp"
    header = {"Authorization": f"Bearer {raw}"}
    config = {"mcpServers": {"reasoningbank": {"type": "http", "url": url, "headers": header}}}
    env_header = {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}
    cursor_header = {"Authorization": f"Bearer ${{env:{TOKEN_ENV}}}"}
    return {
        "mcp_url": url,
        "plugin_env": f"export REASONINGBANK_URL={site}\nexport {TOKEN_ENV}={raw}",
        "plugin_commands": PLUGIN_COMMANDS,
        "claude_command": f'claude mcp add --transport http reasoningbank {url} --header "Authorization: Bearer {raw}"',
        "mcp_json": json.dumps(config, indent=2),
        # Codex reads the token from the environment by name: the file never holds it
        "codex_toml": (
            f"export {TOKEN_ENV}={raw}\n\n# ~/.codex/config.toml\n[mcp_servers.reasoningbank]\n"
            f'url = "{url}"\nbearer_token_env_var = "{TOKEN_ENV}"'
        ),
        # Cursor and Gemini CLI fill the token in from the environment (the plugin's export above): one
        # variable name for every client, and a config file that never holds the secret
        "cursor_json": json.dumps({"mcpServers": {"reasoningbank": {"url": url, "headers": cursor_header}}}, indent=2),
        "gemini_json": json.dumps({"mcpServers": {"reasoningbank": {"httpUrl": url, "headers": env_header}}}, indent=2),
    }


def oauth_command() -> str:
    """``claude mcp add`` without a header: the client signs in through the browser (OAuth) instead
    of holding a pasted token. The URL is the MCP resource OAuth tokens are bound to."""
    return f"claude mcp add --transport http reasoningbank {mcp_resource()}"


def _tokens_page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    projects = list(access_filter(Project, principal).order_by("slug"))
    extra.setdefault("values", {"scopes": list(DEFAULT_TOKEN_SCOPES)})
    context = settings_context(
        request,
        "tokens",
        tokens=tokens_of_org(organization=principal.organization),
        projects=projects,
        scope_choices=[(scope, SCOPE_HELP.get(scope, "")) for scope in TOKEN_SCOPES],
        now=timezone.now(),
        min_expiry=(timezone.localdate() + timedelta(days=1)).isoformat(),
        oauth_command=oauth_command(),
        **extra,
    )
    response = render(request, "accounts/settings_tokens.html", context, status=status)
    if "raw_token" in extra:
        response["Cache-Control"] = "no-store"  # the raw token is shown once and never cached
    return response


@org_view()
def settings_tokens(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _tokens_page(request)
    _require_role(request, ADMIN)
    principal = request.principal  # type: ignore[attr-defined]
    values: dict[str, Any] = {
        "label": request.POST.get("label", "").strip(),
        "scopes": request.POST.getlist("scopes"),
        "projects": request.POST.getlist("projects"),
        "expires": request.POST.get("expires", "").strip(),
    }
    try:
        wanted = {value for value in values["projects"] if value}
        projects = [p for p in access_filter(Project, principal) if str(p.pk) in wanted]
        if len(projects) != len(wanted):
            raise InvalidInput("choose projects of this organization", field="projects")
        token, raw = token_create(
            organization=principal.organization,
            label=values["label"],
            scopes=values["scopes"],
            projects=projects,
            expires_at=_parse_expiry(values["expires"]),
            created_by=request.user,
            actor=principal,
        )
    except ServiceError as exc:
        return _tokens_page(request, status=400, errors=_errors_of(exc), values=values)
    # the projects an agent with this token writes to: one is used without naming it, several need
    # `project`, none means the agent's first memory_record would fail (create a project first)
    reached = list(reachable_projects(principal_for_token(token)).order_by("slug").values_list("slug", flat=True))
    shown: dict[str, Any] = {"created": token, "raw_token": raw, "token_projects": reached, **mcp_snippets(raw)}
    return _tokens_page(request, **shown)


@require_POST
@org_view(min_role=ADMIN)
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    token = access_get(ApiToken, principal, pk=token_id)
    token_revoke(token=token, actor=principal)
    messages.success(request, f"Token {token.prefix}… ({token.label}) was revoked.")
    return redirect("settings-tokens")


# --- plan & limits -------------------------------------------------------------------------------


@org_view()
def settings_plan(request: HttpRequest) -> HttpResponse:
    from reasoningbank.ai.metered import llm_usage_this_month

    principal = request.principal  # type: ignore[attr-defined]
    org = principal.organization
    errors: dict[str, str] = {}
    status = 200
    if request.method == "POST":
        _require_role(request, OWNER)
        wanted = request.POST.get("plan", "")
        try:
            if wanted == org.plan:
                raise InvalidInput(f"the organization is already on the {org.get_plan_display()} plan", field="plan")
            previous = org.get_plan_display()
            organization_set_plan(organization=org, plan=wanted, actor=principal)
        except ServiceError as exc:
            errors, status = _errors_of(exc), 400
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
