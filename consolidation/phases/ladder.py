"""The ladder: the promotion ladder (docs/consolidation.md#the-promotion-ladder) — semantic → episodic
and episodic → procedural (working → semantic is the patterns phase's). ``consolidation.ladder``
decides; this phase loads the project's candidates, and writes every promotion of the cycle in one
transaction (all of a run's promotions happen, or none), retried on a serialization failure or a
deadlock (a lost race, which the same work may win next time), and logs the consolidation events
(counts and ids only, never memory text).

A fact promoted in place keeps its row: its kind, importance and provenance (``promoted_from``,
``promoted_at``, ``promotion_reason``) change. A pattern makes a new memory of the next kind that links
``references`` to each memory it was seen in (its sources are flagged, never deleted; the link is that
flag: a memory a promotion already read is not read again). Each promotion writes one
``memory.promote`` audit row, which the history of the promoted memory and of its sources shows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from statistics import fmean

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q

from accounts.services import audit_record
from consolidation import ladder
from consolidation.phases.conflicts import edges_without_conflicts
from consolidation.phases.registry import RunCounter, phase_register
from consolidation.retention import importance_for_kind
from consolidation.run_state import RunState, draft_refused, link_add, pair_key
from consolidation.selectors import Edge
from consolidation.validation import tags_lenient
from memories.models import Memory, MemoryLink, MemorySignal, MemorySignalAggregate
from memories.writes import (
    HOW_PROMOTED,
    MemoryDraft,
    ProvenanceInput,
    embed_texts,
    memories_create,
    memories_lock_active,
    memory_embedding_text,
)
from reasoningbank.errors import LimitExceeded

logger = logging.getLogger("consolidation")


@phase_register(
    name="ladder",
    order=90,
    description="the promotion ladder: semantic → episodic → procedural, all in one transaction",
    counters=(
        # facts promoted in place + new episodic memories from patterns
        RunCounter(
            "promoted_episodic", "promoted_episodic", "Semantic memories promoted to episodic (the promotion ladder)",
            dry_run_label="Would promote to episodic",
        ),
        RunCounter(
            "promoted_procedural", "promoted_procedural", "Procedural memories made from episodic patterns",
            dry_run_label="Would promote to procedural",
        ),
    ),
)
def ladder_step(state: RunState) -> None:
    ladder_promote(state, state.edges)

PROMOTE_VERB = "memory.promote"
# serialization_failure and deadlock_detected: the transaction lost a race, the same work may succeed
TRANSIENT_SQLSTATES = frozenset({"40001", "40P01"})
LIST_TITLES = 20  # of a pattern's sources listed in the new memory's text
CONTENT_MAX = 20000


def ladder_criteria() -> ladder.LadderCriteria:
    return ladder.LadderCriteria(
        episodic_min_confidence=settings.CONSOLIDATION_LADDER_EPISODIC_MIN_CONFIDENCE,
        episodic_min_age=timedelta(seconds=settings.CONSOLIDATION_LADDER_EPISODIC_MIN_AGE),
        pattern_min_facts=settings.CONSOLIDATION_LADDER_PATTERN_MIN_FACTS,
        pattern_window=timedelta(seconds=settings.CONSOLIDATION_LADDER_PATTERN_WINDOW),
        procedural_min_observations=settings.CONSOLIDATION_LADDER_PROCEDURAL_MIN_OBSERVATIONS,
        procedural_window=timedelta(seconds=settings.CONSOLIDATION_LADDER_PROCEDURAL_WINDOW),
        procedural_min_success=settings.CONSOLIDATION_LADDER_PROCEDURAL_MIN_SUCCESS,
        similarity=settings.CONSOLIDATION_LADDER_SIMILARITY,
    )


def transient_error(exc: BaseException) -> bool:
    """A database error worth retrying: Django's error carries the driver's as its cause."""
    return any(getattr(e, "sqlstate", None) in TRANSIENT_SQLSTATES for e in (exc, exc.__cause__))


@dataclass
class LadderPlan:
    in_place: list[ladder.InPlace] = field(default_factory=list)
    fact_patterns: list[ladder.Pattern] = field(default_factory=list)
    procedures: list[ladder.Pattern] = field(default_factory=list)


@dataclass(frozen=True)
class NewMemory:
    """A pattern's new memory, drafted and embedded before the transaction."""

    pattern: ladder.Pattern
    from_kind: str
    draft: MemoryDraft
    vector: list[float]
    confidence: float
    members: list[Memory]  # the pattern's sources (its provenance lists them)


