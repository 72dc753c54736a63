"""Pruning of low-confidence memories (seed 000 ``confidence.prune_threshold``, seed 001 "Low-confidence
memories pruned"; issue 18 item 3), run by the daily rollup after confidence has been recomputed.

A memory is archived with reason ``low_confidence`` — never deleted: ``memory_restore`` brings it back —
when its confidence is below ``CONFIDENCE_PRUNE_THRESHOLD`` after at least ``CONFIDENCE_PRUNE_MIN_SIGNALS``
signals, and none of its signals in the last ``CONFIDENCE_PRUNE_RECENT_DAYS`` was positive. A memory a
person restored is left alone until it has had a signal since: the restore overrules the same evidence.
Each archive writes a ``memory.archive`` audit row with the figures that decided it.

Tenant by tenant, in batches of ids (keyset on the primary key): a bank of any size is never loaded at
once, and every statement names the organization.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import AuditEvent, Organization
from memories import confidence as conf
from memories.models import Memory
from memories.moderation import memories_archive, memories_lock_active

logger = logging.getLogger(__name__)

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
    """Archive (reason ``low_confidence``, audited) every active memory that seed 000's prune rule
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
