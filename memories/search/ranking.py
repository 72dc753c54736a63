"""Search ranking (docs/search.md#ranking), with a per-result breakdown.

score = relevance × confidence × recency_boost × scope_weight × consolidated_boost × code_changed_factor

``code_changed_factor`` is ``SEARCH_CODE_CHANGED_FACTOR`` (0.7) for a memory with an anchor whose code
changed since it was written (docs/code-memory.md#staleness), 1 otherwise: such a memory still answers,
below an equally relevant one that nothing contradicts.

``relevance`` takes the place of a plain semantic similarity: the fusion of two rankings of the same
candidates, the vector leg's cosine similarity and the lexical leg's BM25 score (``bm25_idf`` here, the
per-document part in SQL: ``rb_bm25``, memories migration 0007), as a convex combination of the two
scores normalised per query (``relevance_fuse``); reciprocal rank fusion is kept as the measured
alternative (``bench/retrieval.py``, docs/search.md#fusion-one-relevance).

Pure functions, no Django: the search selector gathers candidates and calls these; the breakdown
is what the API/dashboard shows to explain a ranking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# Nearer scopes are more specific to the caller's work, so they win ties against broader ones.
SCOPE_WEIGHTS: dict[str, float] = {"project": 1.0, "team": 0.9, "org": 0.8}

# Consolidated memories get a 20% boost: they distil several sources.
CONSOLIDATED_BOOST = 1.2

# Recency window of the recency boost, in days.
RECENCY_WINDOW_DAYS = 365.0


def recency_boost(days_since_used: float) -> float:
    """The recency boost ``1.0 + 0.1 × (1 − days/365)``, with days clamped to [0, 365].

    Unclamped, the formula drops below 1.0 after a year and goes negative after
    about 11 years, which would flip the sign of the score and invert the ranking; negative
    days (clock skew) would push it above 1.1. Clamping keeps the boost in [1.0, 1.1]:
    never negative, and monotone (more recent never ranks lower).
    """
    if math.isnan(days_since_used):
        raise ValueError("days_since_used must be a number, got NaN")
    days = min(max(days_since_used, 0.0), RECENCY_WINDOW_DAYS)
    return 1.0 + 0.1 * (1.0 - days / RECENCY_WINDOW_DAYS)


# Retrieval modes (docs/search.md#retrieval-modes): which tiers a search reaches. ``exhaustive`` reaches
# every memory, archived ones included (marked as such in the results); the others only active memories.
RETRIEVAL_MODES: dict[str, tuple[str, ...] | None] = {
    "reflexive": ("hot",),
    "standard": ("hot", "warm"),
    "deep": ("hot", "warm", "cold"),
    "exhaustive": None,
}
DEFAULT_RETRIEVAL_MODE = "standard"

# BM25's term-frequency saturation (the usual 1.2) and length normalisation: 0.3, below the usual 0.75,
# because memories are short and a longer one is not less on-topic for being longer. Measured on the
# LoCoMo dev set (bench/retrieval.py, minilm, convex 0.5): b 0.75 → R@10 0.660 / MRR 0.471, b 0.5 →
# 0.663 / 0.488, b 0.3 → 0.667 / 0.501, b 0.2 → 0.670 / 0.504 (a plateau, not a peak).
BM25_K1 = 1.2
BM25_B = 0.3
# reciprocal rank fusion's constant (Cormack et al.)
RRF_K = 60
FUSIONS = ("convex", "rrf")


def bm25_idf(document_frequency: float, documents: float) -> float:
    """BM25's inverse document frequency, the non-negative form ``ln(1 + (N − df + 0.5) / (df + 0.5))``
    (Lucene's): a term in every document still weighs a little, never less than nothing."""
    documents = max(documents, document_frequency, 1)
    return math.log(1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))


@dataclass(frozen=True)
class LegScores:
    """One candidate as each leg saw it: cosine similarity to the query (None without an embedding),
    BM25 score (0 when no query term occurs in it) and its rank in each leg (1-based; None when the
    leg did not rank it)."""

    similarity: float | None
    lexical: float
    vector_rank: int | None = None
    lexical_rank: int | None = None


def leg_ranks(similarities: Sequence[float | None], lexical: Sequence[float]) -> list[tuple[int | None, int | None]]:
    """Each candidate's 1-based rank in the vector leg (by similarity) and the lexical leg (by BM25
    score, only candidates that match a term)."""

    def ranks(values: Sequence[float | None]) -> list[int | None]:
        order = sorted((i for i, v in enumerate(values) if v is not None), key=lambda i: -float(values[i]))  # type: ignore[arg-type]
        out: list[int | None] = [None] * len(values)
        for rank, i in enumerate(order, start=1):
            out[i] = rank
        return out

    vector = ranks(similarities)
    text = ranks([value if value > 0 else None for value in lexical])
    return list(zip(vector, text, strict=True))


