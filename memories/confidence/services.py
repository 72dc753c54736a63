"""Confidence signals (docs/confidence.md): explicit feedback, task outcomes, usage and code stability,
each moving a memory's Beta confidence; the per-project signal weights; the daily rollup of old events."""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from accounts.access import Principal
from accounts.models import Project
from accounts.services import audit_record
from memories.confidence import bayes as conf
from memories.core.selectors import memory_is_readable
from memories.locks import memories_lock
from memories.models import Memory, MemorySignal, MemorySignalAggregate, ProjectSignalWeights
from memories.validation import COMMENT_MAX, session_key_clean, text_clean, text_scrub, write_scope_require
from reasoningbank.db_replica import writes_untracked
from reasoningbank.db_threads import other_connections_usable
from reasoningbank.db_threads import write_behind as db_write_behind
from reasoningbank.errors import InvalidInput, NotFound
from reasoningbank.metrics import USAGE_SIGNALS, USAGE_WRITE_FAILURES, USAGE_WRITE_RETRIES
from reasoningbank.middleware import database_unavailable

logger = logging.getLogger(__name__)


def readable_require(principal: Principal, memory: Memory) -> None:
    """Signals (feedback, outcome) may target any memory the caller can read, never another org's."""
    if not memory_is_readable(principal, memory):
        raise NotFound(f"memory {memory.id!r} not found", field="memory_id")


# --- confidence signals ----------------------------------------------------------------------------


def _weights_row(memory: Memory, *, lock: bool = False) -> ProjectSignalWeights:
    """The learned weights that govern this memory: its project's, or the org-wide row."""
    # project_id None selects the org-wide row (Django turns ``= None`` into IS NULL)
    qs = ProjectSignalWeights.objects.filter(
        organization_id=memory.organization_id,
        project_id=memory.project_id,  # type: ignore[misc]
    )
    if lock:
        qs = qs.select_for_update()
    row = qs.first()
    if row is None:
        row, _ = ProjectSignalWeights.objects.get_or_create(
            organization_id=memory.organization_id, project_id=memory.project_id
        )
    return row


def _project_weights(row: ProjectSignalWeights) -> conf.ProjectWeights:
    return conf.ProjectWeights(
        explicit_alpha=row.explicit_alpha,
        explicit_beta=row.explicit_beta,
        usage_alpha=row.usage_alpha,
        usage_beta=row.usage_beta,
        outcome_alpha=row.outcome_alpha,
        outcome_beta=row.outcome_beta,
        stability_alpha=row.stability_alpha,
        stability_beta=row.stability_beta,
    )


_COUNT_FIELDS = tuple(field.name for field in dataclasses.fields(conf.SignalCounts))


def _aggregate_kept(agg: MemorySignalAggregate) -> conf.SignalCounts:
    """The evidence an aggregate still carries: its counts as time decay left them (``*_kept``; NULL
    until the first decay, when it is the count itself)."""
    # by name: the aggregate's columns are the counts' fields (explicit/usage/outcome/stability × pos/neg)
    return conf.SignalCounts(
        **{
            name: kept if (kept := getattr(agg, f"{name}_kept")) is not None else getattr(agg, name)
            for name in _COUNT_FIELDS
        }
    )


