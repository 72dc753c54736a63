"""Dashboard pages of organizations: the org switcher and the settings pages for members & roles,
teams and projects.

Everyone in the org (viewer and up) can read them; changes need the admin role. A POST by a lower
role is a 403 and changes nothing. Anticipated failures from the services (``ServiceError``) come back
as form errors with status 400, never a 500.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from accounts.access import access_filter, access_get
from accounts.models import Membership, Project, Team
from accounts.organizations.selectors import memberships_of_user
from accounts.organizations.services import (
    membership_add,
    membership_remove,
    membership_set_role,
    organization_set_auto_promote,
    project_create,
    project_repository_set,
    team_create,
    user_create,
)
from accounts.plans.catalogue import (
    FEATURE_INSTITUTIONAL_PROMOTION,
    FEATURE_TEAMS,
    minimum_plan_for,
    plan_get,
)
from accounts.views_base import ADMIN, OWNER, SESSION_ORG_KEY, errors_of, org_view, require_role, settings_context
from reasoningbank.errors import InvalidInput, ServiceError

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
        require_role(request, OWNER)
    try:
        with transaction.atomic():  # no stray account when the membership cannot be added
            user = user_create(email=email)
            membership_add(organization=principal.organization, user=user, role=role, actor=principal)
    except ServiceError as exc:
        return _members_page(request, status=400, errors=errors_of(exc), values={"email": email, "role": role})
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
        require_role(request, OWNER)  # only owners grant or take the owner role
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
        require_role(request, OWNER)
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
        require_role(request, ADMIN)
        values = {"name": request.POST.get("name", "").strip(), "slug": request.POST.get("slug", "").strip()}
        try:
            team = team_create(
                organization=org, slug=values["slug"] or slugify(values["name"]), name=values["name"], actor=principal
            )
        except ServiceError as exc:
            errors, status = errors_of(exc), 400
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
        require_role(request, ADMIN)
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
            errors, status = errors_of(exc), 400
        else:
            messages.success(request, f"Project “{project.name}” ({project.slug}) was created.")
            return redirect("settings-projects")
    return _projects_page(request, teams, status=status, errors=errors, values=values)


def _projects_page(
    request: HttpRequest, teams: list[Team], *, status: int = 200, errors: Any = None, values: Any = None
) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    org = principal.organization
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
        errors=errors or {},
        values=values or {},
    )
    return render(request, "accounts/settings_projects.html", context, status=status)


@require_POST
@org_view(min_role=ADMIN)
def project_repository(request: HttpRequest, project_id: int) -> HttpResponse:
    """Tie a project to its repository's remote, or untie it (docs/code-memory.md#projects-by-repository)."""
    principal = request.principal  # type: ignore[attr-defined]
    project = access_get(Project.objects.select_related("organization"), principal, pk=project_id)
    try:
        repository = request.POST.get("repository", "")
        project = project_repository_set(project=project, repository=repository, actor=principal)
    except ServiceError as exc:
        messages.error(request, f"{project.slug}: {exc.message}")
        return _projects_page(request, list(access_filter(Team, principal).order_by("slug")), status=exc.status)
    if project.repository:
        messages.success(request, f"Project {project.slug} is tied to {project.repository}.")
    else:
        messages.success(request, f"Project {project.slug} is tied to no repository.")
    return redirect("settings-projects")
