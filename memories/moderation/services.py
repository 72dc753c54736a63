"""Moderation: every change to a memory's lifecycle that a moderator might question — archive, restore,
un-merge, resolving a contradiction, and the daily pruning of low-confidence memories — as one set of
audited services (docs/tenancy.md#the-audit-log). The consolidation cycle, REST, MCP, the dashboard, the
admin and the pruning all archive through ``memories_archive``, so every archive writes its
``AuditEvent`` row.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.models import AuditEvent, Organization
from accounts.services import audit_record, audit_record_many
from memories.confidence import bayes as conf
from memories.core.selectors import memory_is_writable
from memories.core.services import memory_limit_check
from memories.events import memories_archived, memory_quarantined_announce
from memories.locks import memories_lock, memories_lock_active
from memories.models import Memory, MemoryLink
from memories.trust.services import drafts_screen
from memories.validation import choice_check, write_scope_require
from reasoningbank.errors import Conflict, Forbidden, InvalidInput

logger = logging.getLogger(__name__)


def memories_archive(
    *,
    organization: Any,
    memory_ids: str | Sequence[str],
    reason: str,
    actor: Principal | None = None,
    into: Memory | None = None,
    only_active: bool = False,
    data: dict[str, Any] | None = None,
) -> list[str]:
    """Archive these memories of ``organization`` (never deletes) and write one ``memory.archive``
    audit row each; returns the ids it archived. ``only_active`` leaves rows archived meanwhile
    alone (the rows are locked first, in id order, and the UPDATE reads their state then). Raw SQL
    with one array parameter: ``pk__in`` over thousands of ids binds one placeholder per id."""
    ids = [memory_ids] if isinstance(memory_ids, str) else list(memory_ids)
    if not ids:
        return []
    now = timezone.now()
    params: list[Any] = [
        Memory.STATE_ARCHIVED,
        reason,
        now,
        "archived",
        into.id if into else None,
        now,
        ids,
        organization.id,
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        # locked in id order first (memories.locks): the UPDATE alone locks rows in its plan's order
        # and deadlocked with a search's usage write holding some of them (docs/concurrency.md)
        memories_lock(ids, organization_id=organization.id)
        cursor.execute(
            "UPDATE memories_memory SET state = %s, archived_reason = %s, archived_at = %s, tier = %s, "
            "consolidated_into_id = %s, updated_at = %s WHERE id = ANY(%s) AND organization_id = %s"
            + (" AND state = %s" if only_active else "")
            + " RETURNING id",
            params + ([Memory.STATE_ACTIVE] if only_active else []),
        )
        archived = [row[0] for row in cursor.fetchall()]
    details = {"reason": reason, **({"into": into.id} if into else {}), **(data or {})}
    audit_record_many(
        organization=organization,
        actor=actor,
        verb="memory.archive",
        target_type="memory",
        target_ids=archived,
        data=details,
    )
    if archived:
        memories_archived.send(
            sender=Memory, organization=organization, memory_ids=archived, reason=reason, into=into, data=details
        )
    return archived


@transaction.atomic
def memory_archive(*, principal: Principal, memory: Memory, reason: str = Memory.ARCHIVED_MANUAL) -> Memory:
    write_scope_require(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    choice_check(reason, "reason", [r for r, _ in Memory.ARCHIVED_REASON_CHOICES])
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.state == Memory.STATE_PROPOSED:
        raise Conflict(_proposal_refusal(memory, "archived"), field="memory_id")
    if memory.state == Memory.STATE_QUARANTINED:
        # archived, it could be restored past the review it waits for
        raise Conflict(_quarantine_refusal(memory, "archived"), field="memory_id")
    if memory.state == Memory.STATE_ARCHIVED:
        return memory
    memories_archive(organization=principal.organization, memory_ids=memory.id, reason=reason, actor=principal)
    memory.refresh_from_db()
    return memory


@transaction.atomic
def memory_restore(*, principal: Principal, memory: Memory) -> Memory:
    """Back to active. Links (consolidates, supersedes, …) stay as history. Its text passes the
    instruction-smell detector again, as a new memory's would: under the ``quarantine`` policy a flagged
    one is restored into quarantine, to wait for an admin's review (an archived memory may predate the
    detector, or have been edited while archived)."""
    write_scope_require(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.state == Memory.STATE_ACTIVE:
        # a 200 here hid mistakes (a wrong id, a double click on an old page): say there was nothing to do
        raise Conflict(f"memory {memory.id} is already active: only an archived memory can be restored")
    if memory.state == Memory.STATE_PROPOSED:
        # restoring would promote it without the review the organization asked for
        raise Conflict(_proposal_refusal(memory, "restored"), field="memory_id")
    if memory.state == Memory.STATE_QUARANTINED:
        raise Conflict(_quarantine_refusal(memory, "restored"), field="memory_id")
    (screening,) = drafts_screen(principal.organization, [memory])
    if not screening.quarantined:
        memory_limit_check(principal.organization, adding=1)
    previous = memory.archived_reason
    memory.state = Memory.STATE_QUARANTINED if screening.quarantined else Memory.STATE_ACTIVE
    memory.archived_reason, memory.archived_at = "", None
    memory.flags = screening.flags
    memory.consolidated_into = None
    memory.tier = "warm"
    memory.updated_at = timezone.now()
    memory.save(
        update_fields=["state", "archived_reason", "archived_at", "consolidated_into", "tier", "flags", "updated_at"]
    )
    if memory.state == Memory.STATE_QUARANTINED:
        memory_quarantined_announce(memory)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.restore",
        target=memory,
        data={"was": previous, **({"state": memory.state} if screening.quarantined else {})},
    )
    return memory


def _quarantine_refusal(memory: Memory, verb: str) -> str:
    return (
        f"memory {memory.id} is in quarantine, waiting for an admin's review: it cannot be {verb}; an admin "
        "approves or deletes it in the review queue (Quality → Review queue, or POST "
        f"/api/v1/quarantine/{memory.id}/approve)"
    )


def _proposal_refusal(memory: Memory, verb: str) -> str:
    return (
        f"memory {memory.id} is a promotion proposal awaiting review: it cannot be {verb}; accept or reject it "
        "in the review queue (Quality → Review queue, or POST /api/v1/consolidation/reviews/<id>/decide)"
    )


def _unmerge_refusal(memory: Memory) -> str | None:
    """Why this memory cannot be un-merged, saying what to do instead; None when it can be."""
    if memory.state == Memory.STATE_PROPOSED:
        return _proposal_refusal(memory, "un-merged")
    if memory.state == Memory.STATE_QUARANTINED:
        return _quarantine_refusal(memory, "un-merged")
    if memory.origin != Memory.ORIGIN_CONSOLIDATED:
        if memory.archived_reason == Memory.ARCHIVED_DUPLICATE:
            kept = (
                MemoryLink.objects.filter(
                    organization_id=memory.organization_id, target=memory, kind=MemoryLink.KIND_DUPLICATES
                )
                .values_list("source_id", flat=True)
                .first()
            )
            return (
                f"memory {memory.id} was archived as a duplicate{f' of {kept}' if kept else ''}, not merged into a "
                "consolidated memory, so there is nothing to un-merge: restore it to make it active again"
            )
        if memory.consolidated_into_id:
            return (
                f"memory {memory.id} is a source of the consolidated memory {memory.consolidated_into_id}: "
                "un-merge that one to bring back all of its sources"
            )
        return f"only consolidated memories can be un-merged; memory {memory.id} was {memory.origin}, not consolidated"
    if memory.state != Memory.STATE_ACTIVE:
        return (
            f"consolidated memory {memory.id} is already archived ({memory.archived_reason}): it was un-merged or "
            "archived before; restore it first to un-merge it"
        )
    return None


@transaction.atomic
def memory_unmerge(*, principal: Principal, memory: Memory) -> list[Memory]:
    """Undo a consolidation: the sources come back, the consolidated memory is archived. Links stay."""
    if not principal.has_scope("memories:write"):
        raise Forbidden("un-merging needs the 'memories:write' scope")
    refusal = _unmerge_refusal(memory)
    if refusal:  # the memory's state forbids it (a 409), the request itself is well-formed
        raise Conflict(refusal, field="memory_id")
    merged = Memory.objects.filter(consolidated_into=memory, organization=principal.organization)
    # the sources and the memory itself locked together in id order, like every writer of several
    # memories (memories.locks), then read again under the locks
    memories_lock([*merged.values_list("id", flat=True), memory.pk], organization_id=principal.organization.id)
    sources = list(merged)
    if not sources:
        raise Conflict("this consolidated memory has no archived sources left to restore", field="memory_id")
    now = timezone.now()
    Memory.objects.filter(pk__in=[s.pk for s in sources]).update(
        state=Memory.STATE_ACTIVE,
        archived_reason="",
        archived_at=None,
        consolidated_into=None,
        tier="warm",
        updated_at=now,
    )
    Memory.objects.filter(pk=memory.pk).update(
        state=Memory.STATE_ARCHIVED,
        archived_reason=Memory.ARCHIVED_MANUAL,
        archived_at=now,
        tier="archived",
        updated_at=now,
    )
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.unmerge",
        target=memory,
        data={"restored": [s.id for s in sources]},
    )
    return list(Memory.objects.filter(pk__in=[s.pk for s in sources]))


RESOLUTIONS = ("keep_first", "keep_second", "keep_both")


@transaction.atomic
def contradiction_resolve(*, principal: Principal, link: MemoryLink, resolution: str) -> MemoryLink:
    """A moderator settles a dispute: keep one (the other is superseded and archived) or both."""
    if not principal.has_scope("memories:write"):
        raise Forbidden("resolving disputes needs the 'memories:write' scope")
    if resolution not in RESOLUTIONS:
        raise InvalidInput(f"resolution must be one of {', '.join(RESOLUTIONS)}", field="resolution")
    link = MemoryLink.objects.select_for_update().get(pk=link.pk)
    if link.resolved_at is not None:
        raise Conflict("this dispute is already resolved")
    if resolution != "keep_both":
        keep, drop = (link.source, link.target) if resolution == "keep_first" else (link.target, link.source)
        memories_archive(
            organization=link.organization,
            memory_ids=drop.id,
            reason=Memory.ARCHIVED_SUPERSEDED,
            actor=principal,
            data={"kept": keep.id},
        )
        MemoryLink.objects.get_or_create(
            source=keep,
            target=drop,
            kind=MemoryLink.KIND_SUPERSEDES,
            defaults={"organization": link.organization, "reason": "moderator resolved a contradiction"},
        )
    link.resolved_at = timezone.now()
    link.save(update_fields=["resolved_at"])
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="contradiction.resolve",
        target=link.source,
        data={"link": link.pk, "resolution": resolution, "other": link.target_id},
    )
    return link


# --- pruning low-confidence memories --------------------------------------------------------------
# Pruning of low-confidence memories (docs/confidence.md#pruning), run by the daily rollup after
# confidence has been recomputed.
#
# A memory is archived with reason ``low_confidence`` — never deleted: ``memory_restore`` brings it back —
# when its confidence is below ``CONFIDENCE_PRUNE_THRESHOLD`` after at least ``CONFIDENCE_PRUNE_MIN_SIGNALS``
# signals, and none of its signals in the last ``CONFIDENCE_PRUNE_RECENT_DAYS`` was positive. A memory a
# person restored is left alone until it has had a signal since: the restore overrules the same evidence.
# Each archive writes a ``memory.archive`` audit row with the figures that decided it.
#
# Tenant by tenant, in batches of ids (keyset on the primary key): a bank of any size is never loaded at
# once, and every statement names the organization.

PRUNE_BATCH = 1000

_AGG_POS = "a.explicit_pos + a.usage_pos + a.outcome_pos + a.stability_pos"
_AGG_NEG = "a.explicit_neg + a.usage_neg + a.outcome_neg + a.stability_neg"

# Per memory of one organization, under the threshold and still active: its signal counts (rolled up +
# live), whether a positive one is recent, when it last had one and when a person last restored it. A
# rolled-up positive counts as recent when its aggregate may hold one that young (``last_rollup`` minus
# the 30 days the log keeps events): the rollup keeps no time per event, so the doubt keeps the memory.
_FACTS_SQL = f"""
SELECT m.id, m.confidence, m.alpha, m.beta, m.prior_alpha, m.prior_beta,
       COALESCE({_AGG_POS}, 0) + COALESCE(live.pos, 0),
       COALESCE({_AGG_NEG}, 0) + COALESCE(live.neg, 0),
       COALESCE(live.recent_pos, false)
           OR COALESCE(a.last_rollup - %(retention)s > %(recent_since)s AND {_AGG_POS} > 0, false),
       GREATEST(live.latest, a.last_rollup - %(retention)s),
       (SELECT max(e.created_at) FROM {AuditEvent._meta.db_table} e
         WHERE e.organization_id = m.organization_id AND e.target_type = 'memory' AND e.target_id = m.id
           AND e.verb = 'memory.restore')