def _signal_counts(memory_ids: Iterable[str]) -> dict[str, conf.SignalCounts]:
    """The evidence per memory: the rolled-up aggregate (decayed, ``_aggregate_kept``) plus the live event
    log (never decayed: the decay starts after the grace, once a silent memory's events are all rolled up)."""
    ids = list(memory_ids)
    counts = {mid: conf.SignalCounts() for mid in ids}
    for agg in MemorySignalAggregate.objects.filter(memory_id__in=ids):
        counts[agg.memory_id] = _aggregate_kept(agg)
    rows = (
        MemorySignal.objects.filter(memory_id__in=ids)
        .values("memory_id", "type", "positive")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        key = f"{row['type']}_{'pos' if row['positive'] else 'neg'}"
        current = counts[row["memory_id"]]
        counts[row["memory_id"]] = conf.SignalCounts(**{**current.__dict__, key: getattr(current, key) + row["n"]})
    return counts


def confidence_recompute(memories: Sequence[Memory]) -> None:
    """Each memory's confidence with its project's current learned weights, over its evidence as time
    decay left it (``signals_decay``); saves alpha/beta/confidence."""
    if not memories:
        return
    if len(memories) > 1:  # the rollup's batches: locked in id order like every multi-row write
        memories_lock([m.id for m in memories])
    counts = _signal_counts(m.id for m in memories)
    weights_cache: dict[tuple[int, int | None], conf.Weights] = {}
    for memory in memories:
        key = (memory.organization_id, memory.project_id)
        if key not in weights_cache:
            weights_cache[key] = _project_weights(_weights_row(memory)).compute_weights()
        state = conf.confidence_compute(
            memory.prior_alpha, memory.prior_beta, counts[memory.id], [], weights_cache[key]
        )
        memory.alpha, memory.beta, memory.confidence = state.alpha, state.beta, state.score
    with connection.cursor() as cursor:
        cursor.execute(
            _CONFIDENCE_WRITE_SQL,
            [
                [m.id for m in memories],
                [m.alpha for m in memories],
                [m.beta for m in memories],
                [m.confidence for m in memories],
            ],
        )


# One statement for a batch, writing only the rows whose values changed: the daily recompute of every
# memory changes few of them, and rewriting each row (``bulk_update``'s CASE over the batch: quadratic
# in its size) made the rollup take 5.5 minutes at 110K memories (bench/README.md, "scale.py").
_CONFIDENCE_WRITE_SQL = """
UPDATE memories_memory m SET alpha = v.alpha, beta = v.beta, confidence = v.confidence
FROM unnest(%s::text[], %s::float8[], %s::float8[], %s::float8[]) AS v(id, alpha, beta, confidence)
WHERE m.id = v.id AND (m.alpha, m.beta, m.confidence) IS DISTINCT FROM (v.alpha, v.beta, v.confidence)
"""


def _recent_signals(memory: Memory) -> list[conf.Signal]:
    since = timezone.now() - timedelta(days=conf.SIGNAL_EVENT_RETENTION_DAYS)
    rows = MemorySignal.objects.filter(memory=memory, created_at__gte=since).values_list("type", "positive")
    return [conf.Signal(conf.SignalType(t), p) for t, p in rows]


@dataclass(frozen=True)
class SignalResult:
    memory: Memory
    previous_confidence: float
    new_confidence: float


@transaction.atomic
def memory_feedback(
    *, principal: Principal, memory: Memory, helpful: Any, comment: Any = "", project: Project | None = None
) -> SignalResult:
    """``memory_feedback``: an explicit signal; teaches the project's weights whether usage and
    outcome signals predicted it; recomputes the memory's confidence."""
    write_scope_require(principal)
    readable_require(principal, memory)
    if not isinstance(helpful, bool):
        raise InvalidInput("helpful must be true or false", field="helpful")
    comment = text_scrub(text_clean(comment, "comment", COMMENT_MAX, required=False), seen_in="memory.feedback")
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    previous = memory.confidence
    row = _weights_row(memory, lock=True)
    learned = _project_weights(row).learn_from_feedback(helpful, _recent_signals(memory))
    for name, value in learned.__dict__.items():
        setattr(row, name, value)
    row.updated_at = timezone.now()
    row.save()
    signal = _signal_add(principal, memory, conf.SignalType.EXPLICIT, helpful, comment=comment, project=project)
    confidence_recompute([memory])
    _signal_stamp_confidence(signal, memory)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.feedback",
        target=memory,
        data={
            "helpful": helpful,
            "comment": comment[:200],
            "from": round(previous, 4),
            "to": round(memory.confidence, 4),
        },
    )
    return SignalResult(memory, previous, memory.confidence)


@transaction.atomic
def memory_outcome(
    *, principal: Principal, memory: Memory, succeeded: Any, session_id: Any = "", project: Project | None = None
) -> SignalResult:
    """``memory_outcome``: the task that used this memory succeeded or failed."""
    write_scope_require(principal)
    readable_require(principal, memory)
    if not isinstance(succeeded, bool):
        raise InvalidInput("succeeded must be true or false", field="succeeded")
    session_id = session_key_clean(session_id)
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    previous = memory.confidence
    signal = _signal_add(principal, memory, conf.SignalType.OUTCOME, succeeded, session_id=session_id, project=project)
    confidence_recompute([memory])
    _signal_stamp_confidence(signal, memory)
    return SignalResult(memory, previous, memory.confidence)


