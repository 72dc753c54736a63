"""The injection ledger (docs/session-context.md#the-ledger): which memories an agent session was
given — by ``memory_search``, ``memory_context`` or ``memory_ask`` called with its id — so that the
session's outcome moves the confidence of exactly those memories, once."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from django.db import connections, router, transaction
from django.utils import timezone

from accounts.access import Principal, access_filter
from memories.code.services_staleness import anchors_reverify
from memories.confidence.services import memories_mark_used, memory_outcome
from memories.core.selectors import memory_is_readable
from memories.models import Memory, MemorySignal, SessionMemoryUse

MEMORY_ID = re.compile(r"\bmem_[0-9a-z]{26}\b")
# a converted transcript's lines the agent wrote itself: its words and its tool calls (memories/sessions/
# transcripts.py); never the user's, a tool's output or what a hook put in its context
# (a result line is "[<tool> ok]" / "[<tool> error]": "[tool ok]" when the call was not seen, never a call)
AGENT_LINE = re.compile(r"^(?:\[sidechain\] )?\[(?:assistant|tool (?!(?:ok|error)\])[^\]]+)\] ")


def session_uses_record(*, principal: Principal, session_key: str, memory_ids: Iterable[str], via: str) -> int:
    """Note that the session ``session_key`` was given these memories (a memory given twice is noted
    once); the ids come from a search or context answer of this principal. Returns the new rows."""
    ids = list(dict.fromkeys(memory_ids))
    if not session_key or not ids:
        return 0
    org_id = principal.organization.id
    rows = [SessionMemoryUse(organization_id=org_id, session_key=session_key, memory_id=pk, via=via) for pk in ids]
    _insert_new(rows)
    return len(rows)


def session_citations_use(*, principal: Principal, session_key: str, trace: str) -> list[str]:
    """The memories this session was given (its ledger) that the agent then named by id in its own words or
    tool calls (``trace``: a converted transcript): a use of each, once per session
    (docs/confidence.md#impressions-and-use). Returns the memories used."""
    cited = {pk for line in trace.splitlines() if AGENT_LINE.match(line) for pk in MEMORY_ID.findall(line)}
    if not session_key or not cited:
        return []
    given = access_filter(SessionMemoryUse, principal).filter(session_key=session_key, memory_id__in=cited)
    counted = access_filter(MemorySignal, principal).filter(
        session_id=session_key, type=MemorySignal.TYPE_USAGE, positive=True, memory_id__in=cited
    )
    candidates = (
        access_filter(Memory, principal)
        .filter(pk__in=given.values("memory_id"), state=Memory.STATE_ACTIVE)
        .exclude(pk__in=counted.values("memory_id"))
    )
    memories = [memory for memory in candidates if memory_is_readable(principal, memory)]
    memories_mark_used(principal=principal, memories=memories, project=None, session_id=session_key)
    return [memory.id for memory in memories]


def _insert_new(rows: list[SessionMemoryUse]) -> None:
    """``bulk_create(rows, ignore_conflicts=True)`` in one round trip: a single ``INSERT … ON CONFLICT DO
    NOTHING`` is atomic on its own, where ``bulk_create`` wraps it in a transaction of its own (BEGIN and
    COMMIT, two more round trips on every search, context and recall that names a session)."""
    fields = [field for field in SessionMemoryUse._meta.concrete_fields if not field.primary_key]
    connection = connections[router.db_for_write(SessionMemoryUse)]
    values: list[Any] = []
    for row in rows:
        values += [field.get_db_prep_save(field.pre_save(row, True), connection) for field in fields]
    quote = connection.ops.quote_name
    one = "(" + ", ".join(["%s"] * len(fields)) + ")"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(SessionMemoryUse._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
            f"VALUES {', '.join([one] * len(rows))} ON CONFLICT DO NOTHING",
            values,
        )


@transaction.atomic
def session_outcome_attribute(
    *, principal: Principal, session_key: str, succeeded: bool, already: Iterable[str] = ()
) -> list[str]:
    """The session's outcome as an outcome signal on every memory the ledger says it was given and
    that has none from it yet; ``already`` are memories the caller has just signalled itself (they
    are only marked). Rows are locked, so two reports at once attribute once. A success re-verifies
    the code anchors of those memories that the session's own commits changed
    (docs/code-memory.md#staleness). Returns the memories signalled."""
    done = set(already)
    rows = list(
        access_filter(SessionMemoryUse, principal)
        .select_for_update(of=("self",))
        .select_related("memory")
        .filter(session_key=session_key, outcome="")
        .order_by("memory_id")
    )
    signalled, attributed = [], []
    for row in rows:
        memory: Memory = row.memory
        if not memory_is_readable(principal, memory):
            continue  # another project's memory: left for a report that may reach it
        attributed.append(row.pk)
        if row.memory_id not in done and memory.state == Memory.STATE_ACTIVE:
            memory_outcome(principal=principal, memory=memory, succeeded=succeeded, session_id=session_key)
            signalled.append(row.memory_id)
    if attributed:
        access_filter(SessionMemoryUse, principal).filter(pk__in=attributed).update(
            outcome="success" if succeeded else "failure", outcome_at=timezone.now()
        )
        if succeeded:
            reached = [row.memory_id for row in rows if row.pk in set(attributed)]
            anchors_reverify(principal=principal, session_key=session_key, memory_ids=reached)
    return signalled