FROM memories_memory m
LEFT JOIN memories_memorysignalaggregate a ON a.memory_id = m.id
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE s.positive) AS pos,
           count(*) FILTER (WHERE NOT s.positive) AS neg,
           bool_or(s.positive AND s.created_at >= %(recent_since)s) AS recent_pos,
           max(s.created_at) AS latest
    FROM memories_memorysignal s WHERE s.memory_id = m.id
) live ON true
WHERE m.id = ANY(%(ids)s) AND m.organization_id = %(org)s AND m.state = 'active'
  AND m.confidence < %(threshold)s
ORDER BY m.id
"""


@dataclass(frozen=True)
class _Facts:
    id: str
    confidence: float
    alpha: float
    beta: float
    prior: float
    positive: int
    negative: int
    recent_positive: bool
    last_signal_at: datetime | None
    restored_at: datetime | None

    @property
    def signals(self) -> int:
        return self.positive + self.negative

    @property
    def restored_since_last_signal(self) -> bool:
        return self.restored_at is not None and (self.last_signal_at is None or self.restored_at > self.last_signal_at)


def memories_prune_low_confidence(*, now: datetime | None = None, batch: int = PRUNE_BATCH) -> dict[str, int]:
    """Archive (reason ``low_confidence``, audited) every active memory that the prune rule
    condemns, in every organization; returns how many memories were examined and archived."""
    threshold = settings.CONFIDENCE_PRUNE_THRESHOLD
    if threshold <= 0:  # 0 turns pruning off: no confidence is below it
        return {"examined": 0, "pruned": 0}
    now = now or timezone.now()
    examined = pruned = 0
    org_ids = (
        Memory.objects.filter(state=Memory.STATE_ACTIVE, confidence__lt=threshold)
        .order_by("organization_id")
        .values_list("organization_id", flat=True)
        .distinct()
    )
    for org in Organization.objects.filter(id__in=list(org_ids)).order_by("id"):
        seen, archived = _organization_prune(org, threshold=threshold, now=now, batch=batch)
        examined += seen
        pruned += archived
    if pruned:
        logger.info("pruned %d low-confidence memories (of %d below %.2f)", pruned, examined, threshold)
    return {"examined": examined, "pruned": pruned}


def _organization_prune(org: Organization, *, threshold: float, now: datetime, batch: int) -> tuple[int, int]:
    examined = pruned = 0
    last = ""
    while True:
        ids = list(
            Memory.objects.filter(organization=org, state=Memory.STATE_ACTIVE, confidence__lt=threshold, pk__gt=last)
            .order_by("pk")
            .values_list("pk", flat=True)[:batch]
        )
        if not ids:
            return examined, pruned
        last = ids[-1]
        with transaction.atomic():
            # locked, then judged: a signal arriving meanwhile waits, and is seen by the next rollup
            locked = memories_lock_active(ids)
            for facts in _facts(org, locked, threshold=threshold, now=now):
                examined += 1
                if _prune_one(org, facts, threshold=threshold):
                    pruned += 1


def _facts(org: Organization, ids: list[str], *, threshold: float, now: datetime) -> list[_Facts]:
    if not ids:
        return []
    params: dict[str, Any] = {
        "ids": ids,
        "org": org.id,
        "threshold": threshold,
        "retention": timedelta(days=conf.SIGNAL_EVENT_RETENTION_DAYS),
        "recent_since": now - timedelta(days=settings.CONFIDENCE_PRUNE_RECENT_DAYS),
    }
    with connection.cursor() as cursor:
        cursor.execute(_FACTS_SQL, params)
        rows = cursor.fetchall()
    return [
        _Facts(
            id=row[0],
            confidence=row[1],
            alpha=row[2],
            beta=row[3],
            prior=row[4] / (row[4] + row[5]),
            positive=int(row[6]),
            negative=int(row[7]),
            recent_positive=bool(row[8]),
            last_signal_at=row[9],
            restored_at=row[10],
        )
        for row in rows
    ]


def _prune_one(org: Organization, facts: _Facts, *, threshold: float) -> bool:
    min_signals = settings.CONFIDENCE_PRUNE_MIN_SIGNALS
    if facts.restored_since_last_signal:
        return False
    if not conf.confidence_prunable(
        confidence=facts.confidence,
        signals=facts.signals,
        recent_positive=facts.recent_positive,
        threshold=threshold,
        min_signals=min_signals,
    ):
        return False
    recent_days = settings.CONFIDENCE_PRUNE_RECENT_DAYS
    why = (
        f"confidence {facts.confidence:.3f} is below the prune threshold {threshold:g} after {facts.signals} "
        f"signals ({facts.positive} positive, {facts.negative} negative; at least {min_signals} needed), none "
        f"positive in the last {recent_days} days"
    )
    archived = memories_archive(
        organization=org,
        memory_ids=facts.id,
        reason=Memory.ARCHIVED_LOW_CONFIDENCE,
        only_active=True,
        data={
            "why": why,
            "confidence": round(facts.confidence, 4),
            "threshold": threshold,
            "signals": facts.signals,
            "positive": facts.positive,
            "negative": facts.negative,
            "min_signals": min_signals,
            "recent_days": recent_days,
            "alpha": round(facts.alpha, 4),
            "beta": round(facts.beta, 4),
            "prior": round(facts.prior, 4),
        },
    )
    return bool(archived)
