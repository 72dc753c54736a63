"""The promotion ladder (docs/consolidation.md#the-promotion-ladder), free of Django: which semantic
facts become episodic events and which recurring episodic events become procedures.
``consolidation.phases.ladder`` loads the candidates and applies what is decided here in the cycle's one
transaction.

The criteria, written as conditions over a project's memories:

* semantic → episodic, either
  - one fact: ``confidence > 0.8 AND created_at < NOW() - 2 hours`` — promoted in place (its kind
    changes, its provenance is recorded), or
  - a pattern: ``similarity > 0.85 AND created_at > NOW() - 7 days``, ``HAVING COUNT(*) >= 3`` — a new
    episodic memory that links to the facts it was seen in.
* episodic → procedural: events of one pattern ``occurred_at > NOW() - 30 days``,
  ``HAVING COUNT(*) >= 3``, ``AVG(success) > 0.6`` and ``success_count > failure_count`` with
  ``success_count = ROUND(n × avg)`` and ``failure_count = ROUND(n × (1 − avg))`` — a new procedural
  memory that links to the events.

Every comparison is strict where it reads ``>`` or ``<`` and inclusive where it reads ``>=``.
"Similar" is average-linkage clustering over the run's neighbour graph (``consolidation.clustering``),
the way the cycle groups memories everywhere else, at ``LadderCriteria.similarity``: a fixed cosine
such as 0.85 means different things for different embedders, so the setting follows the calibrated
cluster threshold (docs/decisions.md#thresholds-calibrated-per-embedder). Memories carry no event
type: the events of one pattern are the similar ones. Whether an agent "learned a behaviour" would
need a reader; recurring similar events with more successes than failures are what we can measure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from consolidation import clustering

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# An event's success (a number from 0 to 1), from what we store. An episodic memory says how its event
# went when it is recorded (``outcome``: success, mixed, failure → 1, 0.5, 0); every outcome signal
# reported for it later (``memory_outcome``: a task that applied it succeeded or failed, rolled-up
# counts included) is one more report (1 or 0). Its success is the mean of all those reports, so the
# recorded outcome counts once and evidence outweighs it as it comes in.
RECORDED_OUTCOME_SUCCESS: Final = {"success": 1.0, "mixed": 0.5, "failure": 0.0}


@dataclass(frozen=True)
class LadderCriteria:
    """The ladder's criteria (the defaults) — settings ``CONSOLIDATION_LADDER_*`` in a running server."""

    episodic_min_confidence: float = 0.8  # a fact above it ...
    episodic_min_age: timedelta = timedelta(hours=2)  # ... and older than this is promoted in place
    pattern_min_facts: int = 3  # this many similar facts ...
    pattern_window: timedelta = timedelta(days=7)  # ... created within this window form a pattern
    procedural_min_observations: int = 3  # this many similar events ...
    procedural_window: timedelta = timedelta(days=30)  # ... within this window ...
    procedural_min_success: float = 0.6  # ... with an average success above this become a procedure
    similarity: float = 0.85


@dataclass(frozen=True)
class Candidate:
    """An active memory of the project as the ladder reads it."""

    id: str
    created_at: datetime
    confidence: float = 0.5
    outcome: str = "success"
    outcome_pos: int = 0  # outcome signals reported for it (event log and rolled-up counts)
    outcome_neg: int = 0


@dataclass(frozen=True)
class InPlace:
    """One fact promoted in place (semantic → episodic)."""

    id: str
    reason: str


@dataclass(frozen=True)
class Pattern:
    """Similar memories of one kind that make a new memory of the next kind. ``member_ids`` oldest
    first; the success figures are operation 3's (zero for a pattern of facts)."""

    member_ids: tuple[str, ...]
    average_similarity: float
    reason: str
    successes: int = 0
    failures: int = 0
    average_success: float = 0.0


@dataclass(frozen=True)
class Tally:
    """Operation 3's figures of one pattern of events."""

    observations: int
    successes: int
    failures: int
    average_success: float


# --- the criteria, one decision each ----------------------------------------------------------------


def within(created_at: datetime, now: datetime, window: timedelta) -> bool:
    """``created_at > now - window``: strictly inside the window."""
    return created_at > now - window


def fact_promotion_reason(candidate: Candidate, now: datetime, criteria: LadderCriteria) -> str | None:
    """Operation 2, one fact: why it becomes an episodic event (``confidence > 0.8`` and older than
    2 hours, both strict), or None."""
    age = now - candidate.created_at
    if candidate.confidence > criteria.episodic_min_confidence and age > criteria.episodic_min_age:
        return (
            f"confidence {_above(candidate.confidence, criteria.episodic_min_confidence)} > "
            f"{_figure(criteria.episodic_min_confidence)} and age {_duration_above(age, criteria.episodic_min_age)} > "
            f"{_duration(criteria.episodic_min_age)}"
        )
    return None


def event_success(candidate: Candidate) -> float:
    """An event's success from its recorded outcome and outcome signals (see RECORDED_OUTCOME_SUCCESS)."""
    recorded = RECORDED_OUTCOME_SUCCESS.get(candidate.outcome, 0.5)
    return (recorded + candidate.outcome_pos) / (1 + candidate.outcome_pos + candidate.outcome_neg)