@transaction.atomic
def memory_stability(
    *, principal: Principal, memory: Memory, kept: bool, session_id: str, commit: str = ""
) -> SignalResult:
    """Code stability as a signal (docs/session-context.md#code-stability): the code of a session that
    was given this memory was kept for 7 days (positive) or reverted (negative). Called by
    ``session_code_report`` for each memory of the session's ledger; the commit, when the report named
    one, is kept as the comment."""
    write_scope_require(principal)
    readable_require(principal, memory)
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    previous = memory.confidence
    comment = f"commit {commit[:12]} {'kept' if kept else 'reverted'}" if commit else ""
    signal = _signal_add(principal, memory, conf.SignalType.STABILITY, kept, comment=comment, session_id=session_id)
    confidence_recompute([memory])
    _signal_stamp_confidence(signal, memory)
    return SignalResult(memory, previous, memory.confidence)


def _signal_add(
    principal: Principal,
    memory: Memory,
    signal_type: conf.SignalType,
    positive: bool,
    *,
    comment: str = "",
    session_id: str = "",
    project: Project | None = None,
) -> MemorySignal:
    signal = MemorySignal.objects.create(
        organization_id=memory.organization_id,
        memory=memory,
        project_id=project.id if project else memory.project_id,
        type=signal_type.value,
        positive=positive,
        comment=comment,
        session_id=session_id,
        actor=principal.actor_label,
    )
    # the silence time decay counts ends here (the caller holds the memory's row lock); feedback, an outcome
    # and the code's fate are uses too: the impressions since the last use start again
    # (docs/confidence.md#impressions-and-use)
    memory.last_signal_at = signal.created_at
    Memory.objects.filter(pk=memory.pk).update(last_signal_at=signal.created_at, impressions_unused=0)
    return signal


def _signal_stamp_confidence(signal: MemorySignal, memory: Memory) -> None:
    """Keep the confidence after each signal on the event, for the dashboard's history chart."""
    MemorySignal.objects.filter(pk=signal.pk).update(confidence_after=memory.confidence)


_WEIGHT_COLUMNS = tuple(field.name for field in dataclasses.fields(conf.ProjectWeights))
_COUNTS_N = len(_COUNT_FIELDS)  # the counts come first in a _USAGE_STATE_SQL row, then the weights

# one per count field, in its order: the rolled-up evidence (as time decay left it) plus the live events
_USAGE_COUNTS = ",\n       ".join(
    f"COALESCE(a.{name}_kept, a.{name}, 0) + COUNT(s.id) FILTER (WHERE s.type = '{name.rsplit('_', 1)[0]}'"
    f" AND {'' if name.endswith('_pos') else 'NOT '}s.positive)"
    for name in _COUNT_FIELDS
)

# Per memory: its signal counts (rolled-up aggregate as decay left it + live events) and its project's learned
# weights (NULL when the project has no weights row yet), in one round trip.
_USAGE_STATE_SQL = f"""
SELECT v.id,
       {_USAGE_COUNTS},
       {", ".join(f"w.{c}" for c in _WEIGHT_COLUMNS)}
FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS v(id, organization_id, project_id)
LEFT JOIN memories_memorysignalaggregate a ON a.memory_id = v.id
LEFT JOIN memories_memorysignal s ON s.memory_id = v.id
LEFT JOIN memories_projectsignalweights w
       ON w.organization_id = v.organization_id AND w.project_id IS NOT DISTINCT FROM v.project_id
GROUP BY v.id, a.memory_id, w.id
"""