def relevance_fuse(candidates: Sequence[LegScores], *, lexical_weight: float, fusion: str = "convex") -> list[float]:
    """Each candidate's relevance in [0, 1] from both legs.

    ``convex``: ``w × bm25 / max bm25 + (1 − w) × min-max-normalised similarity`` over the query's
    candidates — scores, not just ranks, so a far better lexical match is not flattened to the
    next rank. ``rrf``: ``Σ 1 / (60 + rank)`` over the legs, divided by its maximum ``2 / 61``.
    """
    if fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {fusion!r}; expected one of {', '.join(FUSIONS)}")
    if not 0.0 <= lexical_weight <= 1.0:
        raise ValueError("lexical_weight must be in [0, 1]")
    if fusion == "rrf":
        best = 2.0 / (RRF_K + 1)
        return [
            sum(1.0 / (RRF_K + r) for r in (c.vector_rank, c.lexical_rank) if r is not None) / best
            for c in candidates
        ]
    similarities = [c.similarity for c in candidates if c.similarity is not None]
    low, high = (min(similarities), max(similarities)) if similarities else (0.0, 0.0)
    top_lexical = max((c.lexical for c in candidates), default=0.0)
    fused = []
    for c in candidates:
        if c.similarity is None:
            vector = 0.0
        elif high > low:
            vector = (c.similarity - low) / (high - low)
        else:  # one candidate, or all alike: as good as the best there is, if similar at all
            vector = 1.0 if c.similarity > 0 else 0.0
        lexical = c.lexical / top_lexical if top_lexical > 0 else 0.0
        fused.append(min(max(lexical_weight * lexical + (1.0 - lexical_weight) * vector, 0.0), 1.0))
    return fused


@dataclass(frozen=True)
class ScoreBreakdown:
    """Every factor of a result's score, so a ranking can be explained."""

    relevance: float  # the fused relevance in [0, 1]: the ranking's first factor
    similarity: float  # the vector leg's cosine similarity, clamped to [0, 1]
    lexical: float  # the lexical leg's BM25 score (0: no query term in the memory)
    vector_rank: int | None
    lexical_rank: int | None
    confidence: float
    recency_boost: float
    scope: str
    scope_weight: float
    consolidated_boost: float  # CONSOLIDATED_BOOST or 1.0
    score: float
    # where ``relevance`` comes from when the query carries time cues (memories.search.temporal):
    # the legs' fusion, and which cues the memory meets (0 or 1 each); without cues relevance = fused
    fused: float | None = None
    time_expression: float = 0.0
    time_period: float = 0.0
    # the neighbour stage (memories.search.neighbours): the relevance this memory had on its own (None:
    # the stage is off, ``relevance`` is that), and the best memory recorded next to it with its own
    own_relevance: float | None = None
    neighbour: str | None = None
    neighbour_relevance: float = 0.0
    # the search named paths and the memory is anchored on one (memories.code.paths.ANCHOR_PATH_BOOST, in
    # ``score``), else 1
    path_boost: float = 1.0
    # below 1 when an anchor's code changed since the memory was written (``code_changed_apply``)
    code_changed_factor: float = 1.0

    def as_dict(self) -> dict[str, float | str]:
        return asdict(self)


def score_memory(
    *,
    legs: LegScores,
    relevance: float,
    confidence: float,
    days_since_used: float,
    scope: str,
    consolidated: bool,
    fused: float | None = None,
    time_expression: float = 0.0,
    time_period: float = 0.0,
) -> ScoreBreakdown:
    """Score one candidate memory and keep the factors.

    ``relevance`` is clamped to [0, 1]: a negative factor would invert the order.
    """
    if math.isnan(relevance):
        # min/max would silently turn NaN into a bound; a NaN means an upstream bug.
        raise ValueError("relevance must be a number, got NaN")
    try:
        scope_weight = SCOPE_WEIGHTS[scope]
    except KeyError:
        raise ValueError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPE_WEIGHTS)}") from None
    clamped = min(max(relevance, 0.0), 1.0)
    boost = recency_boost(days_since_used)
    consolidated_boost = CONSOLIDATED_BOOST if consolidated else 1.0
    score = clamped * confidence * boost * scope_weight * consolidated_boost
    return ScoreBreakdown(
        relevance=clamped,
        similarity=min(max(legs.similarity or 0.0, 0.0), 1.0),
        lexical=legs.lexical,
        vector_rank=legs.vector_rank,
        lexical_rank=legs.lexical_rank,
        confidence=confidence,
        recency_boost=boost,
        scope=scope,
        scope_weight=scope_weight,
        consolidated_boost=consolidated_boost,
        score=score,
        fused=relevance if fused is None else fused,
        time_expression=time_expression,
        time_period=time_period,
    )


def code_changed_apply(breakdown: ScoreBreakdown, factor: float) -> ScoreBreakdown:
    """The breakdown of a memory whose anchored code changed: its score times ``factor`` (in (0, 1]), which
    the breakdown keeps to explain it."""
    if not 0.0 < factor <= 1.0:
        raise ValueError("the code-changed factor must be in (0, 1]")
    return replace(
        breakdown, code_changed_factor=factor, score=breakdown.score / breakdown.code_changed_factor * factor
    )


def estimate_tokens(text: str) -> int:
    """Approximate token count as ceil(len(text) / 4).

    The common ~4 characters per token rule of thumb for English with BPE tokenizers; used
    for the search response's ``tokens_used`` so agents can budget context without the
    service depending on a specific model's tokenizer.
    """
    return math.ceil(len(text) / 4)