def ladder_promote(state: RunState, edges: list[Edge]) -> None:
    """Plan the cycle's promotions, then write them all or none; a lost race is retried."""
    criteria = ladder_criteria()
    attempts = settings.CONSOLIDATION_LADDER_ATTEMPTS
    slug = state.project.slug
    for attempt in range(1, attempts + 1):
        plan = ladder_plan(state, edges, criteria)
        if state.dry:
            _preview(state, plan)
            return
        drafted = _drafts(state, plan)
        try:
            with transaction.atomic():
                created = _apply(state, plan, drafted)
        except Exception as exc:
            # the reason is the error's class and SQLSTATE: a database message may quote a row's text
            reason = f"{type(exc).__name__}" + (f" (SQLSTATE {_sqlstate(exc)})" if _sqlstate(exc) else "")
            if transient_error(exc) and attempt < attempts:
                delay = settings.CONSOLIDATION_LADDER_RETRY_DELAY * attempt
                logger.warning(
                    "Consolidation attempt %d failed: %s. Retrying in %g seconds... Project: %s, run: %s",
                    attempt, reason, delay, slug, state.run.id,
                )  # fmt: skip
                time.sleep(delay)
                state.check_time()
                continue
            logger.error(
                "Consolidation transaction failed: %s. Rolled back all changes. Project: %s, run: %s",
                reason, slug, state.run.id,
            )  # fmt: skip
            if transient_error(exc):
                logger.error(
                    "Consolidation failed after %d attempts. Project: %s, run: %s", attempts, slug, state.run.id
                )
            raise
        _report(state, created)
        return


# --- the plan ------------------------------------------------------------------------------------------


def ladder_plan(state: RunState, edges: list[Edge], criteria: ladder.LadderCriteria) -> LadderPlan:
    """What this cycle would promote in the run's project (reads only)."""
    org, now = state.run.organization, state.now
    edges = _agreeing(state, edges)
    active = Memory.objects.filter(organization=org, project=state.project, state=Memory.STATE_ACTIVE)
    # a superset the criteria then decide on: a fact promoted in place must be this confident, a fact
    # of a pattern this recent
    facts = [
        ladder.Candidate(mid, created_at, confidence, outcome)
        for mid, created_at, confidence, outcome in active.filter(kind=Memory.KIND_SEMANTIC)
        .filter(Q(confidence__gt=criteria.episodic_min_confidence) | Q(created_at__gt=now - criteria.pattern_window))
        .order_by("created_at", "id")
        .values_list("id", "created_at", "confidence", "outcome")
    ]
    in_place = ladder.facts_in_place(facts, now, criteria)
    promoted = {p.id for p in in_place}
    read_by_patterns = _pattern_sources(state, Memory.KIND_SEMANTIC)
    fact_patterns = ladder.fact_patterns(
        [f for f in facts if f.id not in promoted and f.id not in read_by_patterns], edges, now, criteria
    )
    # the facts promoted in place this cycle are events from now on (episodic → procedural comes second)
    events = [
        (mid, created_at, confidence, outcome)
        for mid, created_at, confidence, outcome in active.filter(
            kind=Memory.KIND_EPISODIC, created_at__gt=now - criteria.procedural_window
        )
        .order_by("created_at", "id")
        .values_list("id", "created_at", "confidence", "outcome")
    ]
    events += [(f.id, f.created_at, f.confidence, f.outcome) for f in facts if f.id in promoted]
    read_by_procedures = _pattern_sources(state, Memory.KIND_EPISODIC)
    events = [e for e in events if e[0] not in read_by_procedures]
    counts = _outcome_counts([e[0] for e in events])
    candidates = [
        ladder.Candidate(mid, created_at, confidence, outcome, *counts.get(mid, (0, 0)))
        for mid, created_at, confidence, outcome in events
    ]
    procedures = ladder.event_patterns(candidates, edges, now, criteria)
    return LadderPlan(in_place, fact_patterns, procedures)