_MARK_USED_SQL = """
WITH v AS (
    SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::float8[], %s::float8[], %s::float8[])
        AS v(id, organization_id, project_id, alpha, beta, confidence)
), signals AS (
    INSERT INTO memories_memorysignal
        (organization_id, memory_id, project_id, type, positive, session_id, comment, actor, confidence_after,
         created_at)
    SELECT organization_id, id, project_id, 'usage', true, %s, '', %s, confidence, %s FROM v
)
UPDATE memories_memory m
SET usage_count = m.usage_count + 1, last_used_at = %s, last_signal_at = %s, impressions_unused = 0,
    alpha = v.alpha, beta = v.beta, confidence = v.confidence
FROM v WHERE m.id = v.id
"""


def memories_mark_used(
    *,
    principal: Principal,
    memories: Sequence[Any],
    project: Project | None,
    write_behind: bool = False,
    session_id: str = "",
) -> None:
    """Usage signals for memories returned by a search (a usage signal and ``usage_count``,
    docs/search.md#usage-signals), with each memory's confidence recomputed; ``memories`` are ``Memory``
    instances or search rows, and are updated in place. Set-based SQL: this runs on every agent search.
    With ``write_behind`` (a search) the write happens after the caller has answered, when another
    pooled connection can take it (``reasoningbank.db_threads``): one statement less on the request
    path; written inline instead, a failure is logged and counted and the search still answers. ``session_id``:
    the agent session whose use it was, kept on the signals."""
    if not memories:
        return
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _USAGE_STATE_SQL,
            [[m.id for m in memories], [m.organization_id for m in memories], [m.project_id for m in memories]],
        )
        state_rows = {row[0]: row[1:] for row in cursor.fetchall()}
    weights: dict[tuple[int, int | None], conf.Weights] = {}
    columns: list[list[Any]] = [[], [], [], [], [], []]
    for memory in memories:
        row = state_rows[memory.id]
        key = (memory.organization_id, memory.project_id)
        if key not in weights:
            learned = row[_COUNTS_N:]
            weights[key] = (
                conf.ProjectWeights(*learned) if learned[0] is not None else _project_weights(_weights_row(memory))
            ).compute_weights()
        with_use = conf.SignalCounts(*row[:_COUNTS_N]) + conf.SignalCounts(usage_pos=1)
        state = conf.confidence_compute(memory.prior_alpha, memory.prior_beta, with_use, [], weights[key])
        memory.alpha, memory.beta, memory.confidence = state.alpha, state.beta, state.score
        memory.usage_count += 1
        memory.last_used_at = now
        signal_project = project.id if project else memory.project_id
        for column, value in zip(
            columns,
            (memory.id, memory.organization_id, signal_project, state.alpha, state.beta, state.score),
            strict=True,
        ):
            column.append(value)
    arguments = [*columns, session_id, principal.actor_label, now, now, now]
    if not write_behind:
        usage_write(arguments)  # part of the caller's transaction (distillation's reinforcement)
        return
    # a read's bookkeeping (a search, a read naming its session): nobody reads it back at once, so it
    # keeps no later read of the request off the replica (docs/operations.md#a-read-replica)
    with writes_untracked():
        if not (other_connections_usable() and db_write_behind(usage_signals_write, arguments)):
            usage_signals_write(arguments)


def usage_write(arguments: list[Any]) -> None:
    """One search's usage signals in one transaction: the memories locked in id order (so writers of
    overlapping memories queue instead of deadlocking: ``memories.locks``), their signal rows
    inserted, their counters and confidence updated. Raises what the database raised."""
    with transaction.atomic(), connection.cursor() as cursor:
        # a usage signal lost in a crash costs nothing; waiting for its fsync costs every search
        cursor.execute("SET LOCAL synchronous_commit TO OFF")
        memories_lock(arguments[0])
        cursor.execute(_MARK_USED_SQL, arguments)
    written = len(arguments[0])
    # counted once committed: inside a caller's transaction that may still roll back
    transaction.on_commit(lambda: USAGE_SIGNALS.labels(outcome="written").inc(written))


# SQLSTATEs of a write that lost a race and may simply be tried again: serialization_failure,
# deadlock_detected, lock_not_available
_RETRY_SQLSTATES = frozenset({"40001", "40P01", "55P03"})


