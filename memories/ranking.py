"""Search ranking (seed 001 "Ranking Formula", DESIGN §7), with a per-result breakdown.

score = similarity × confidence × recency_boost × scope_weight × consolidated_boost

Pure functions, no Django: the search service gathers candidates and calls ``score_memory``
for each; the breakdown is what the API/dashboard shows to explain a ranking.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

# Seed 001 / seed 000 config search.scope_weights: nearer scopes are more specific to the
# caller's work, so they win ties against broader ones.
SCOPE_WEIGHTS: dict[str, float] = {"project": 1.0, "team": 0.9, "org": 0.8}

# Seed 000: "Consolidated memories receive a 20% relevance boost" (they distil several sources).
CONSOLIDATED_BOOST = 1.2

# Recency window of seed 001's boost, in days.
RECENCY_WINDOW_DAYS = 365.0


def recency_boost(days_since_used: float) -> float:
    """Seed 001's ``1.0 + 0.1 × (1 − days/365)``, with days clamped to [0, 365].

    Unclamped, the seed's formula drops below 1.0 after a year and goes negative after
    about 11 years, which would flip the sign of the score and invert the ranking; negative
    days (clock skew) would push it above 1.1. Clamping keeps the boost in [1.0, 1.1]:
    never negative, and monotone (more recent never ranks lower).
    """
    if math.isnan(days_since_used):
        raise ValueError("days_since_used must be a number, got NaN")
    days = min(max(days_since_used, 0.0), RECENCY_WINDOW_DAYS)
    return 1.0 + 0.1 * (1.0 - days / RECENCY_WINDOW_DAYS)


@dataclass(frozen=True)
class ScoreBreakdown:
    """Every factor of a result's score, so a ranking can be explained."""

    similarity: float  # after clamping to [0, 1]
    confidence: float
    recency_boost: float
    scope: str
    scope_weight: float
    consolidated_boost: float  # CONSOLIDATED_BOOST or 1.0
    score: float

    def as_dict(self) -> dict[str, float | str]:
        return asdict(self)


def score_memory(
    *,
    similarity: float,
    confidence: float,
    days_since_used: float,
    scope: str,
    consolidated: bool,
) -> ScoreBreakdown:
    """Score one candidate memory and keep the factors.

    ``similarity`` is clamped to [0, 1]: cosine similarity from pgvector can be negative
    (and full-text scores are not bounded), and a negative factor would invert the order.
    """
    if math.isnan(similarity):
        # min/max would silently turn NaN into a bound; a NaN means an upstream bug.
        raise ValueError("similarity must be a number, got NaN")
    try:
        scope_weight = SCOPE_WEIGHTS[scope]
    except KeyError:
        raise ValueError(f"unknown scope {scope!r}; expected one of {', '.join(SCOPE_WEIGHTS)}") from None
    clamped_similarity = min(max(similarity, 0.0), 1.0)
    boost = recency_boost(days_since_used)
    consolidated_boost = CONSOLIDATED_BOOST if consolidated else 1.0
    score = clamped_similarity * confidence * boost * scope_weight * consolidated_boost
    return ScoreBreakdown(
        similarity=clamped_similarity,
        confidence=confidence,
        recency_boost=boost,
        scope=scope,
        scope_weight=scope_weight,
        consolidated_boost=consolidated_boost,
        score=score,
    )


def estimate_tokens(text: str) -> int:
    """Approximate token count as ceil(len(text) / 4).

    The common ~4 characters per token rule of thumb for English with BPE tokenizers; used
    for the search response's ``tokens_used`` so agents can budget context without the
    service depending on a specific model's tokenizer.
    """
    return math.ceil(len(text) / 4)
