"""Reads for agent sessions."""

from __future__ import annotations

import re
from datetime import datetime

from django.db.models import Q, QuerySet

from accounts.access import Principal, access_filter, reachable_projects
from memories.core.selectors import project_resolve, reach_for
from memories.models import AgentSession, Memory, MemorySignal, SessionCommit, SessionMemoryUse
from reasoningbank.errors import InvalidInput, NotFound

STATUSES = tuple(s for s, _ in AgentSession.STATUS_CHOICES)
SESSION_ID_MAX = 200  # both ids fit: a client's session_id (≤ 200) and ses_… (≤ 40)
BANK_MEMORIES_MAX = 100  # listed in a distillation prompt: the first ones the session met
_MEMORY_ID_RE = re.compile(r"\bmem_[0-9a-z]{26}\b")


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
    """A session within the principal's reach, by the ``session_id`` its client chose (what a client
    knows) or by the service's ``ses_…`` id (what the dashboard and older clients use).

    The service id wins when both match. A client id is unique per project only: when the
    principal reaches several sessions with it, the error lists their ``ses_…`` ids to choose from.
    Another org's session, or one outside the token's projects, is a NotFound like a missing one.
    """
    if not isinstance(session_id, str) or not session_id or len(session_id) > SESSION_ID_MAX or "\x00" in session_id:
        raise NotFound(f"session {session_id!r} not found", field="session_id")
    reachable = (
        access_filter(AgentSession, principal)
        .filter(project__in=reachable_projects(principal))
        .select_related("project", "organization", "submitted_by_token")
        .prefetch_related("memories")
    )
    session = reachable.filter(pk=session_id).first()
    if session is not None:
        return session
    # stored stripped by session_submit
    named = list(reachable.filter(external_id=session_id.strip()).order_by("project__slug")[:10])
    if not named:
        raise NotFound(f"session {session_id!r} not found", field="session_id")
    if len(named) > 1:
        choices = ", ".join(f"{s.id} ({s.project.slug})" for s in named)
        raise InvalidInput(
            f"several projects have a session {session_id!r}: use its id instead, one of {choices}",
            field="session_id",
        )
    return named[0]


def session_memory_uses(principal: Principal, session: AgentSession) -> QuerySet[SessionMemoryUse]:
    """The memories this session was given (the injection ledger), first given first."""
    return (
        access_filter(SessionMemoryUse, principal)
        .filter(session_key=session.external_id)
        .select_related("memory")
        .order_by("created_at", "id")
    )


def session_bank_memories(principal: Principal, session: AgentSession) -> list[Memory]:
    """The memories already in the bank that the session met, for distillation not to extract again: those
    its injection ledger says it was given (the hooks' session-start block and per-prompt recall, a search,
    context or ask with its id), those its earlier rounds distilled, those whose ids its trace shows (tool
    results carry them) and those given signals tagged with its id — the first ``BANK_MEMORIES_MAX`` of
    them in that order, within the principal's reach for the session's project, none in quarantine."""
    ids: dict[str, None] = dict.fromkeys(session_memory_uses(principal, session).values_list("memory_id", flat=True))
    distilled = access_filter(Memory, principal).filter(source_session=session).order_by("created_at", "id")
    ids.update(dict.fromkeys(distilled.values_list("id", flat=True)))
    ids.update(dict.fromkeys(_MEMORY_ID_RE.findall(session.trace)))
    signalled = access_filter(MemorySignal, principal).filter(session_id=session.external_id)
    ids.update(dict.fromkeys(signalled.values_list("memory_id", flat=True)))
    chosen = list(ids)[:BANK_MEMORIES_MAX]
    if not chosen:
        return []
    reach = reach_for(principal, project=session.project)
    found = access_filter(Memory, principal).filter(pk__in=chosen).filter(reach.memory_q())
    by_id = {m.id: m for m in found.exclude(state=Memory.STATE_QUARANTINED)}
    return [by_id[pk] for pk in chosen if pk in by_id]


def session_commits(principal: Principal, session: AgentSession) -> QuerySet[SessionCommit]:
    """The commits tied to this session (``session_code_report``) and their verdicts, oldest first."""
    return access_filter(SessionCommit, principal).filter(session_key=session.external_id).order_by("created_at", "id")


def session_seen_memory_ids(principal: Principal, session_key: str, memory_ids: list[str]) -> set[str]:
    """Which of ``memory_ids`` the session's ledger (in the principal's organization) says it was given."""
    if not session_key or not memory_ids:
        return set()
    return set(
        access_filter(SessionMemoryUse, principal)
        .filter(session_key=session_key, memory_id__in=memory_ids)
        .values_list("memory_id", flat=True)
    )


# --- the worker's share (reasoningbank/fair_share.py): every organization's, no principal ------------


def sessions_running() -> QuerySet[AgentSession]:
    return AgentSession.objects.filter(status=AgentSession.STATUS_RUNNING)


def sessions_waiting(now: datetime) -> QuerySet[AgentSession]:
    """Queued and due for a worker: not waiting out a retry's backoff, and not a session still being
    handed in (attempts 0 with a time set: the idle release queues it, docs/claude-code.md#capture)."""
    due = Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now, attempts__gt=0)
    return AgentSession.objects.filter(status=AgentSession.STATUS_QUEUED).filter(due)
