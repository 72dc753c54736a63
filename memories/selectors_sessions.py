"""Reads for agent sessions."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.access import Principal, access_filter, reachable_projects
from memories.models import AgentSession
from memories.selectors import project_resolve
from reasoningbank.errors import InvalidInput, NotFound

STATUSES = tuple(s for s, _ in AgentSession.STATUS_CHOICES)


def session_list(
    principal: Principal, *, status: str | None = None, project: str | None = None
) -> QuerySet[AgentSession]:
    qs = access_filter(AgentSession, principal).filter(project__in=reachable_projects(principal))
    if status:
        if status not in STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(STATUSES)}", field="status")
        qs = qs.filter(status=status)
    if project:
        qs = qs.filter(project=project_resolve(principal, project))
    return qs.select_related("project").prefetch_related("memories").defer("trace", "raw_reply").order_by("-created_at")


def session_get(principal: Principal, session_id: str) -> AgentSession:
    session = (
        access_filter(AgentSession, principal)
        .filter(project__in=reachable_projects(principal), pk=session_id)
        .select_related("project", "organization", "submitted_by_token")
        .prefetch_related("memories")
        .first()
    )
    if session is None:
        raise NotFound(f"session {session_id!r} not found", field="session_id")
    return session