def _agreeing(state: RunState, edges: list[Edge]) -> list[Edge]:
    """The graph without the pairs that disagree: conflict cues (``phases.conflicts``) or a contradiction
    nobody resolved yet. Memories that contradict each other are no pattern."""
    disputed = {
        pair_key(a, b)
        for a, b in MemoryLink.objects.filter(
            organization=state.run.organization,
            kind=MemoryLink.KIND_CONTRADICTS,
            resolved_at__isnull=True,
            source__project=state.project,
        ).values_list("source_id", "target_id")
    }
    return [e for e in edges_without_conflicts(state, edges) if pair_key(e[0], e[1]) not in disputed]


def _pattern_sources(state: RunState, kind: str) -> set[str]:
    """The project's memories a pattern promotion from ``kind`` already read (linked from its memory)."""
    return set(
        MemoryLink.objects.filter(
            organization=state.run.organization,
            kind=MemoryLink.KIND_REFERENCES,
            source__promoted_from=kind,
            target__project=state.project,
        ).values_list("target_id", flat=True)
    )


def _outcome_counts(memory_ids: list[str]) -> dict[str, tuple[int, int]]:
    """(positive, negative) outcome signals of each memory: rolled-up counts plus the event log."""
    counts: dict[str, list[int]] = {}
    for mid, pos, neg in MemorySignalAggregate.objects.filter(memory_id__in=memory_ids).values_list(
        "memory_id", "outcome_pos", "outcome_neg"
    ):
        counts[mid] = [pos, neg]
    for mid, positive, n in (
        MemorySignal.objects.filter(memory_id__in=memory_ids, type=MemorySignal.TYPE_OUTCOME)
        .values("memory_id", "positive")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("memory_id", "positive", "n")
    ):
        counts.setdefault(mid, [0, 0])[0 if positive else 1] += n
    return {mid: (pos, neg) for mid, (pos, neg) in counts.items()}


# --- a pattern's new memory ------------------------------------------------------------------------------


def _drafts(state: RunState, plan: LadderPlan) -> list[NewMemory]:
    """The new memories of the plan's patterns, past the write gate and embedded (outside the transaction:
    an embedder call must not hold the rows' locks)."""
    patterns = [(p, Memory.KIND_SEMANTIC) for p in plan.fact_patterns] + [
        (p, Memory.KIND_EPISODIC) for p in plan.procedures
    ]
    if not patterns:
        return []
    sources = {
        m.id: m
        for m in Memory.objects.filter(
            organization=state.run.organization,
            project=state.project,
            pk__in=[mid for p, _ in patterns for mid in p.member_ids],
        ).only("id", "organization_id", "title", "content", "tags", "outcome", "confidence", "trust", "created_at")
    }
    kept: list[tuple[ladder.Pattern, str, MemoryDraft, float, list[Memory]]] = []
    for pattern, from_kind in patterns:
        members = [sources[mid] for mid in pattern.member_ids if mid in sources]
        if len(members) != len(pattern.member_ids):
            continue  # a source went away since the plan was read
        draft, confidence = (
            _episode_draft(members) if from_kind == Memory.KIND_SEMANTIC else _procedure_draft(members, pattern)
        )
        if draft_refused(state, draft, source="ladder", prompts=()):
            continue
        kept.append((pattern, from_kind, draft, confidence, members))
    if not kept:
        return []
    vectors, _ = embed_texts([memory_embedding_text(d.title, d.description, d.content) for _, _, d, _, _ in kept])
    return [
        NewMemory(pattern, from_kind, draft, vector, confidence, members)
        for (pattern, from_kind, draft, confidence, members), vector in zip(kept, vectors, strict=True)
    ]


def _episode_draft(members: list[Memory]) -> tuple[MemoryDraft, float]:
    """The event a pattern of facts makes: the most trusted fact's text, with the facts it was seen in;
    trusted as they were on average."""
    lead = max(members, key=lambda m: (m.confidence, m.created_at))
    draft = MemoryDraft(
        title=f"Recurring: {lead.title}"[:200],
        description=f"Seen in {len(members)} similar semantic facts between {_span(members)}",
        content=_with_sources(lead.content, "The facts it was seen in:", [f"- {m.title}" for m in members]),
        outcome=lead.outcome,
        tags=tags_lenient([tag for m in members for tag in m.tags]),
        kind=Memory.KIND_EPISODIC,
    )
    return draft, fmean(m.confidence for m in members)