def _retry_reason(exc: BaseException) -> str | None:
    """Why a failed usage write is worth another try (a metric label), or None when it is not."""
    sqlstate = next((s for e in (exc, exc.__cause__) if (s := getattr(e, "sqlstate", None))), None)
    if sqlstate in _RETRY_SQLSTATES:
        return "deadlock" if sqlstate == "40P01" else "serialization" if sqlstate == "40001" else "lock"
    if database_unavailable(exc):  # no pooled connection in time, a lost connection, a restart
        return "database_unavailable"
    return None


def usage_signals_write(arguments: list[Any]) -> None:
    """A search's usage write after (or beside) its answer: a write that lost a race or found no
    connection is tried again, up to ``USAGE_WRITE_ATTEMPTS`` times with jittered exponential backoff
    from ``USAGE_WRITE_RETRY_DELAY``. One that still fails is logged (ERROR) and its signals counted
    as dropped (``reasoningbank_usage_signals_total{outcome="dropped"}``): never lost silently, and
    never failing the search, which has its answer already. Never raises."""
    attempts = max(1, int(settings.USAGE_WRITE_ATTEMPTS))
    count = len(arguments[0])
    for attempt in range(1, attempts + 1):
        try:
            usage_write(arguments)
            return
        except Exception as exc:
            reason = _retry_reason(exc)
            # a broken connection is given back (a fresh one next try); inside a caller's transaction
            # only the write's own savepoint was undone, and only a lost race is worth trying again
            if reason == "database_unavailable" and connection.in_atomic_block:
                reason = None
            if reason is None or attempt == attempts:
                logger.error(
                    "usage write of %d memories failed after %d attempt%s: %d usage signals dropped (%s: %s); "
                    "the search answered without them",
                    count,
                    attempt,
                    "" if attempt == 1 else "s",
                    count,
                    type(exc).__name__,
                    exc,
                    exc_info=reason is None,  # an unexpected failure: its traceback
                )
                USAGE_WRITE_FAILURES.inc()
                USAGE_SIGNALS.labels(outcome="dropped").inc(count)
                return
            USAGE_WRITE_RETRIES.labels(reason=reason).inc()
            if reason == "database_unavailable" and not connection.in_atomic_block:
                connection.close()
            delay = float(settings.USAGE_WRITE_RETRY_DELAY) * 2 ** (attempt - 1) * random.uniform(0.5, 1.5)
            logger.info(
                "usage write of %d memories: attempt %d failed (%s), retrying in %.2f s", count, attempt, reason, delay
            )
            time.sleep(delay)


# --- rollup ----------------------------------------------------------------------------------------


def signals_rollup(*, now: Any = None, batch: int = 5000) -> dict[str, int]:
    """The daily rollup: fold events older than 30 days into aggregates, delete them, and
    recompute the affected memories' confidence (with the current learned weights)."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=conf.SIGNAL_EVENT_RETENTION_DAYS)
    folded = memories_touched = 0
    while True:
        with transaction.atomic():
            ids = list(
                MemorySignal.objects.filter(created_at__lt=cutoff).order_by("id").values_list("id", flat=True)[:batch]
            )
            if not ids:
                break
            rows = (
                MemorySignal.objects.filter(id__in=ids)
                .values("memory_id", "organization_id", "type", "positive")
                .annotate(n=Count("id"))
                .order_by()
            )
            per_memory: dict[str, dict[str, Any]] = {}
            for row in rows:
                entry = per_memory.setdefault(row["memory_id"], {"organization_id": row["organization_id"]})
                key = f"{row['type']}_{'pos' if row['positive'] else 'neg'}"
                entry[key] = entry.get(key, 0) + row["n"]
            for memory_id, entry in sorted(per_memory.items()):  # locked in id order (memories.locks)
                org_id = entry.pop("organization_id")
                agg, _ = MemorySignalAggregate.objects.select_for_update().get_or_create(
                    memory_id=memory_id, defaults={"organization_id": org_id}
                )
                for key, n in entry.items():
                    setattr(agg, key, getattr(agg, key) + n)
                    # a decayed aggregate's evidence grows by the new events at full weight
                    if (kept := getattr(agg, f"{key}_kept")) is not None:
                        setattr(agg, f"{key}_kept", kept + n)
                agg.last_rollup = now
                agg.save()
            MemorySignal.objects.filter(id__in=ids).delete()
            confidence_recompute(list(Memory.objects.filter(pk__in=list(per_memory))))
            folded += len(ids)
            memories_touched += len(per_memory)
    return {"folded": folded, "memories": memories_touched}


_KEPT_DECAY = ",\n    ".join(
    f"{name}_kept = COALESCE(a.{name}_kept, a.{name}) * power(%(per_day)s, owed.days)" for name in _COUNT_FIELDS
)

# Time decay, one batch of aggregates in memory-id order (keyset: ``after``): the whole UTC days
# a memory has been silent past the grace and not yet decayed — counted from the later of the day decay was
# last applied and its last signal's day plus the grace — each keep ``per_day`` of its evidence. A memory
# with no ``last_signal_at`` (an aggregate written before the column, or imported without it) counts from
# its last rollup less the 30 days the log keeps events: its newest rolled-up signal is no younger.
_DECAY_SQL = f"""
WITH owed AS (
    SELECT a.memory_id, a.decayed_at,
           %(today)s::date - GREATEST(
               (a.decayed_at AT TIME ZONE 'UTC')::date,
               (COALESCE(m.last_signal_at, a.last_rollup - %(retention)s) AT TIME ZONE 'UTC')::date + %(grace)s
           ) AS days
    FROM memories_memorysignalaggregate a
    JOIN memories_memory m ON m.id = a.memory_id
    WHERE a.memory_id > %(after)s
), due AS (
    SELECT memory_id, decayed_at, days FROM owed WHERE days > 0 ORDER BY memory_id LIMIT %(batch)s
)
UPDATE memories_memorysignalaggregate a
SET {_KEPT_DECAY},
    decayed_at = %(now)s
