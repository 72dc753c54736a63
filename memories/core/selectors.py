"""Reads for memories: who may see what (the scope cascade), a memory, listings and lineage (search:
``memories/search/selectors.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, Q, QuerySet
from django.http import Http404

from accounts.access import Principal, access_filter, access_get, access_project, reachable_projects
from accounts.models import Project
from memories.code.filters import memory_anchored_exists
from memories.code.paths import PathSelection, path_selection, symbol_clean
from memories.models import Memory, MemoryLink
from reasoningbank.errors import InvalidInput, NotFound, Rejected

SEARCH_SCOPES = ("project", "team", "org", "all")


# --- who may see what ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Reach:
    """The places a principal reaches: project-level, team-level and (always) org-level memories."""

    project_ids: frozenset[int] | None  # None = every project of the org
    team_ids: frozenset[int] | None  # None = every team of the org

    def memory_q(self, scope: str = "all") -> Q:
        project_q = Q(project__isnull=False) if self.project_ids is None else Q(project_id__in=self.project_ids)
        team_q = Q(project__isnull=True, team__isnull=False)
        if self.team_ids is not None:
            team_q &= Q(team_id__in=self.team_ids)
        org_q = Q(project__isnull=True, team__isnull=True)
        return {"project": project_q, "team": team_q, "org": org_q, "all": project_q | team_q | org_q}[scope]


def reach_for(principal: Principal, *, project: Project | None = None) -> Reach:
    """The cascade project → its team → org, for one project or for everything the token reaches."""
    if project is not None:
        return Reach(frozenset({project.id}), frozenset({project.team_id}) if project.team_id else frozenset())
    if not principal.is_restricted:
        return Reach(None, None)
    projects = list(reachable_projects(principal).values_list("id", "team_id"))
    team_ids = {team_id for _, team_id in projects if team_id} | set(principal.team_ids or ())
    return Reach(frozenset(pid for pid, _ in projects), frozenset(team_ids))


def project_resolve(principal: Principal, slug: str | None) -> Project | None:
    """The project a call is about: the named one, or the token's only project, or None (all)."""
    if slug:
        if "\x00" in slug:
            raise NotFound(f"project {slug!r} not found", field="project")
        try:
            return access_project(principal, slug)
        except Http404:
            raise NotFound(f"project {slug!r} not found", field="project") from None
    if principal.project_ids is not None and len(principal.project_ids) == 1 and not principal.team_ids:
        return principal.only_project or access_get(Project, principal, pk=next(iter(principal.project_ids)))
    return None


def project_target(principal: Principal, slug: str | None) -> Project:
    """The one project a write is about (record, session submit, consolidate): the named one, else the
    token's only project, else the only project it reaches (an org-wide token in a one-project org, the
    dashboard's first snippet). Several or none reachable and no slug: a clear error naming them."""
    resolved = project_resolve(principal, slug)
    if resolved is not None:
        return resolved
    slugs = list(reachable_projects(principal).order_by("slug").values_list("slug", flat=True)[:11])
    if len(slugs) == 1:
        return access_project(principal, slugs[0])
    if not slugs:
        raise InvalidInput("this token reaches no project yet: create one in the dashboard first", field="project")
    listed = ", ".join(slugs[:10]) + (", …" if len(slugs) > 10 else "")
    raise InvalidInput(f"project is required: this token reaches several projects ({listed})", field="project")


def memories_readable(principal: Principal) -> QuerySet[Memory]:
    return access_filter(Memory, principal).filter(reach_for(principal).memory_q())


def memory_get(principal: Principal, memory_id: str) -> Memory:
    """A memory the principal may read (any state); NotFound for missing, foreign or out-of-reach ids."""
    valid = isinstance(memory_id, str) and len(memory_id) <= 40 and "\x00" not in memory_id
    memory = (
        memories_readable(principal).select_related("project", "team", "consolidated_into").filter(pk=memory_id).first()
        if valid
        else None
    )
    if memory is None:
        raise NotFound(f"memory {memory_id!r} not found", field="memory_id")
    return memory


def memory_is_readable(principal: Principal, memory: Memory) -> bool:
    """Same org and inside the principal's reach (project → its team → org)."""
    if memory.organization_id != principal.organization.id:
        return False
    if not principal.is_restricted:
        return True
    reach = reach_for(principal)
    if memory.project_id:
        return memory.project_id in (reach.project_ids or ())
    if memory.team_id:
        return memory.team_id in (reach.team_ids or ())
    return True


def memory_is_writable(principal: Principal, memory: Memory) -> bool:
    """Project memories: any reachable project; team memories: unrestricted or that team's token;
    org memories: unrestricted tokens only."""
    if memory.organization_id != principal.organization.id:
        return False
    if not principal.is_restricted:
        return True
    if memory.project_id:
        return memory.project_id in reach_for(principal).project_ids  # type: ignore[operator]
    if memory.team_id:
        return memory.team_id in (principal.team_ids or ())
    return False