def _procedure_draft(members: list[Memory], pattern: ladder.Pattern) -> tuple[MemoryDraft, float]:
    """The procedure a pattern of events makes: the latest event's text (what was done last), the events
    it was learned from; trusted as its events succeeded."""
    latest = members[-1]
    draft = MemoryDraft(
        title=f"Learned: {latest.title}"[:200],
        description=(
            f"Learned from {len(members)} episodic memories between {_span(members)}: {pattern.successes} "
            f"successes, {pattern.failures} failures, average success {pattern.average_success:.2f}"
        ),
        content=_with_sources(latest.content, "Observed in:", [f"- {m.title} ({m.outcome})" for m in members]),
        outcome=Memory.OUTCOME_SUCCESS,
        tags=tags_lenient([tag for m in members for tag in m.tags]),
        kind=Memory.KIND_PROCEDURAL,
    )
    return draft, pattern.average_success


def _span(members: list[Memory]) -> str:
    first, last = min(m.created_at for m in members), max(m.created_at for m in members)
    return f"{first:%Y-%m-%d} and {last:%Y-%m-%d}"


def _with_sources(text: str, heading: str, lines: list[str]) -> str:
    listed = lines[:LIST_TITLES] + ([f"- … and {len(lines) - LIST_TITLES} more"] if len(lines) > LIST_TITLES else [])
    tail = "\n\n" + heading + "\n" + "\n".join(listed)
    return text[: CONTENT_MAX - len(tail)] + tail


# --- the transaction --------------------------------------------------------------------------------------


@dataclass
class Applied:
    in_place: list[str] = field(default_factory=list)
    episodes: list[str] = field(default_factory=list)  # new episodic memories from patterns of facts
    procedures: list[str] = field(default_factory=list)


def _apply(state: RunState, plan: LadderPlan, drafted: list[NewMemory]) -> Applied:
    """Every write of the ladder for this cycle; the caller holds the one transaction. Rows another
    process archived or changed since the plan was read are left alone (their promotion waits)."""
    involved = {p.id for p in plan.in_place} | {mid for new in drafted for mid in new.pattern.member_ids}
    live = set(memories_lock_active(sorted(involved)))
    kinds = dict(Memory.objects.filter(pk__in=live).values_list("id", "kind"))
    in_place = [p for p in plan.in_place if kinds.get(p.id) == Memory.KIND_SEMANTIC]
    now_events = {p.id for p in in_place}
    done = Applied(in_place=[p.id for p in in_place])
    memories_promote_in_place(
        state, in_place, from_kind=Memory.KIND_SEMANTIC, to_kind=Memory.KIND_EPISODIC, criterion="confidence_and_age"
    )
    for new in drafted:
        if not _sources_unchanged(new, kinds, now_events):
            continue
        try:
            (memory,) = memories_create(
                principal=state.principal,
                drafts=[new.draft],
                project=state.project,
                origin=Memory.ORIGIN_EXTRACTED,
                initial_confidence=min(max(new.confidence, 0.05), 0.95),
                vectors=[new.vector],
                provenance=ProvenanceInput(how=HOW_PROMOTED, run_id=state.run.id, sources=new.members),
            )
        except LimitExceeded as exc:  # a read: the transaction is intact, the promotions so far stand
            state.warnings.append(f"ladder: {exc.message}; the remaining patterns wait")
            break
        reason = new.pattern.reason[:500]
        Memory.objects.filter(pk=memory.pk).update(
            promoted_from=new.from_kind, promoted_at=state.now, promotion_reason=reason
        )
        link_reason = f"pattern source ({new.from_kind} → {new.draft.kind})"
        for mid in new.pattern.member_ids:
            link_add(state, memory.id, mid, MemoryLink.KIND_REFERENCES, new.pattern.average_similarity, link_reason)
        audit_record(
            organization=state.run.organization,
            actor=state.principal,
            verb=PROMOTE_VERB,
            target=memory,
            data={
                "from": new.from_kind,
                "to": new.draft.kind,
                "criterion": "pattern",
                "reason": reason,
                "title": memory.title,
                "sources": list(new.pattern.member_ids),
                "run": state.run.id,
            },
        )
        (done.episodes if new.draft.kind == Memory.KIND_EPISODIC else done.procedures).append(memory.id)
    return done


