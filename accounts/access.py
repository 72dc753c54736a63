"""The one access layer: every tenant object is loaded through here.

* ``Principal`` is who is calling (an API token or a dashboard user) and inside which org.
* ``access_get`` / ``access_filter`` load rows of the caller's org only; another org's row is a
  404 exactly like a missing one, so ids never reveal that something exists elsewhere.
* ``accounts.api_base.OrgAPIView`` builds on these for every REST view.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import models
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest

from accounts.models import (
    SCOPE_ADMIN,
    SCOPE_CONSOLIDATION_RUN,
    SCOPE_MEMORIES_READ,
    SCOPE_MEMORIES_WRITE,
    ApiToken,
    Membership,
    Organization,
    Project,
)

M = TypeVar("M", bound=models.Model)

# What a dashboard user may do, by role (tokens carry explicit scopes instead).
ROLE_SCOPES: dict[str, frozenset[str]] = {
    Membership.ROLE_VIEWER: frozenset({SCOPE_MEMORIES_READ}),
    Membership.ROLE_MEMBER: frozenset({SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE, SCOPE_CONSOLIDATION_RUN}),
    Membership.ROLE_ADMIN: frozenset({SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE, SCOPE_CONSOLIDATION_RUN, SCOPE_ADMIN}),
    Membership.ROLE_OWNER: frozenset({SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE, SCOPE_CONSOLIDATION_RUN, SCOPE_ADMIN}),
}


@dataclass(frozen=True)
class Principal:
    """Who is acting, inside which org, with which rights."""

    organization: Organization
    scopes: frozenset[str]
    token: ApiToken | None = None
    user: Any = None
    role: str | None = None
    # None = the whole org; otherwise the only projects / teams this token may touch
    project_ids: frozenset[int] | None = None
    team_ids: frozenset[int] | None = None
    # a token restricted to exactly one project (no teams): that project, loaded with the token
    only_project: Project | None = None
    # an OAuth access token's connected app (accounts.models.OAuthConnection); ``user`` is the person
    # who consented, ``role`` stays None (the role only caps the scopes, it grants no dashboard rights)
    oauth_connection: Any = None
    # the SCIM token an identity provider provisions the org with (accounts.models.ScimToken)
    scim_token: Any = None
    is_authenticated: bool = field(default=True, repr=False)  # lets DRF's IsAuthenticated work

    @property
    def actor_label(self) -> str:
        if self.token is not None:
            return f"token:{self.token.prefix}"
        if self.scim_token is not None:
            return f"scim:{self.scim_token.prefix}"
        if self.oauth_connection is not None:
            email = self.user.email if self.user is not None else ""
            return f"app:{self.oauth_connection.pk} user:{email}"[:200]
        if self.user is not None:
            return f"user:{self.user.email or self.user.get_username()}"
        return "system"

    @property
    def is_restricted(self) -> bool:
        return self.project_ids is not None or self.team_ids is not None

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes

    def has_role(self, minimum: str) -> bool:
        if self.role is None:
            return False
        return Membership.ROLE_RANK[self.role] >= Membership.ROLE_RANK[minimum]


def principal_for_token(token: ApiToken) -> Principal:
    # accounts.tokens.selectors.token_by_digest loads the restriction with the token; other callers query it
    loaded = getattr(token, "project_id_list", None), getattr(token, "team_id_list", None)
    if loaded[0] is not None and loaded[1] is not None:
        project_ids, team_ids = frozenset(loaded[0]), frozenset(loaded[1])
    else:
        project_ids = frozenset(token.projects.values_list("id", flat=True))
        team_ids = frozenset(token.teams.values_list("id", flat=True))
    restricted = bool(project_ids or team_ids)
    only_project = getattr(token, "only_project", None)
    return Principal(
        organization=token.organization,
        scopes=frozenset(token.scopes),
        token=token,
        project_ids=project_ids if restricted else None,
        team_ids=team_ids if restricted else None,
        only_project=only_project if only_project is not None and not team_ids else None,
    )


def principal_for_membership(membership: Membership) -> Principal:
    return Principal(
        organization=membership.organization,
        scopes=ROLE_SCOPES[membership.role],
        user=membership.user,
        role=membership.role,
    )


def system_principal(organization: Organization) -> Principal:
    """Background work acting for an org (scheduled consolidation, distillation)."""
    return Principal(organization=organization, scopes=frozenset(ROLE_SCOPES[Membership.ROLE_OWNER]))


def staff_principal(organization: Organization, request: HttpRequest) -> Principal:
    """The system principal of ``organization``, audited as the staff user who acted (the Django admin)."""
    return dataclasses.replace(system_principal(organization), user=request.user)


# --- loaders -------------------------------------------------------------------------------------


def _org_of(tenant: Organization | Principal) -> Organization:
    return tenant.organization if isinstance(tenant, Principal) else tenant


def access_filter(model_or_qs: type[M] | QuerySet[M], tenant: Organization | Principal) -> QuerySet[M]:
    """Rows of ``model_or_qs`` that belong to the tenant's org."""
    qs = model_or_qs if isinstance(model_or_qs, QuerySet) else model_or_qs._default_manager.all()
    org = _org_of(tenant)
    if qs.model is Organization:
        return qs.filter(pk=org.pk)
    return qs.filter(organization=org)


def access_get(model_or_qs: type[M] | QuerySet[M], tenant: Organization | Principal, **lookup: Any) -> M:
    """One row of the tenant's org, or Http404 — the same for missing, malformed or foreign ids."""
    if any(isinstance(value, str) and "\x00" in value for value in lookup.values()):
        raise Http404("Not found.")  # PostgreSQL cannot even compare such text
    try:
        return access_filter(model_or_qs, tenant).get(**lookup)
    except (ObjectDoesNotExist, ValueError, ValidationError, TypeError):
        raise Http404("Not found.") from None


def reachable_projects(principal: Principal) -> QuerySet[Project]:
    """Projects the principal may read and write: the whole org, or its token's restriction."""
    qs = access_filter(Project, principal).select_related("team")
    if principal.project_ids is None and principal.team_ids is None:
        return qs
    return qs.filter(Q(id__in=principal.project_ids or ()) | Q(team_id__in=principal.team_ids or ()))


def access_project(principal: Principal, slug: str) -> Project:
    """A project by slug that the principal can reach; 404 otherwise (never says it exists)."""
    return access_get(reachable_projects(principal), principal, slug=slug)


def scopes_validate(scopes: Iterable[str]) -> list[str]:
    from accounts.models import TOKEN_SCOPES
    from reasoningbank.errors import InvalidInput

    cleaned = sorted({scope.strip() for scope in scopes if scope.strip()})
    unknown = [scope for scope in cleaned if scope not in TOKEN_SCOPES]
    if unknown:
        raise InvalidInput(
            f"unknown scope(s): {', '.join(unknown)}; allowed: {', '.join(TOKEN_SCOPES)}", field="scopes"
        )
    if not cleaned:
        raise InvalidInput("a token needs at least one scope", field="scopes")
    return cleaned
