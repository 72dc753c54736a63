"""Bayesian confidence for memories (docs/confidence.md).

Pure functions and frozen dataclasses, no Django: the models and services store the numbers,
this module owns the math, so it can be tested exhaustively and explained on the dashboard.

Two Beta distributions are involved:

* per project, one Beta(alpha, beta) per signal type whose normalised means are the weights
  of the four signal types (``ProjectWeights`` -> ``Weights``);
* per memory, one Beta(alpha, beta) that weighted signals push up or down; its mean is the
  memory's confidence (``ConfidenceState``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# Initial confidences by how a memory was made (docs/confidence.md#where-a-memory-starts-the-prior).
INITIAL_EXPLICIT = 0.8  # recorded explicitly by an agent or user
INITIAL_SUCCESS = 0.7  # distilled from a successful session
INITIAL_FAILURE = 0.6  # distilled from a failed session (still a useful lesson)
INITIAL_DEFAULT = 0.5  # no information: the uniform Beta(1, 1)

# Signal events are kept this long, then rolled up into counts
# (docs/confidence.md#the-event-log-and-the-daily-rollup).
SIGNAL_EVENT_RETENTION_DAYS = 30

# Total pseudo-count of a memory's prior. 2.0 makes INITIAL_DEFAULT exactly the uniform
# Beta(1, 1), and keeps the prior weak: a few real signals outweigh the initial guess.
DEFAULT_PRIOR_STRENGTH = 2.0

# Time decay as a decay of the Beta evidence (docs/confidence.md#time-decay): after DECAY_GRACE_DAYS
# without a signal, each further silent day keeps this share of the memory's evidence (alpha and beta minus
# the prior's pseudo-counts), so confidence drifts back to the prior and never past it. 0.984 a day
# (half-life 43 days) takes the worked example of docs/confidence.md#signals — Beta(2.06, 1) over the
# Beta(1, 1) prior, 0.673 — to 0.623 after 30 silent days: about 0.05 for a typical memory's first month;
# the steps shrink as it nears the prior (0.039, then 0.029, …), which a raw subtraction would cross.
DECAY_PER_SILENT_DAY = 0.984
# The first month of silence costs nothing: signal events are kept a month, and a memory with a signal
# inside that window is in use (the decay only ever touches evidence the rollup has folded). The
# daily rollup stores the decayed evidence (memories/confidence/services.py, signals_decay): a later signal adds to it.
DECAY_GRACE_DAYS = 30


class SignalType(str, Enum):
    """Where a confidence signal came from (docs/confidence.md#signals)."""

    EXPLICIT = "explicit"  # memory_feedback: a user/agent rated the memory
    USAGE = "usage"  # memory_search: the memory was returned
    OUTCOME = "outcome"  # memory_outcome: the task using it succeeded or failed
    # session_code_report (docs/session-context.md#code-stability): the code of a session given the
    # memory was kept for 7 days (positive) or reverted (negative); a fourth type with its own learned
    # weight (docs/confidence.md#learned-weights)
    STABILITY = "stability"


@dataclass(frozen=True)
class Signal:
    """The part of a stored signal event the math needs; ids and timestamps live in the DB."""

    type: SignalType
    positive: bool


@dataclass(frozen=True)
class SignalCounts:
    """Rolled-up signal counts for events past retention (docs/confidence.md#the-event-log-and-the-daily-rollup);
    fractional once time decay has shrunk them (the evidence a count still carries)."""

    explicit_pos: float = 0
    explicit_neg: float = 0
    usage_pos: float = 0
    usage_neg: float = 0
    outcome_pos: float = 0
    outcome_neg: float = 0
    stability_pos: float = 0
    stability_neg: float = 0

    def with_signal(self, signal: Signal) -> SignalCounts:
        """Return new counts with one more ``signal`` folded in (what the daily rollup does)."""
        field = f"{SignalType(signal.type).value}_{'pos' if signal.positive else 'neg'}"
        return replace(self, **{field: getattr(self, field) + 1})

    def __add__(self, other: SignalCounts) -> SignalCounts:
        if not isinstance(other, SignalCounts):
            return NotImplemented
        return SignalCounts(
            explicit_pos=self.explicit_pos + other.explicit_pos,
            explicit_neg=self.explicit_neg + other.explicit_neg,
            usage_pos=self.usage_pos + other.usage_pos,
            usage_neg=self.usage_neg + other.usage_neg,
            outcome_pos=self.outcome_pos + other.outcome_pos,
            outcome_neg=self.outcome_neg + other.outcome_neg,
            stability_pos=self.stability_pos + other.stability_pos,
            stability_neg=self.stability_neg + other.stability_neg,
        )

    @classmethod
    def from_signals(cls, signals: Sequence[Signal]) -> SignalCounts:
        counts = cls()
        for signal in signals:
            counts = counts.with_signal(signal)
        return counts


@dataclass(frozen=True)
class Weights:
    """Normalised per-signal-type weights (they sum to 1)."""

    explicit: float
    usage: float
    outcome: float
    # defaults to nothing so that hand-written weights of the first three types (the worked example's,
    # docs/confidence.md#signals) stay valid; ``ProjectWeights.compute_weights`` always sets it
    stability: float = 0.0

    def weight_for(self, signal_type: SignalType) -> float:
        return {
            SignalType.EXPLICIT: self.explicit,
            SignalType.USAGE: self.usage,
            SignalType.OUTCOME: self.outcome,
            SignalType.STABILITY: self.stability,
        }[SignalType(signal_type)]


@dataclass(frozen=True)
class ProjectWeights:
    """Per-project Beta(alpha, beta) per signal type; the defaults are the priors of
    docs/confidence.md#learned-weights.

    Explicit starts at 7:3 (trust what users say), usage, outcome and stability at 5:5 (unknown
    until they prove they predict explicit feedback). Stability, the fourth type (code that lasted), starts,
    learns and weighs exactly like usage and outcome.
    """

    explicit_alpha: float = 7.0
    explicit_beta: float = 3.0
    usage_alpha: float = 5.0
    usage_beta: float = 5.0
    outcome_alpha: float = 5.0
    outcome_beta: float = 5.0
    stability_alpha: float = 5.0
    stability_beta: float = 5.0

    def compute_weights(self) -> Weights:
        """The weights: Beta means, normalised to sum to 1 (across all four types, so
        adding stability made each of the others a little lighter: explicit 0.7/2.2 instead of 0.7/1.7)."""
        raw_explicit = self.explicit_alpha / (self.explicit_alpha + self.explicit_beta)
        raw_usage = self.usage_alpha / (self.usage_alpha + self.usage_beta)
        raw_outcome = self.outcome_alpha / (self.outcome_alpha + self.outcome_beta)
        raw_stability = self.stability_alpha / (self.stability_alpha + self.stability_beta)
        total = raw_explicit + raw_usage + raw_outcome + raw_stability
        return Weights(
            explicit=raw_explicit / total,
            usage=raw_usage / total,
            outcome=raw_outcome / total,
            stability=raw_stability / total,
        )

    def learn_from_feedback(self, helpful: bool, recent_signals: Sequence[Signal]) -> ProjectWeights:
        """Learn from explicit feedback (docs/confidence.md#learned-weights), returning a new instance.

        Explicit feedback is the ground truth: a signal type "predicted positive" when the
        memory has a positive signal of that type among the recent ones. A correct prediction
        raises that type's alpha (more weight), a wrong one its beta (less weight). Explicit's
        own parameters never change: it is what the others are measured against.
        """
        usage_right = _has_positive_signal(recent_signals, SignalType.USAGE) == helpful
        outcome_right = _has_positive_signal(recent_signals, SignalType.OUTCOME) == helpful
        stability_right = _has_positive_signal(recent_signals, SignalType.STABILITY) == helpful
        return replace(
            self,
            usage_alpha=self.usage_alpha + (1 if usage_right else 0),
            usage_beta=self.usage_beta + (0 if usage_right else 1),
            outcome_alpha=self.outcome_alpha + (1 if outcome_right else 0),
            outcome_beta=self.outcome_beta + (0 if outcome_right else 1),
            stability_alpha=self.stability_alpha + (1 if stability_right else 0),
            stability_beta=self.stability_beta + (0 if stability_right else 1),
        )


def _has_positive_signal(signals: Sequence[Signal], signal_type: SignalType) -> bool:
    return any(s.type == signal_type and s.positive for s in signals)


@dataclass(frozen=True)
class ConfidenceState:
    """A memory's Beta(alpha, beta) and its mean, the confidence score."""

    alpha: float
    beta: float
    score: float


def _state(alpha: float, beta: float) -> ConfidenceState:
    # The score is the Beta mean.
    return ConfidenceState(alpha=alpha, beta=beta, score=alpha / (alpha + beta))


def confidence_prior(initial_confidence: float, strength: float = DEFAULT_PRIOR_STRENGTH) -> tuple[float, float]:
    """Encode an initial confidence as a Beta prior ``(alpha, beta)`` summing to ``strength``.

    This reconciles a Beta confidence with the configured initial confidences (0.8 recorded, 0.7/0.6
    distilled; docs/confidence.md#where-a-memory-starts-the-prior): the prior's mean is the initial
    confidence, so with no signals the score equals it, and 0.5 gives exactly the uniform (1, 1).
    """
    if not 0.0 < initial_confidence < 1.0:
        # 0 or 1 would be a degenerate prior that no amount of evidence could move off the edge.
        raise ValueError(f"initial_confidence must be strictly between 0 and 1, got {initial_confidence!r}")
    if not strength > 0.0:
        raise ValueError(f"strength must be greater than 0, got {strength!r}")
    return initial_confidence * strength, (1.0 - initial_confidence) * strength


def initial_confidence_for_outcome(outcome: str) -> float:
    """Initial confidence of a distilled memory by session outcome
    (docs/confidence.md#where-a-memory-starts-the-prior)."""
    if outcome == "success":
        return INITIAL_SUCCESS
    if outcome == "failure":
        return INITIAL_FAILURE
    # "mixed" or unknown: no reason to lean either way.
    return INITIAL_DEFAULT


def evidence_kept(
    silent_days: int, *, per_day: float = DECAY_PER_SILENT_DAY, grace_days: int = DECAY_GRACE_DAYS
) -> float:
    """The share of a memory's evidence still counted after ``silent_days`` whole days without a signal:
    1 within the grace period, then ``per_day`` to the power of the silent days beyond it.

    In (0, 1] and non-increasing in silence, so confidence moves monotonically toward the prior and never
    past it. A function of whole days only: the daily rollup stores the decayed counts and multiplies them
    by ``per_day`` once for each silent day past the grace since it last did, which over any silence comes
    to this, however often or seldom it runs."""
    if not 0.0 < per_day <= 1.0:
        raise ValueError(f"per_day must be in (0, 1], got {per_day!r}")
    if grace_days < 0:
        raise ValueError(f"grace_days must be 0 or more, got {grace_days!r}")
    beyond = max(0, int(silent_days) - grace_days)
    return per_day**beyond


def confidence_compute(
    prior_alpha: float,
    prior_beta: float,
    aggregate: SignalCounts,
    recent: Sequence[Signal],
    weights: Weights,
    *,
    evidence_factor: float = 1.0,
) -> ConfidenceState:
    """A memory's confidence from all its evidence, starting from its prior (not a uniform Beta(1, 1)).

    Rolled-up counts and recent events carry the same weight per signal, so the result is
    the same as applying every signal one by one with ``confidence_apply``; only the
    storage differs. Weights are the project's *current* ones, so a full recompute also
    re-weights old evidence after the project has learned.

    ``evidence_factor`` (``evidence_kept`` of the memory's silence) shrinks the evidence — what the
    signals added to alpha and beta — toward the prior's pseudo-counts: 1 keeps it whole, toward 0 the
    score returns to the prior's mean. Evidence is never negative, so alpha and beta never drop below
    the prior's. (The service stores the decayed counts instead, ``aggregate`` already shrunk; the same
    number for one silence, and a later signal then adds to what is left.)
    """
    if not (prior_alpha > 0.0 and prior_beta > 0.0):
        raise ValueError(f"prior_alpha and prior_beta must be greater than 0, got {prior_alpha!r}, {prior_beta!r}")
    if not 0.0 <= evidence_factor <= 1.0:
        raise ValueError(f"evidence_factor must be in [0, 1], got {evidence_factor!r}")
    alpha, beta = _evidence(aggregate, recent, weights)
    return _state(prior_alpha + evidence_factor * alpha, prior_beta + evidence_factor * beta)


def _evidence(aggregate: SignalCounts, recent: Sequence[Signal], weights: Weights) -> tuple[float, float]:
    """What the signals add to alpha and to beta (the weighted positive and negative counts)."""
    alpha = (
        aggregate.explicit_pos * weights.explicit
        + aggregate.usage_pos * weights.usage
        + aggregate.outcome_pos * weights.outcome
        + aggregate.stability_pos * weights.stability
    )
    beta = (
        aggregate.explicit_neg * weights.explicit
        + aggregate.usage_neg * weights.usage
        + aggregate.outcome_neg * weights.outcome
        + aggregate.stability_neg * weights.stability
    )
    for signal in recent:
        w = weights.weight_for(signal.type)
        if signal.positive:
            alpha += w
        else:
            beta += w
    return alpha, beta


def confidence_apply(alpha: float, beta: float, signal: Signal, weights: Weights) -> ConfidenceState:
    """A signal adds its weight to alpha or beta (docs/confidence.md#signals).

    Used on the hot path when a signal arrives, so confidence updates without re-reading
    the memory's whole signal history.
    """
    if not (alpha > 0.0 and beta > 0.0):
        raise ValueError(f"alpha and beta must be greater than 0, got {alpha!r}, {beta!r}")
    w = weights.weight_for(signal.type)
    if signal.positive:
        return _state(alpha + w, beta)
    return _state(alpha, beta + w)


def confidence_prunable(
    *, confidence: float, signals: int, recent_positive: bool, threshold: float, min_signals: int
) -> bool:
    """The pruning rule (docs/confidence.md#pruning): a memory is archived once its confidence is
    strictly below ``threshold`` after at least ``min_signals`` signals (the evidence condemns it, not
    its prior alone) and none of its recent signals was positive (something still finds it useful)."""
    return not recent_positive and signals >= min_signals and confidence < threshold
