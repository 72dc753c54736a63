"""The writes SCIM makes (docs/identity.md#provisioning-and-departure): members and teams of the token's
organization, created, replaced (PUT and PATCH both end here, PATCH applied to the current resource
first) and deactivated. Each takes the SCIM principal and writes its audit row; a deactivation is the
one-step departure of ``accounts/departures/services.py``.

What the identity provider may change is what belongs to this organization: the membership's
``externalId`` and ``active``, the teams. The person's name is their user account's, shared with every
other organization they belong to, so it is written only while they belong to this organization alone;
``userName`` (their e-mail address, the account's sign-in) is not changed by SCIM at all."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify
from scim2_models import Group, User

from accounts.access import Principal
from accounts.audit import audit_record
from accounts.departures.services import member_deactivate, member_reactivate
from accounts.models import ApiTokenTeam, Membership, OAuthConnectionTeam, Organization, Team, TeamMember
from accounts.organizations.services import membership_add, team_create, user_create
from reasoningbank.errors import Conflict, InvalidInput

EXTERNAL_ID_MAX = 200
NAME_MAX = 150  # Django's first_name / last_name
REASON_DEPROVISIONED = "deprovisioned by the identity provider (SCIM)"


def _email_of(resource: User) -> str:
    email = (resource.user_name or "").strip().lower()
    if "@" not in email or len(email) > 254 or any(ch.isspace() for ch in email):
        raise InvalidInput("userName must be the person's e-mail address", field="userName")
    return email


def _external_id_of(resource: User | Group) -> str:
    value = (resource.external_id or "").strip()
    if len(value) > EXTERNAL_ID_MAX:
        raise InvalidInput(f"externalId is at most {EXTERNAL_ID_MAX} characters", field="externalId")
    return value


def _names_apply(membership: Membership, resource: User) -> list[str]:
    """The person's names from the resource, when this org is the only one they belong to."""
    user = membership.user
    if Membership.objects.filter(user=user).exclude(organization_id=membership.organization_id).exists():
        return []
    given = ((resource.name.given_name if resource.name else None) or "").strip()[:NAME_MAX]
    family = ((resource.name.family_name if resource.name else None) or "").strip()[:NAME_MAX]
    changed = [f for f, v in (("first_name", given), ("last_name", family)) if getattr(user, f) != v]
    for field in changed:
        setattr(user, field, given if field == "first_name" else family)
    if changed:
        user.save(update_fields=changed)
    return changed


@transaction.atomic
def scim_user_create(*, organization: Organization, actor: Principal, resource: User) -> tuple[Membership, bool]:
    """Provision a person: their account (reused when they already have one), their membership as a
    member. A person deactivated here before is reactivated instead (an identity provider that deleted
    and provisions them again). Returns the membership and whether it is new."""
    email = _email_of(resource)
    external_id = _external_id_of(resource)
    existing = (
        Membership.objects.select_related("user").filter(organization=organization, user__email__iexact=email).first()
    )
    if existing is not None and existing.is_active:
        raise Conflict(f"{email} is already a member of this organization", field="userName", code="uniqueness")
    if existing is None:
        user = user_create(email=email)
        membership = membership_add(organization=organization, user=user, role=Membership.ROLE_MEMBER, actor=actor)
        created = True
    else:
        membership, created = existing, False
    membership.scim_external_id = external_id
    membership.updated_at = timezone.now()
    membership.save(update_fields=["scim_external_id", "updated_at"])
    _names_apply(membership, resource)
    audit_record(
        organization=organization, actor=actor, verb="scim.user_create", target=membership,
        data={"user": email, "external_id": external_id, "reprovisioned": not created},
    )  # fmt: skip
    if resource.active is False:
        member_deactivate(organization=organization, user=membership.user, actor=actor, reason=REASON_DEPROVISIONED)
    elif not membership.is_active:
        member_reactivate(organization=organization, user=membership.user, actor=actor)
    membership.refresh_from_db()
    return membership, created


@transaction.atomic
def scim_user_apply(*, membership: Membership, actor: Principal, resource: User) -> Membership:
    """Make the member what ``resource`` says (a PUT's body, or the current resource after a PATCH)."""
    email = _email_of(resource)
    if email != (membership.user.email or "").lower():
        raise InvalidInput(
            "userName cannot be changed over SCIM: it is the person's sign-in address; provision the new address "
            "as a new user and deactivate this one",
            field="userName",
            code="mutability",
        )
    external_id = _external_id_of(resource)
    changed = _names_apply(membership, resource)
    if external_id != membership.scim_external_id:
        membership.scim_external_id = external_id
        changed.append("externalId")
    if changed:
        membership.updated_at = timezone.now()
        membership.save(update_fields=["scim_external_id", "updated_at"])
        audit_record(
            organization=membership.organization, actor=actor, verb="scim.user_update", target=membership,
            data={"user": email, "changed": changed},
        )  # fmt: skip
    organization, user = membership.organization, membership.user
    if resource.active is False and membership.is_active:
        member_deactivate(organization=organization, user=user, actor=actor, reason=REASON_DEPROVISIONED)
    elif resource.active is True and not membership.is_active:
        member_reactivate(organization=organization, user=user, actor=actor)
    membership.refresh_from_db()
    return membership


