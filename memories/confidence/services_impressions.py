"""Impressions (docs/confidence.md#impressions-and-use): a memory put in an agent's context without the agent
asking for it — the hooks' per-prompt and action-time recall, the session-start block — is counted as shown and
moves no confidence. Only use does (``memories_mark_used``): an explicit search or get, feedback, an outcome, a
session outcome through the ledger. A memory shown ``IMPRESSIONS_UNUSED_DEMOTE`` times since its last use gets
one usage-negative signal from the daily job: shown often and never used is evidence against it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memories.confidence.services import confidence_recompute
from memories.locks import memories_lock
from memories.models import Memory, MemorySignal
from reasoningbank.db_replica import writes_untracked
from reasoningbank.db_threads import other_connections_usable
from reasoningbank.db_threads import write_behind as db_write_behind

logger = logging.getLogger(__name__)

# the actor of a demotion's signal: the service itself, not a member
DEMOTION_ACTOR = "system:impressions"

_MARK_SHOWN_SQL = """
UPDATE memories_memory
SET impression_count = impression_count + 1, impressions_unused = impressions_unused + 1, last_shown_at = %s
WHERE id = ANY(%s::text[]) AND organization_id = %s
"""


def memories_mark_shown(*, organization_id: int, memory_ids: Sequence[str], write_behind: bool = True) -> None:
    """Count an impression on each of these memories of this organization (a memory named twice counts once).
    With ``write_behind`` the write happens after the caller has answered when another pooled connection can
    take it, as a search's usage write does. A failed write is logged and the answer stands: an impression
    lost costs one count."""
    ids = sorted(set(memory_ids))
    if not ids:
        return
    arguments: list[Any] = [timezone.now(), ids, organization_id]
    # bookkeeping nobody reads back at once, like a search's usage signals: it keeps no reader on the primary
    with writes_untracked():
        if not (write_behind and other_connections_usable() and db_write_behind(_impressions_write, arguments)):
            _impressions_write(arguments)


def _impressions_write(arguments: list[Any]) -> None:
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            # like a usage signal: a count lost in a crash costs nothing; waiting for its fsync costs every hook
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
            memories_lock(arguments[1], organization_id=arguments[2])  # id order, as every multi-row writer
            cursor.execute(_MARK_SHOWN_SQL, arguments)
    except Exception as exc:
        logger.warning("impressions of %d memories not counted (%s: %s)", len(arguments[1]), type(exc).__name__, exc)


def memories_demote_ignored(*, now: datetime | None = None, batch: int = 1000) -> int:
    """The daily job's demotion: each active memory shown at least ``IMPRESSIONS_UNUSED_DEMOTE`` times since
    its last use gets one usage-negative signal per whole multiple of it, its count of unused impressions goes
    down by as many, and its confidence is recomputed. 0 turns it off. Returns the memories demoted."""
    threshold = int(settings.IMPRESSIONS_UNUSED_DEMOTE)
    if threshold <= 0:
        return 0
    now = now or timezone.now()
    demoted = 0
    while True:
        with transaction.atomic():
            chunk = list(
                Memory.objects.filter(state=Memory.STATE_ACTIVE, impressions_unused__gte=threshold)
                .order_by("pk")
                .only("id", "organization_id", "project_id", "prior_alpha", "prior_beta", "impressions_unused")[:batch]
            )
            if not chunk:
                return demoted
            memories_lock([m.id for m in chunk])
            signals = [
                MemorySignal(
                    organization_id=memory.organization_id, memory_id=memory.id, project_id=memory.project_id,
                    type=MemorySignal.TYPE_USAGE, positive=False, actor=DEMOTION_ACTOR, created_at=now,
                    comment=f"shown {memory.impressions_unused} times since its last use without being used",
                )
                for memory in chunk
                for _ in range(memory.impressions_unused // threshold)
            ]  # fmt: skip
            MemorySignal.objects.bulk_create(signals)
            with connection.cursor() as cursor:
                cursor.execute(
                    "UPDATE memories_memory SET impressions_unused = impressions_unused %% %s, last_signal_at = %s "
                    "WHERE id = ANY(%s::text[])",
                    [threshold, now, [m.id for m in chunk]],
                )
            confidence_recompute(chunk)
            demoted += len(chunk)
