"""Writes for tenancy: organizations, teams, projects, memberships and the users behind them (signup,
passwords, invitations)."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from accounts.access import Principal
from accounts.audit import audit_record
from accounts.models import SCOPE_ADMIN, Membership, Organization, Project, Team
from accounts.plans.catalogue import FEATURE_TEAMS, plan_get, plan_required
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, LimitExceeded, Rejected
from reasoningbank.repositories import REPOSITORY_MAX, repository_normalise

# --- organizations, teams, projects -------------------------------------------------------------


def _slug_validate(slug: str, *, field: str = "slug") -> str:
    cleaned = (slug or "").strip().lower()
    if not cleaned or slugify(cleaned) != cleaned or len(cleaned) > 50:
        raise InvalidInput(
            f"{field} must be 1-50 characters of lowercase letters, digits, '-' or '_' (got {slug!r})",
            field=field,
        )
    return cleaned


@transaction.atomic
def organization_create(
    *, slug: str, name: str = "", plan: str | None = None, owner: Any = None, actor: Principal | None = None
) -> Organization:
    """A new organization, on ``plan`` or, left out, on ``DEFAULT_PLAN`` (every way an org is made goes
    through here, so they all start on the same plan)."""
    slug = _slug_validate(slug)
    plan = plan or settings.DEFAULT_PLAN
    try:
        plan_get(plan)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="plan") from None
    if Organization.objects.filter(slug=slug).exists():
        raise Conflict(f"an organization with slug {slug!r} already exists", field="slug")
    org = Organization.objects.create(slug=slug, name=(name or slug).strip()[:200], plan=plan)
    if owner is not None:
        Membership.objects.create(user=owner, organization=org, role=Membership.ROLE_OWNER)
    audit_record(organization=org, actor=actor, verb="organization.create", target=org, data={"plan": plan})
    return org


@transaction.atomic
def organization_set_auto_promote(*, organization: Organization, enabled: Any, actor: Principal | None) -> Organization:
    """Whether institutional promotion proposals are accepted at once instead of waiting in the review
    queue (docs/consolidation.md#institutional-promotion). Org admins decide (the ``admin`` scope);
    audited."""
    if not isinstance(enabled, bool):
        raise InvalidInput("enabled must be true or false", field="auto_promote_institutional")
    if actor is not None and not actor.has_scope(SCOPE_ADMIN):
        raise Forbidden("changing automatic promotion needs the admin role")
    organization = Organization.objects.select_for_update().get(pk=organization.pk)
    if organization.auto_promote_institutional == enabled:
        return organization
    organization.auto_promote_institutional = enabled
    organization.save(update_fields=["auto_promote_institutional"])
    audit_record(
        organization=organization, actor=actor, verb="organization.auto_promote", target=organization,
        data={"enabled": enabled},
    )
    return organization


@transaction.atomic
def team_create(*, organization: Organization, slug: str, name: str = "", actor: Principal | None) -> Team:
    slug = _slug_validate(slug)
    if not organization.has_feature(FEATURE_TEAMS):
        raise plan_required(organization, FEATURE_TEAMS, "a team")
    if Team.objects.filter(organization=organization, slug=slug).exists():
        raise Conflict(f"a team with slug {slug!r} already exists in this organization", field="slug")
    team = Team.objects.create(organization=organization, slug=slug, name=(name or slug)[:200])
    audit_record(organization=organization, actor=actor, verb="team.create", target=team)
    return team


@transaction.atomic
def project_create(
    *, organization: Organization, slug: str, name: str = "", team: Team | None = None, actor: Principal | None
) -> Project:
    slug = _slug_validate(slug)
    if team is not None and team.organization_id != organization.id:
        raise InvalidInput("team does not belong to this organization", field="team")
    limit = organization.limit("projects")
    # lock the org row so two concurrent creates cannot both slip under the limit
    Organization.objects.select_for_update().filter(pk=organization.pk).first()
    if limit is not None and Project.objects.filter(organization=organization).count() >= limit:
        raise LimitExceeded(
            f"the {organization.plan} plan allows {limit} projects; upgrade to add more", field="slug"
        )
    if Project.objects.filter(organization=organization, slug=slug).exists():
        raise Conflict(f"a project with slug {slug!r} already exists in this organization", field="slug")
    project = Project.objects.create(organization=organization, slug=slug, name=(name or slug)[:200], team=team)
    audit_record(organization=organization, actor=actor, verb="project.create", target=project,
                 data={"team": team.slug if team else None})
    return project


def project_repository_set(*, project: Project, repository: Any, actor: Principal | None) -> Project:
    """Tie ``project`` to a repository's remote (any spelling, stored normalised:
    docs/code-memory.md#projects-by-repository), or untie it with ``""``. A remote is tied to at most one
    project of an organization: another's is a 409 naming it."""
    if not isinstance(repository, str) or "\x00" in repository or len(repository) > 2 * REPOSITORY_MAX:
        raise InvalidInput("repository must be a git remote, at most 600 characters", field="repository")
    normalised = repository_normalise(repository) if repository.strip() else ""
    if repository.strip() and not normalised:  # a string of the right shape that names no remote: a 422
        raise Rejected(
            f"repository {repository.strip()[:100]!r} is not a git remote: give the remote's URL "
            "(git@github.com:acme/api.git, https://github.com/acme/api) or host/owner/name (github.com/acme/api)",
            field="repository",
            code="rejected_repository",
        )
    if normalised == project.repository:
        return project
    taken = (
        Project.objects.filter(organization_id=project.organization_id, repository=normalised)
        .exclude(pk=project.pk)
        .values_list("slug", flat=True)
        .first()
        if normalised
        else None
    )
    if taken is not None:
        raise Conflict(
            f"repository {normalised} is already tied to project {taken!r}: untie it there first", field="repository"
        )
    before = project.repository
    try:
        with transaction.atomic():
            Project.objects.filter(pk=project.pk).update(repository=normalised)
    except IntegrityError:  # tied elsewhere between the check and the write
        raise Conflict(f"repository {normalised} is already tied to another project", field="repository") from None
    project.repository = normalised
    audit_record(
        organization=project.organization, actor=actor, verb="project.repository", target=project,
        data={"before": before, "after": normalised},
    )  # fmt: skip
    return project


# --- memberships ---------------------------------------------------------------------------------


@transaction.atomic
def membership_add(
    *, organization: Organization, user: Any, role: str, actor: Principal | None
) -> Membership:
    if role not in Membership.ROLE_RANK:
        raise InvalidInput(f"role must be one of {', '.join(Membership.ROLE_RANK)}", field="role")
    if Membership.objects.filter(organization=organization, user=user).exists():
        raise Conflict("this user is already a member", field="email")
    limit = organization.limit("members")
    # deactivated members (docs/identity.md#provisioning-and-departure) hold no seat
    active = Membership.objects.filter(organization=organization, deactivated_at__isnull=True)
    if limit is not None and active.count() >= limit:
        raise LimitExceeded(f"the {organization.plan} plan allows {limit} members", field="email")
    membership = Membership.objects.create(organization=organization, user=user, role=role)
    audit_record(organization=organization, actor=actor, verb="membership.add", target=membership,
                 data={"user": user.email, "role": role})
    return membership


@transaction.atomic
def membership_set_role(*, membership: Membership, role: str, actor: Principal | None) -> Membership:
    if role not in Membership.ROLE_RANK:
        raise InvalidInput(f"role must be one of {', '.join(Membership.ROLE_RANK)}", field="role")
    if membership.role == Membership.ROLE_OWNER and role != Membership.ROLE_OWNER:
        _ensure_another_owner(membership)
    previous = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    audit_record(organization=membership.organization, actor=actor, verb="membership.role_change",
                 target=membership, data={"from": previous, "to": role})
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership, actor: Principal | None) -> None:
    if membership.role == Membership.ROLE_OWNER:
        _ensure_another_owner(membership)
    audit_record(organization=membership.organization, actor=actor, verb="membership.remove",
                 target=membership, data={"user": membership.user.email})
    membership.delete()