def memories_promote_in_place(
    state: RunState, promotions: Sequence[ladder.InPlace], *, from_kind: str, to_kind: str, criterion: str
) -> None:
    """Change these memories' kind in place with their provenance (the new kind's importance; no TTL) and
    write one ``memory.promote`` audit row each. The caller holds the transaction and the rows' locks."""
    if not promotions:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory m SET kind = %s, importance = %s, expires_at = NULL, promoted_from = %s, "
            "promoted_at = %s, promotion_reason = v.r FROM unnest(%s::text[], %s::text[]) AS v(id, r) "
            "WHERE m.id = v.id",
            [
                to_kind,
                importance_for_kind(to_kind),
                from_kind,
                state.now,
                [p.id for p in promotions],
                [p.reason[:500] for p in promotions],
            ],
        )
    targets = Memory.objects.only("id", "title").in_bulk([p.id for p in promotions])
    for promotion in promotions:
        audit_record(
            organization=state.run.organization,
            actor=state.principal,
            verb=PROMOTE_VERB,
            target=targets[promotion.id],
            data={
                "from": from_kind,
                "to": to_kind,
                "criterion": criterion,
                "reason": promotion.reason,
                "title": targets[promotion.id].title,
                "run": state.run.id,
            },
        )


def _sources_unchanged(new: NewMemory, kinds: dict[str, str], now_events: set[str]) -> bool:
    """Whether every source of a pattern is still active and of the kind the plan read (a fact this
    cycle promoted in place counts as an event)."""
    if new.from_kind == Memory.KIND_SEMANTIC:
        return all(kinds.get(mid) == Memory.KIND_SEMANTIC for mid in new.pattern.member_ids)
    return all(kinds.get(mid) == Memory.KIND_EPISODIC or mid in now_events for mid in new.pattern.member_ids)


# --- counters, preview, log --------------------------------------------------------------------------------


def _report(state: RunState, done: Applied) -> None:
    state.counters["promoted_episodic"] = len(done.in_place) + len(done.episodes)
    state.counters["promoted_procedural"] = len(done.procedures)
    state.created += done.episodes + done.procedures
    logger.info(
        "Promoted %d semantic facts to episodic events (%d in place, %d new from patterns). Project: %s, run: %s",
        len(done.in_place) + len(done.episodes), len(done.in_place), len(done.episodes), state.project.slug,
        state.run.id,
    )  # fmt: skip
    logger.info(
        "Created %d procedural patterns from episodic events. Project: %s, run: %s",
        len(done.procedures), state.project.slug, state.run.id,
    )  # fmt: skip


def _preview(state: RunState, plan: LadderPlan) -> None:
    """A dry run: what a real run would promote, nothing written."""
    for promotion in plan.in_place:
        state.note(
            "ladder",
            {
                "from": Memory.KIND_SEMANTIC,
                "to": Memory.KIND_EPISODIC,
                "memory": promotion.id,
                "reason": promotion.reason,
            },
        )
    for pattern in plan.fact_patterns:
        state.note("ladder", _pattern_note(pattern, Memory.KIND_SEMANTIC, Memory.KIND_EPISODIC))
    for pattern in plan.procedures:
        state.note("ladder", _pattern_note(pattern, Memory.KIND_EPISODIC, Memory.KIND_PROCEDURAL))
    state.counters["promoted_episodic"] = len(plan.in_place) + len(plan.fact_patterns)
    state.counters["promoted_procedural"] = len(plan.procedures)
    logger.info(
        "Dry run: would promote %d semantic facts to episodic events (%d in place, %d from patterns) and create "
        "%d procedural patterns from episodic events. Project: %s, run: %s",
        len(plan.in_place) + len(plan.fact_patterns), len(plan.in_place), len(plan.fact_patterns),
        len(plan.procedures), state.project.slug, state.run.id,
    )  # fmt: skip


def _pattern_note(pattern: ladder.Pattern, from_kind: str, to_kind: str) -> dict[str, object]:
    return {"from": from_kind, "to": to_kind, "sources": list(pattern.member_ids), "reason": pattern.reason}


def _sqlstate(exc: BaseException) -> str:
    for error in (exc, exc.__cause__):
        state = getattr(error, "sqlstate", None)
        if state:
            return str(state)
    return ""
