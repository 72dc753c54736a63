"""Retention scoring, tiers and stale-archival rules (docs/memory-model.md#tiers-and-retention), free
of Django.

A memory's *retention* is a blend of how recently it was touched, how often it has been retrieved and
how important its kind of knowledge is; the score picks its tier (hot / warm / cold / archived). Stale
archival removes memories whose salience has fallen below a threshold and that nobody has touched for
a while. Here both are pure functions over plain
values so the decay job, the dashboard and the tests share one implementation without a database.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:  # numpy is imported by the one function that needs it, not when the app loads
    import numpy as np
    import numpy.typing as npt

from memories.rules import DEFAULT_IMPORTANCE, KIND_IMPORTANCE

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

Tier = Literal["hot", "warm", "cold", "archived"]

TIER_HOT: Final = "hot"
TIER_WARM: Final = "warm"
TIER_COLD: Final = "cold"
TIER_ARCHIVED: Final = "archived"

# The superseded penalty: a superseded memory keeps 20% of its score so it sinks to
# cold quickly but is never erased (nothing is deleted by the system, docs/memory-model.md).
SUPERSEDED_PENALTY: Final = 0.2

# Activation saturates at 20 retrievals: log1p(n) / log1p(20) reaches 1.0 there.
ACTIVATION_SATURATION: Final = 20

@dataclass(frozen=True)
class RetentionConfig:
    """Tunables for :func:`compute_retention_score` and :func:`tier_for`.

    ``half_life_days`` (30) and the tier thresholds (hot >= 0.6, warm >= 0.3) are the defaults; so are
    the weights ``recency_weight`` / ``activation_weight`` / ``importance_weight``, 0.5 / 0.3 / 0.2.
    They sum to 1 so ``overall`` stays in
    [0, 1] before clamping, and recency dominates because "not touched for months" is the
    strongest signal that a memory has stopped earning its place.
    """

    half_life_days: float = 30.0
    recency_weight: float = 0.5
    activation_weight: float = 0.3
    importance_weight: float = 0.2
    hot_threshold: float = 0.6
    warm_threshold: float = 0.3

    def __post_init__(self) -> None:
        # Fail at configuration time rather than producing NaN/negative scores in a nightly job.
        if not self.half_life_days > 0:
            raise ValueError("half_life_days must be > 0")
        for name in ("recency_weight", "activation_weight", "importance_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if not 0.0 <= self.warm_threshold <= self.hot_threshold <= 1.0:
            raise ValueError("thresholds must satisfy 0 <= warm_threshold <= hot_threshold <= 1")


DEFAULT_RETENTION_CONFIG: Final = RetentionConfig()


@dataclass(frozen=True)
class RetentionScore:
    """The blended ``overall`` retention plus its factors, for explainability."""

    overall: float
    recency: float
    activation: float
    importance: float


def importance_for_kind(kind: str) -> float:
    """Default importance of a memory kind; unknown kinds get 0.5."""
    return KIND_IMPORTANCE.get(kind, DEFAULT_IMPORTANCE)


def compute_retention_score(
    *,
    created_at: datetime,
    last_used_at: datetime | None,
    activation_count: int,
    importance: float,
    superseded: bool = False,
    now: datetime,
    config: RetentionConfig = DEFAULT_RETENTION_CONFIG,
) -> RetentionScore:
    """A memory's retention score over plain values.

    - recency = exp(-effective_age / half_life * ln 2), where effective_age is the younger of
      "since created" and "since last used" (a fresh retrieval resets the clock);
    - activation = min(1, log1p(n) / log1p(20)) -- diminishing returns on retrievals;
    - overall = weighted sum, x0.2 when superseded, clamped to [0, 1].

    ``created_at``, ``last_used_at`` and ``now`` must all be aware or all naive (mixing raises
    ``TypeError`` from datetime arithmetic, which is what we want: a silent tz bug would skew ages
    by hours).
    """
    if activation_count < 0:
        raise ValueError("activation_count must be >= 0")
    if not 0.0 <= importance <= 1.0:
        raise ValueError("importance must be between 0 and 1")

    age_days = (now - created_at).total_seconds() / 86400
    access_age = (now - last_used_at).total_seconds() / 86400 if last_used_at else age_days
    # Clock skew between web and worker processes can put a timestamp slightly in the future;
    # flooring at 0 keeps recency at most 1.0 instead of letting it exceed the scale.
    effective_age = max(0.0, min(age_days, access_age))
    recency = math.exp(-effective_age / config.half_life_days * math.log(2))

    activation = min(1.0, math.log1p(activation_count) / math.log1p(ACTIVATION_SATURATION))

    overall = (
        config.recency_weight * recency + config.activation_weight * activation + config.importance_weight * importance
    )
    if superseded:
        overall *= SUPERSEDED_PENALTY

    return RetentionScore(
        overall=min(1.0, max(0.0, overall)),
        recency=recency,
        activation=activation,
        importance=importance,
    )


@dataclass(frozen=True)
class RetentionBatch:
    """:func:`retention_scores` for many memories at once: one array element per memory."""

    overall: npt.NDArray[np.float64]
    recency: npt.NDArray[np.float64]
    activation: npt.NDArray[np.float64]
    tiers: npt.NDArray[np.str_]


def retention_scores(
    *,
    age_days: npt.ArrayLike,
    access_age_days: npt.ArrayLike,
    activation_counts: npt.ArrayLike,
    importances: npt.ArrayLike,
    superseded: npt.ArrayLike,
    config: RetentionConfig = DEFAULT_RETENTION_CONFIG,
) -> RetentionBatch:
    """:func:`compute_retention_score` and :func:`tier_for` (not archived) over arrays, for the
    consolidation run's decay pass over a whole project: the same formula, vectorised, because a
    Python call per memory costs seconds at 100K memories. Ages are in days (``access_age_days``
    equal to ``age_days`` for a never-used memory); importances are clamped to [0, 1] here."""
    # here rather than at the top: the app's start-up (every manage.py command) imports this module
    # through the phase registry and needs none of it (docs/commands.md#start-up)
    import numpy as np

    age = np.asarray(age_days, dtype=np.float64)
    access_age = np.asarray(access_age_days, dtype=np.float64)
    counts = np.asarray(activation_counts, dtype=np.float64)
    if np.any(counts < 0):
        raise ValueError("activation counts must be >= 0")
    importance = np.clip(np.asarray(importances, dtype=np.float64), 0.0, 1.0)
    effective_age = np.maximum(0.0, np.minimum(age, access_age))
    recency = np.exp(-effective_age / config.half_life_days * math.log(2))
    activation = np.minimum(1.0, np.log1p(counts) / math.log1p(ACTIVATION_SATURATION))
    overall = (
        config.recency_weight * recency + config.activation_weight * activation + config.importance_weight * importance
    )
    overall = np.where(np.asarray(superseded, dtype=bool), overall * SUPERSEDED_PENALTY, overall)
    overall = np.clip(overall, 0.0, 1.0)
    tiers = np.where(
        overall >= config.hot_threshold, TIER_HOT, np.where(overall >= config.warm_threshold, TIER_WARM, TIER_COLD)
    )
    return RetentionBatch(overall=overall, recency=recency, activation=activation, tiers=tiers)


def tier_for(
    score: float | RetentionScore,
    *,
    archived: bool,
    config: RetentionConfig = DEFAULT_RETENTION_CONFIG,
) -> Tier:
    """Map a retention score to its tier.

    Archival is a state decision (consolidated, superseded, stale, manual), not a score band, so
    it wins over any score: an archived memory reads "archived" even if it is still recent.
    Thresholds are inclusive (score == 0.6 is hot, == 0.3 is warm).
    """
    if archived:
        return TIER_ARCHIVED
    value = score.overall if isinstance(score, RetentionScore) else score
    if value >= config.hot_threshold:
        return TIER_HOT
    if value >= config.warm_threshold:
        return TIER_WARM
    return TIER_COLD


def should_archive_stale(
    retention: float,
    last_access: datetime,
    now: datetime,
    *,
    threshold: float = 0.1,
    max_idle_days: float = 30,
) -> bool:
    """Low-salience archival: below ``threshold`` AND idle for ``max_idle_days``.

    A memory of salience 0.05 last used exactly 30 days ago, with the threshold 0.1, is archived:
    retention must be strictly below the threshold, and idleness is inclusive (>= 30 days). Requiring
    both keeps a low-scoring memory that someone used last week, and a long-idle memory that is still
    important. Pass ``last_used_at or created_at`` as ``last_access`` for never-used memories.
    """
    return is_stale(
        retention, idle_seconds=(now - last_access).total_seconds(), threshold=threshold, max_idle_days=max_idle_days
    )


def is_stale(retention: float, *, idle_seconds: float, threshold: float = 0.1, max_idle_days: float = 30) -> bool:
    """:func:`should_archive_stale` with the idle time already in seconds (the consolidation run
    works on epoch timestamps)."""
    return retention < threshold and idle_seconds >= max_idle_days * 86400