FROM due AS owed
-- a concurrent run that decayed the row first changed decayed_at: the row is left to it, never decayed twice
WHERE a.memory_id = owed.memory_id AND a.decayed_at IS NOT DISTINCT FROM owed.decayed_at
RETURNING a.memory_id
"""


def signals_decay(*, now: datetime | None = None, batch: int = 5000) -> int:
    """Time decay as a decay of the Beta evidence, stored (docs/confidence.md#time-decay): the evidence
    of every memory silent for longer than ``CONFIDENCE_DECAY_GRACE_DAYS`` keeps
    ``CONFIDENCE_DECAY_PER_DAY`` for each such whole UTC day (``confidence.evidence_kept``).

    Applied to the aggregate's ``*_kept`` counts and remembered (``decayed_at``): run twice in a day it
    decays once, after missed days it catches up exactly, and a later signal adds to what is left instead
    of bringing the old evidence back. Only the rolled-up evidence decays: the grace is at least the 30
    days the log keeps events, so a silent memory has no live ones. Confidences are recomputed by the
    daily job right after (``confidence_recompute_all``). Returns how many aggregates decayed."""
    per_day = settings.CONFIDENCE_DECAY_PER_DAY
    if per_day >= 1.0:  # decay turned off
        return 0
    now = now or timezone.now()
    params: dict[str, Any] = {
        "today": now.astimezone(UTC).date(),
        "grace": settings.CONFIDENCE_DECAY_GRACE_DAYS,
        "retention": timedelta(days=conf.SIGNAL_EVENT_RETENTION_DAYS),
        "per_day": per_day,
        "now": now,
        "batch": batch,
    }
    decayed = 0
    after = ""
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_DECAY_SQL, {**params, "after": after})
            ids = [row[0] for row in cursor.fetchall()]
        if not ids:
            return decayed
        decayed += len(ids)
        after = max(ids)


def confidence_recompute_all(*, batch: int = 2000) -> int:
    """Recompute every memory's confidence with the current learned weights (daily, after the rollup and
    the decay)."""
    done = 0
    last = ""
    while True:
        chunk = list(
            Memory.objects.filter(pk__gt=last)
            .order_by("pk")
            .only("id", "organization_id", "project_id", "prior_alpha", "prior_beta", "alpha", "beta", "confidence")[
                :batch
            ]
        )
        if not chunk:
            return done
        with transaction.atomic():
            confidence_recompute(chunk)
        done += len(chunk)
        last = chunk[-1].pk
