"""Reads of the quarantine (docs/security/memory-poisoning.md#quarantine): the memories the
instruction-smell detector held for review and the summaries it held, for the admins who decide them
(the review queue's page, ``GET /api/v1/quarantine``).

Only admins (the ``admin`` scope) read the queue: a quarantined memory's text is what the detector kept
away from every agent, and its review is an admin's decision. Rows come through the access layer and
the principal's reach, so another organization's memory or summary is a ``NotFound`` like a missing one.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from accounts.access import Principal
from accounts.models import SCOPE_ADMIN, Project
from memories.context.selectors import summaries_readable
from memories.core.selectors import memories_readable, reach_for
from memories.models import Memory, MemorySummary
from memories.trust.provenance_selectors import memory_source, memory_sources
from reasoningbank.errors import Forbidden, NotFound

ID_MAX = 40
SHOWN = 25  # on the review queue's page, oldest first: the rest are listed over REST


def quarantine_admin_require(principal: Principal, action: str = "reviewing the quarantine") -> None:
    if not principal.has_scope(SCOPE_ADMIN):
        raise Forbidden(f"{action} needs the '{SCOPE_ADMIN}' scope (organization admins)")


def quarantine_list(principal: Principal, *, project: Project | None = None) -> QuerySet[Memory]:
    """The quarantined memories the admin reaches (of ``project`` and its team's and the org's, when
    given), oldest first: the queue is worked from its head."""
    quarantine_admin_require(principal)
    qs = memories_readable(principal).filter(state=Memory.STATE_QUARANTINED)
    if project is not None:
        qs = qs.filter(reach_for(principal, project=project).memory_q())
    return (
        qs.select_related("project", "team", "created_by_user", "created_by_token", "source_session")
        .defer("embedding", "search_vector")
        .order_by("created_at", "id")
    )


def quarantined_get(principal: Principal, memory_id: str) -> Memory:
    """One quarantined memory the admin reaches; anything else (missing, another organization's, not in
    quarantine) is a ``NotFound``."""
    quarantine_admin_require(principal)
    valid = isinstance(memory_id, str) and len(memory_id) <= ID_MAX and "\x00" not in memory_id
    found = quarantine_list(principal).filter(pk=memory_id).first() if valid else None
    if found is None:
        raise NotFound(f"memory {memory_id!r} is not in quarantine", field="memory_id")
    return found


def summaries_held(principal: Principal, *, project: Project | None = None) -> QuerySet[MemorySummary]:
    """The summaries the detector held, of the projects the admin reaches, oldest first."""
    quarantine_admin_require(principal)
    return (
        summaries_readable(principal, project=project)
        .filter(status=MemorySummary.STATUS_HELD)
        .select_related("memory", "project")
        .defer("embedding", "raw_reply")
        .order_by("created_at", "id")
    )


def summary_held_get(principal: Principal, summary_id: str) -> MemorySummary:
    quarantine_admin_require(principal)
    valid = isinstance(summary_id, str) and len(summary_id) <= ID_MAX and "\x00" not in summary_id
    found = summaries_held(principal).filter(pk=summary_id).first() if valid else None
    if found is None:
        raise NotFound(f"summary {summary_id!r} is not held for review", field="summary_id")
    return found


def memory_written_by(memory: Memory) -> str:
    """Who wrote a memory, how, through which client and when, in one line (its provenance's label:
    docs/security/memory-poisoning.md#provenance)."""
    return str(memory_source(memory)["label"])


def quarantine_context(principal: Principal) -> dict[str, Any]:
    """What the review queue's page shows of the quarantine (for admins): the oldest held memories (each
    with who wrote it) and summaries, and how many there are."""
    memories = quarantine_list(principal)
    summaries = summaries_held(principal)
    shown = list(memories[:SHOWN])
    sources = memory_sources(shown)
    for memory in shown:
        memory.written_by = sources[memory.id]["label"]  # type: ignore[attr-defined]
    return {
        "quarantine": shown,
        "quarantine_total": memories.count(),
        "held_summaries": list(summaries[:SHOWN]),
        "held_total": summaries.count(),
    }