def success_tally(successes: Sequence[float]) -> Tally:
    """Operation 3's figures: the average success and the counts it implies, rounded as PostgreSQL's
    ``ROUND`` does (half away from zero; Python's ``round`` would round 2.5 to 2)."""
    n = len(successes)
    if n == 0:
        return Tally(0, 0, 0, 0.0)
    average = math.fsum(successes) / n
    return Tally(n, _round_half_up(n * average), _round_half_up(n * (1 - average)), average)


def procedural_promotion_reason(tally: Tally, criteria: LadderCriteria) -> str | None:
    """Operation 3: why a pattern of events becomes a procedure — at least 3 observations, more
    successes than failures and an average success above 0.6 — or None."""
    if (
        tally.observations >= criteria.procedural_min_observations
        and tally.successes > tally.failures
        and tally.average_success > criteria.procedural_min_success
    ):
        return (
            f"observed {tally.observations} times within {_duration(criteria.procedural_window)}: "
            f"{tally.successes} successes > {tally.failures} failures, average success "
            f"{_above(tally.average_success, criteria.procedural_min_success)} > "
            f"{_figure(criteria.procedural_min_success)}"
        )
    return None


# --- the plan of one cycle ---------------------------------------------------------------------------


def facts_in_place(facts: Iterable[Candidate], now: datetime, criteria: LadderCriteria) -> list[InPlace]:
    """The facts promoted in place, in the order given."""
    promoted = []
    for fact in facts:
        reason = fact_promotion_reason(fact, now, criteria)
        if reason is not None:
            promoted.append(InPlace(fact.id, reason))
    return promoted


def fact_patterns(
    facts: Sequence[Candidate], edges: Iterable[clustering.Edge[str]], now: datetime, criteria: LadderCriteria
) -> list[Pattern]:
    """Operation 2's patterns: groups of at least ``pattern_min_facts`` similar facts, every one
    created within ``pattern_window``."""
    recent = [f for f in facts if within(f.created_at, now, criteria.pattern_window)]
    patterns = []
    for members, similarity in _groups(recent, edges, criteria.similarity, criteria.pattern_min_facts):
        reason = (
            f"{len(members)} similar semantic facts within {_duration(criteria.pattern_window)} "
            f"(average similarity {similarity:.3f}, threshold {_figure(criteria.similarity)})"
        )
        patterns.append(Pattern(tuple(m.id for m in members), similarity, reason))
    return patterns


def event_patterns(
    events: Sequence[Candidate], edges: Iterable[clustering.Edge[str]], now: datetime, criteria: LadderCriteria
) -> list[Pattern]:
    """Operation 3's patterns that qualify: similar events within ``procedural_window``, tallied."""
    recent = [e for e in events if within(e.created_at, now, criteria.procedural_window)]
    patterns = []
    for members, similarity in _groups(recent, edges, criteria.similarity, criteria.procedural_min_observations):
        tally = success_tally([event_success(m) for m in members])
        reason = procedural_promotion_reason(tally, criteria)
        if reason is not None:
            patterns.append(
                Pattern(
                    tuple(m.id for m in members),
                    similarity,
                    reason,
                    successes=tally.successes,
                    failures=tally.failures,
                    average_success=tally.average_success,
                )
            )
    return patterns


def _groups(
    candidates: Sequence[Candidate], edges: Iterable[clustering.Edge[str]], threshold: float, min_size: int
) -> list[tuple[list[Candidate], float]]:
    """Average-linkage groups of at least ``min_size`` candidates (no upper bound: more observations
    make a stronger pattern), members oldest first."""
    by_id = {c.id: c for c in candidates}
    if len(by_id) < min_size:
        return []
    inside = [e for e in edges if e[0] in by_id and e[1] in by_id]
    clusters = clustering.average_linkage_clusters(
        sorted(by_id), inside, threshold, min_size=min_size, max_size=len(by_id)
    )
    return [
        (sorted((by_id[mid] for mid in c.member_ids), key=lambda m: (m.created_at, m.id)), c.average_similarity)
        for c in clusters
    ]


# --- figures for the reasons ---------------------------------------------------------------------------


def _round_half_up(value: float) -> int:
    # the tolerance absorbs float noise (n × (sum / n) may land a few ulps under a half)
    return math.floor(value + 0.5 + clustering.SIMILARITY_TOLERANCE)


def _figure(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _above(value: float, bound: float) -> str:
    """``value`` for a reason that says it is above ``bound``: three decimals, more when those would
    show it equal to the bound (0.8000001 is above 0.8)."""
    shown = _figure(value)
    return shown if float(shown) > bound else repr(value)


def _duration_above(delta: timedelta, bound: timedelta) -> str:
    """``delta`` for a reason that says it is longer than ``bound``: in seconds when the rounded
    figure would show them equal."""
    shown = _duration(delta)
    return shown if shown != _duration(bound) else f"{delta.total_seconds():.0f} s"


def _duration(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    if seconds >= 2 * 86400:
        return f"{_figure(seconds / 86400)} days"
    if seconds >= 3600:
        return f"{_figure(seconds / 3600)} h"
    return f"{_figure(seconds / 60)} min"