def scim_user_delete(*, membership: Membership, actor: Principal) -> None:
    """SCIM's DELETE is a departure: the membership is deactivated, never removed, so what the person
    wrote stays attributed."""
    member_deactivate(
        organization=membership.organization, user=membership.user, actor=actor, reason=REASON_DEPROVISIONED
    )


# --- groups (teams) ----------------------------------------------------------------------------


def _display_name_of(resource: Group) -> str:
    name = (resource.display_name or "").strip()
    if not name or len(name) > 200:
        raise InvalidInput("displayName is required (1-200 characters)", field="displayName")
    return name


def _members_of(organization: Organization, resource: Group) -> list[Membership]:
    """The memberships a group's ``members`` name, all of this org: an id that is not one of its
    members is refused, in the same words whether it exists elsewhere or nowhere."""
    wanted: list[int] = []
    for member in resource.members or []:
        value = str(member.value or "").strip()
        if not value.isdigit() or len(value) > 18:
            raise InvalidInput(f"members: {value[:40]!r} is not the id of a user of this organization", field="members")
        wanted.append(int(value))
    found = {m.pk: m for m in Membership.objects.filter(organization=organization, pk__in=wanted)}
    missing = [str(pk) for pk in wanted if pk not in found]
    if missing:
        raise InvalidInput(
            f"members: {', '.join(missing[:5])} is not the id of a user of this organization", field="members"
        )
    return list(found.values())


def _members_set(team: Team, members: list[Membership]) -> dict[str, list[str]]:
    current = set(TeamMember.objects.filter(team=team).values_list("membership_id", flat=True))
    wanted = {m.pk for m in members}
    TeamMember.objects.filter(team=team, membership_id__in=current - wanted).delete()
    TeamMember.objects.bulk_create(
        [TeamMember(team=team, membership_id=pk, organization_id=team.organization_id) for pk in wanted - current]
    )
    return {"added": sorted(str(pk) for pk in wanted - current), "removed": sorted(str(pk) for pk in current - wanted)}


def _team_slug(organization: Organization, name: str) -> str:
    slug = slugify(name)[:50].strip("-") or "team"
    if Team.objects.filter(organization=organization, slug=slug).exists():
        raise Conflict(
            f"a team named {name!r} already exists in this organization", field="displayName", code="uniqueness"
        )
    return slug


@transaction.atomic
def scim_group_create(*, organization: Organization, actor: Principal, resource: Group) -> Team:
    name = _display_name_of(resource)
    members = _members_of(organization, resource)
    team = team_create(organization=organization, slug=_team_slug(organization, name), name=name, actor=actor)
    change = _members_set(team, members)
    audit_record(
        organization=organization, actor=actor, verb="scim.group_create", target=team,
        data={"name": name, "members": change["added"]},
    )  # fmt: skip
    return team


@transaction.atomic
def scim_group_apply(*, team: Team, actor: Principal, resource: Group) -> Team:
    """Make the team what ``resource`` says: its name and its members (a PUT, or a PATCH applied)."""
    name = _display_name_of(resource)
    members = _members_of(team.organization, resource)
    data: dict[str, Any] = {}
    if name != team.name:
        data["name"] = {"from": team.name, "to": name}
        team.name = name
        team.save(update_fields=["name"])
    change = _members_set(team, members)
    if change["added"] or change["removed"]:
        data["members"] = change
    if data:
        audit_record(organization=team.organization, actor=actor, verb="scim.group_update", target=team, data=data)
    return team


@transaction.atomic
def scim_group_delete(*, team: Team, actor: Principal) -> None:
    """Delete a team the identity provider removed: its member rows go; a team that still holds
    projects is kept (a 409: move its projects first), since projects are not the IdP's to remove."""
    if team.projects.exists():
        raise Conflict(
            f"team {team.name!r} holds projects: move them to another team on the dashboard, then delete the group",
            field="id",
        )
    # a token or app restricted to this team would lose its restriction with it, and reach the whole org
    if ApiTokenTeam.objects.filter(team=team).exists() or OAuthConnectionTeam.objects.filter(team=team).exists():
        raise Conflict(
            f"API tokens or connected apps are restricted to team {team.name!r}: revoke them first", field="id"
        )
    audit_record(
        organization=team.organization, actor=actor, verb="scim.group_delete", target=team, data={"name": team.name}
    )
    team.delete()