def _ensure_another_owner(membership: Membership) -> None:
    # a deactivated owner cannot act (accounts/departures/services.py), so does not count
    others = Membership.objects.filter(
        organization_id=membership.organization_id, role=Membership.ROLE_OWNER, deactivated_at__isnull=True
    ).exclude(pk=membership.pk)
    if not others.exists():
        raise Forbidden("an organization must keep at least one owner")


FIRST_PROJECT_SLUG = "default"


def user_signup_provision(*, user: Any) -> Organization:
    """A new user gets their own org on ``DEFAULT_PLAN``, as owner, with a first project ``default``
    (called on allauth signup): the connection snippet they copy next then works on the agent's
    first write, with no project to create or name."""
    base = slugify((user.email or user.get_username()).split("@")[0])[:40] or "org"
    slug = base
    for _ in range(20):
        if not Organization.objects.filter(slug=slug).exists():
            break
        slug = f"{base}-{secrets.token_hex(3)}"
    organization = organization_create(slug=slug, name=f"{user.email or slug}'s organization", owner=user)
    project_create(organization=organization, slug=FIRST_PROJECT_SLUG, name="Default project", team=None, actor=None)
    return organization


def user_password_set(*, user: Any, password: str) -> None:
    """Give ``user`` this password, checked by the configured validators (AUTH_PASSWORD_VALIDATORS)."""
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise InvalidInput("the password is not accepted: " + " ".join(exc.messages), field="password") from None
    user.set_password(password)
    user.save(update_fields=["password"])


def user_create(*, email: str, password: str | None = None) -> Any:
    """A user account (for commands and invitations); allauth handles self-service signup."""
    User = get_user_model()
    email = (email or "").strip().lower()
    if "@" not in email:
        raise InvalidInput("a valid email address is required", field="email")
    existing = User.objects.filter(email__iexact=email).first()
    if existing is not None:
        return existing
    try:
        user = User.objects.create_user(username=email[:150], email=email, password=password)
    except IntegrityError:
        raise Conflict("a user with this email already exists", field="email") from None
    if password is None:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    from allauth.account.models import EmailAddress

    EmailAddress.objects.get_or_create(user=user, email=email, defaults={"primary": True, "verified": False})
    return user