# --- listing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryFilters:
    project: str | None = None
    scope: str = "all"
    state: str | None = "active"  # None = active or archived ("proposed" only when asked for by name)
    outcome: str | None = None
    kind: str | None = None
    tier: str | None = None
    tags: tuple[str, ...] = ()
    min_confidence: float | None = None
    max_confidence: float | None = None
    origin: str | None = None
    text: str | None = None
    ordering: str = "-created_at"
    # anchored in the code (docs/code-memory.md#browse-by-code): a file, or "dir/" and everything under it;
    # a symbol (and its members) within it
    path: str | None = None
    symbol: str | None = None


MEMORY_ORDERINGS = ("-created_at", "created_at", "-confidence", "confidence", "-usage_count", "-last_used_at", "title")


def memory_list(principal: Principal, filters: MemoryFilters) -> QuerySet[Memory]:
    project = project_resolve(principal, filters.project)
    if filters.scope not in SEARCH_SCOPES:
        raise InvalidInput(f"scope must be one of {', '.join(SEARCH_SCOPES)}", field="scope")
    if filters.ordering not in MEMORY_ORDERINGS:
        raise InvalidInput(f"ordering must be one of {', '.join(MEMORY_ORDERINGS)}", field="ordering")
    qs = access_filter(Memory, principal).filter(reach_for(principal, project=project).memory_q(filters.scope))
    # a promotion proposal awaiting review is no memory yet: listed only when asked for by name
    qs = qs.filter(state=filters.state) if filters.state else qs.filter(state__in=Memory.SETTLED_STATES)
    for name in ("outcome", "kind", "tier", "origin"):
        value = getattr(filters, name)
        if value:
            qs = qs.filter(**{name: value})
    if filters.tags:
        qs = qs.filter(tags__contains=list(filters.tags))
    if filters.min_confidence is not None:
        qs = qs.filter(confidence__gte=filters.min_confidence)
    if filters.max_confidence is not None:
        qs = qs.filter(confidence__lte=filters.max_confidence)
    if filters.text:
        qs = qs.filter(Q(title__icontains=filters.text) | Q(description__icontains=filters.text))
    if filters.path or filters.symbol:
        qs = qs.filter(_anchored(principal, filters))
    return qs.select_related("project", "team").defer("embedding", "search_vector").order_by(filters.ordering, "id")


def _anchored(principal: Principal, filters: MemoryFilters) -> Exists:
    try:
        selection = path_selection([filters.path]) if filters.path else PathSelection()
    except ValueError as error:
        raise InvalidInput(str(error), field="path") from None
    try:
        symbol = symbol_clean(filters.symbol) if filters.symbol else ""
    except ValueError as error:  # a string the schema allows, that no symbol is: a 422 (docs/api.md)
        raise Rejected(str(error), field="symbol", code="rejected_symbol") from None
    return memory_anchored_exists(principal.organization, selection, symbol)


# --- lineage and signals ---------------------------------------------------------------------------


def memory_lineage(principal: Principal, memory: Memory) -> dict[str, Any]:
    """Links both ways, including archived memories (lineage must show what was merged away)."""
    readable = memories_readable(principal)
    outgoing = (
        MemoryLink.objects.filter(organization=principal.organization, source=memory, target__in=readable)
        .select_related("target")
        .order_by("kind", "-created_at")
    )
    incoming = (
        MemoryLink.objects.filter(organization=principal.organization, target=memory, source__in=readable)
        .select_related("source")
        .order_by("kind", "-created_at")
    )
    sources = readable.filter(consolidated_into=memory).order_by("id").values_list("id", flat=True)
    return {
        "outgoing": [_link_dict(link, link.target) for link in outgoing],
        "incoming": [_link_dict(link, link.source) for link in incoming],
        "consolidated_into": memory.consolidated_into_id,
        "sources": list(sources),
    }


def _link_dict(link: MemoryLink, other: Memory) -> dict[str, Any]:
    return {
        "kind": link.kind,
        "weight": link.weight,
        "reason": link.reason,
        "run_id": link.run_id,
        "created_at": link.created_at,
        "resolved_at": link.resolved_at,
        "memory": {
            "id": other.id,
            "title": other.title,
            "state": other.state,
            "archived_reason": other.archived_reason,
            "confidence": round(other.confidence, 4),
        },
    }


def memories_active_count(organization: Any) -> int:
    """Active memories of the org: what its plan's ``memories`` limit counts."""
    return access_filter(Memory, organization).filter(state=Memory.STATE_ACTIVE).count()
