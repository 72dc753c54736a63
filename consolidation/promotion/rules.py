"""Institutional promotion across scopes (docs/consolidation.md#institutional-promotion): the
criteria, free of Django.

Institutional knowledge is the bridge from a project's bank to its team's and organization's:
high-confidence memories promoted to team or org scope, cross-project patterns detected and
consolidated. A lesson learnt once in
one project is an anecdote; the same lesson learnt independently, and trusted, in several projects of a
team is the team's knowledge. So a *group* qualifies when

* its members are similar: average-linkage clusters at the calibrated cluster threshold, the same rule
  synthesis uses inside a project (``consolidation.clustering``), computed here over all pairs of the
  candidates (never across organizations: the caller hands in one org's memories);
* every member is trusted: confidence at or above ``min_confidence`` (0.8 by default, "high
  confidence"); a less trusted twin is left out before clustering, so it neither counts nor blocks;
* the members hold in at least ``min_places`` distinct places: projects of one team for team scope,
  teams of the org for org scope (2 by default: one place agreeing with itself is no consensus).

The proposal's confidence is the consolidated confidence (docs/confidence.md#consolidated-memories):
the usage-weighted mean of the
sources plus the consensus bonus for low spread (``consolidation.prompts.synthesis.consolidated_confidence``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    # numpy is imported inside the functions that use it: the app's start-up (every manage.py command)
    # reaches this module through the consolidation tasks and computes nothing (docs/commands.md#start-up)
    import numpy as np
    import numpy.typing as npt

from consolidation.clustering import SIMILARITY_TOLERANCE, Edge, average_linkage_clusters
from consolidation.prompts.synthesis import ConsolidatedConfidence, consolidated_confidence

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# consensus: agreement of at least two independent places
DEFAULT_MIN_PLACES: Final = 2
DEFAULT_MIN_CONFIDENCE: Final = 0.8
# rows of the similarity matrix computed at once: 256 x 20,000 similarities are 40 MB
SIMILARITY_BLOCK: Final = 256
# pgvector stores float32 components: a cosine computed from them is good to about 1e-7, so similarities
# are rounded to 6 decimals before they meet a threshold (a pair meant to sit exactly on it stays on it)
SIMILARITY_DECIMALS: Final = 6


@dataclass(frozen=True)
class PromotionCriteria:
    """What a group of similar memories needs to be proposed one scope up."""

    similarity: float  # the embedder's calibrated cluster threshold (CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD)
    min_places: int = DEFAULT_MIN_PLACES  # PROMOTION_MIN_PROJECTS
    min_confidence: float = DEFAULT_MIN_CONFIDENCE  # PROMOTION_MIN_CONFIDENCE

    def __post_init__(self) -> None:
        if not 0.0 < self.similarity <= 1.0:
            raise ValueError(f"similarity must be in (0, 1], got {self.similarity!r}")
        if self.min_places < 2:
            raise ValueError(f"min_places must be at least 2 (one place is no consensus), got {self.min_places!r}")
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"min_confidence must be between 0 and 1, got {self.min_confidence!r}")


@dataclass(frozen=True)
class Candidate:
    """A memory that might hold elsewhere too. ``place`` is where it holds, as the level above sees it:
    its project for a team promotion, its team (or its team-less project) for an org promotion."""

    id: str
    place: str
    confidence: float
    usage_count: int
    vector: Sequence[float] | npt.NDArray[Any]


@dataclass(frozen=True)
class PromotionGroup:
    """Similar, trusted memories of several places: one proposal."""

    member_ids: tuple[str, ...]  # sorted
    places: tuple[str, ...]  # the distinct places, sorted
    average_similarity: float
    min_similarity: float


def promotion_qualifies(
    *, places: Iterable[str], confidences: Sequence[float], average_similarity: float, criteria: PromotionCriteria
) -> bool:
    """All three conditions at once: enough distinct places, every member trusted enough, similar enough
    (the bounds are inclusive, with ``SIMILARITY_TOLERANCE`` for float noise as in clustering)."""
    if len(set(places)) < criteria.min_places:
        return False
    if not confidences or min(confidences) < criteria.min_confidence - SIMILARITY_TOLERANCE:
        return False
    return average_similarity >= criteria.similarity - SIMILARITY_TOLERANCE


def _unit_rows(vectors: Sequence[Sequence[float] | npt.NDArray[Any]]) -> npt.NDArray[np.float64]:
    import numpy as np

    matrix = np.asarray([np.asarray(v, dtype=np.float64).ravel() for v in vectors], dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError("vectors must all have the same length")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # a zero vector has no direction: it stays zero and is similar to nothing
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def similar_pairs(
    ids: Sequence[str],
    vectors: Sequence[Sequence[float] | npt.NDArray[Any]],
    threshold: float,
    *,
    block: int = SIMILARITY_BLOCK,
) -> list[Edge[str]]:
    """Every pair at or above ``threshold`` (cosine), as clustering edges. All pairs, in blocks of rows:
    a team's or an org's trusted procedural memories are a few thousand, not the whole bank, so the exact
    answer costs seconds (docs/consolidation.md#institutional-promotion) and needs no index probe per memory."""
    if len(ids) != len(vectors):
        raise ValueError("ids and vectors differ in length")
    if len(ids) < 2:
        return []
    import numpy as np

    unit = _unit_rows(vectors)
    edges: list[Edge[str]] = []
    floor = threshold - SIMILARITY_TOLERANCE
    for start in range(0, len(ids), block):
        rows = unit[start : start + block]
        # this block against itself and every later row
        sims = np.minimum(np.round(rows @ unit[start:].T, SIMILARITY_DECIMALS), 1.0)
        r, c = np.nonzero(sims >= floor)
        keep = c > r  # the upper triangle: each pair once, no self pairs
        for i, j in zip(r[keep].tolist(), c[keep].tolist(), strict=True):
            edges.append((ids[start + i], ids[start + j], float(sims[i, j])))
    return edges


def promotion_groups(candidates: Sequence[Candidate], criteria: PromotionCriteria) -> list[PromotionGroup]:
    """The groups that qualify, those holding in the most places first. Members below the confidence
    bar are left out before clustering; a cluster in fewer than ``min_places`` places is dropped."""
    trusted = [c for c in candidates if c.confidence >= criteria.min_confidence - SIMILARITY_TOLERANCE]
    if len(trusted) < 2:
        return []
    by_id = {c.id: c for c in trusted}
    if len(by_id) != len(trusted):
        raise ValueError("candidate ids must be unique")
    ids = sorted(by_id)
    edges = similar_pairs(ids, [by_id[i].vector for i in ids], criteria.similarity)
    # no size cap: a lesson every project of a big team learnt is the best promotion, not too broad
    clusters = average_linkage_clusters(ids, edges, criteria.similarity, min_size=2, max_size=len(ids))
    groups = []
    for cluster in clusters:
        members = [by_id[i] for i in cluster.member_ids]
        places = tuple(sorted({m.place for m in members}))
        if promotion_qualifies(
            places=places,
            confidences=[m.confidence for m in members],
            average_similarity=cluster.average_similarity,
            criteria=criteria,
        ):
            groups.append(
                PromotionGroup(
                    member_ids=tuple(cluster.member_ids),
                    places=places,
                    average_similarity=cluster.average_similarity,
                    min_similarity=cluster.min_similarity,
                )
            )
    groups.sort(key=lambda g: (-len(g.places), -g.average_similarity, g.member_ids[0]))
    return groups


def promotion_confidence(
    sources: Sequence[tuple[float, int]], *, consensus_threshold: int = DEFAULT_MIN_PLACES
) -> ConsolidatedConfidence:
    """The confidence of a consolidated memory for ``(confidence, usage_count)`` sources:
    ``sum(c * (u + 1)) / sum(u + 1)`` plus up to +0.1 for low spread once there are at least
    ``consensus_threshold`` sources, capped at 0.99."""
    return consolidated_confidence(sources, consensus_threshold=consensus_threshold)


def promotion_representative(members: Sequence[Candidate]) -> Candidate:
    """The member whose text the proposal carries: the most trusted, then the most used (then the
    smallest id, so the choice never depends on order)."""
    if not members:
        raise ValueError("a group has members")
    return min(members, key=lambda m: (-m.confidence, -m.usage_count, m.id))


def promotion_centroid(vectors: Sequence[Sequence[float] | npt.NDArray[Any]]) -> list[float]:
    """The unit mean of the members' unit vectors: the proposal's embedding, as close to every source
    as the group allows, so search finds it where it finds them and a later pass sees it as known."""
    import numpy as np

    unit = _unit_rows(vectors)
    mean = unit.mean(axis=0, dtype=np.float64)
    norm = float(np.linalg.norm(mean))
    if norm == 0.0:
        raise ValueError("the vectors cancel out: a group of opposite memories has no centroid")
    return [float(x) for x in mean / norm]


def promotion_known(
    centroid: Sequence[float], known: Sequence[Sequence[float] | npt.NDArray[Any]], threshold: float
) -> bool:
    """Whether a memory already at the target scope (``known``) is at least ``threshold`` alike to a
    group's centroid: then the group is no news there."""
    if len(known) == 0:
        return False
    import numpy as np

    sims = np.round(_unit_rows(known) @ _unit_rows([centroid])[0], SIMILARITY_DECIMALS)
    return bool((sims >= threshold - SIMILARITY_TOLERANCE).any())


def source_set_key(ids: Iterable[str]) -> str:
    """A stable name for a set of source memories (order and repeats do not matter)."""
    return hashlib.sha256("\n".join(sorted(set(ids))).encode()).hexdigest()
