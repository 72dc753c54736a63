"""Deep search's question rewrite (docs/search.md#deep-search-rewriting-the-question): the prompt that
asks the configured LLM for focused search queries, the parser of its reply, the cache key of a
rewrite, and the fusion of the rankings of several queries into one. Pure: no Django.

A question that needs two facts ("Which city did Melanie move to after her sister's wedding?") shares
few words and little meaning with either memory that answers it; searched as it is, the two legs find
the memory closest to the whole question. The LLM names what to look for, one query per fact or
entity, each query is searched as usual and every candidate keeps its best relevance (or the
reciprocal-rank fusion of its ranks) over the queries.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, get_args

from memories.search.ranking import RRF_K, ScoreBreakdown

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# A fixed text (its trailing newline included): do not reword it without measuring on the retrieval
# benchmark; tests/memories/search/test_rewrite.py pins it (docs/decisions.md#fixed-prompts-pinned-by-tests).
REWRITE_SYSTEM_PROMPT = """You turn a question into search queries for a memory bank of short notes (conversation turns, lessons, facts).

Write 1 to 3 short search queries that together find the notes needed to answer the question:
- one query per fact the answer needs (a question about two events or two people gets two queries);
- keep names, places, dates and other key entities exactly as written;
- use the words a note stating the fact would use, not the question's words ("When did X move?" becomes "X moved to");
- never answer the question and never invent facts.

Reply with JSON only: {"queries": ["...", "..."]}
"""  # noqa: E501

# at most this many of the LLM's queries are searched, besides the question itself
REWRITE_MAX_QUERIES = 3
REWRITE_MAX_TOKENS = 200  # three short queries fit with room to spare; a reply cut here is unreadable
# the version of the prompt and parser, in the cache key: a changed prompt never serves old rewrites
REWRITE_VERSION = 1
QUERY_CHARS_MAX = 300  # one of the LLM's queries, cut here (the question itself may be longer)
REWRITE_FUSIONS = ("max", "rrf")

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_ARRAY = re.compile(r"\[.*\]", re.DOTALL)


# why a deep search searched the question alone (``QueryRewrite.reason``)
SkipReason = Literal["off", "no_llm", "over_budget", "llm_unavailable", "llm_error", "reply_unreadable"]
SKIP_REASONS: tuple[str, ...] = get_args(SkipReason)


@dataclass(frozen=True)
class QueryRewrite:
    """What a deep search made of its question: the LLM's queries (``status`` "rewritten", maybe none
    when the LLM found the question focused already; ``cached`` when no call was made this time), or
    why there are none (``status`` "skipped", ``reason`` one of ``SKIP_REASONS`` and a sentence)."""

    status: str
    queries: tuple[str, ...] = ()
    cached: bool = False
    reason: str | None = None
    detail: str | None = None


class RewriteParseError(ValueError):
    """The LLM's reply holds no list of queries."""


def rewrite_prompt(question: str) -> str:
    """The user message: the question alone (already scrubbed of secrets by the caller)."""
    return f"Question: {question.strip()}\n\nReply with the JSON object only."


def rewrite_parse(text: str, question: str, *, max_queries: int = REWRITE_MAX_QUERIES) -> list[str]:
    """The LLM's queries, without blanks, repeats and the question itself, at most ``max_queries``.

    Accepts what models commonly send: a code fence, prose around the JSON, a bare JSON array. An
    empty list is a valid answer (the question is focused already); no list at all is an error.
    """
    stripped = _FENCE.sub("", text.strip())
    value: object = None
    for pattern in (_OBJECT, _ARRAY):
        match = pattern.search(stripped)
        if match is None:
            continue
        try:
            value = json.loads(match.group())
        except ValueError:
            continue
        break
    if isinstance(value, dict):
        value = value.get("queries")
    if not isinstance(value, list):
        raise RewriteParseError("no JSON list of queries in the reply")
    seen = {_normalised(question)}
    queries: list[str] = []
    for item in value:
        if not isinstance(item, str):
            continue
        query = " ".join(item.replace("\x00", " ").split())[:QUERY_CHARS_MAX].strip()
        if not query or _normalised(query) in seen:
            continue
        seen.add(_normalised(query))
        queries.append(query)
        if len(queries) == max_queries:
            break
    return queries


def _normalised(text: str) -> str:
    return " ".join(text.lower().split()).rstrip("?.! ")


def rewrite_cache_key(organization_id: int, question: str, *, provider: str, model: str) -> str:
    """The cache key of a question's rewrite: per organization (another organization's identical
    question never reads this one's rewrite), per model and prompt version; the question only as a
    digest, so the key holds no text of it."""
    digest = hashlib.sha256(
        "\x1f".join((provider, model, str(REWRITE_VERSION), _normalised(question))).encode()
    ).hexdigest()
    return f"search:rewrite:{organization_id}:{digest}"


@dataclass(frozen=True)
class FusedCandidate:
    """One candidate of several queries' rankings: its fused relevance, the query whose scores it
    keeps (the one that ranked it best; index into the queries, 0 is the question), and every query
    that found it, in the queries' order."""

    key: str
    relevance: float
    query: int
    found_by: tuple[int, ...]


def rankings_fuse(
    rankings: Sequence[Sequence[tuple[str, float]]], *, fusion: str = "max", weight: float = 1.0
) -> list[FusedCandidate]:
    """Fuse each query's candidates ``(key, relevance)`` (best first) into one list of candidates;
    the first ranking is the question's, the others (the LLM's queries) count ``weight`` times as much.

    ``max``: a candidate's best weighted relevance over the queries (each query's relevance is
    normalised to its own best candidate, so a memory that answers one part of the question well ranks
    with the best answer of another part). ``rrf``: ``Σ weight / (60 + rank)`` over the queries that
    found it, divided by its maximum (found first by every query), so a memory several queries find
    rises. Ties keep the earlier query (the question itself first). The order of the result is
    undefined: the caller ranks by the final score.
    """
    if fusion not in REWRITE_FUSIONS:
        raise ValueError(f"unknown fusion {fusion!r}; expected one of {', '.join(REWRITE_FUSIONS)}")
    if not 0.0 <= weight <= 1.0:
        raise ValueError("weight must be in [0, 1]")
    best: dict[str, tuple[float, int]] = {}  # key → (the value that picks the kept query, that query)
    found: dict[str, list[int]] = {}
    rrf: dict[str, float] = {}
    for index, ranking in enumerate(rankings):
        share = 1.0 if index == 0 else weight
        by_relevance = sorted(ranking, key=lambda item: -item[1])
        for rank, (key, relevance) in enumerate(by_relevance, start=1):
            found.setdefault(key, []).append(index)
            rrf[key] = rrf.get(key, 0.0) + share / (RRF_K + rank)
            pick = share * relevance if fusion == "max" else -float(rank)
            if key not in best or pick > best[key][0]:
                best[key] = (pick, index)
    ceiling = (1.0 + weight * (len(rankings) - 1)) / (RRF_K + 1) if rankings else 1.0
    fused = []
    for key, (pick, index) in best.items():
        relevance = pick if fusion == "max" else rrf[key] / ceiling
        fused.append(FusedCandidate(key, min(max(relevance, 0.0), 1.0), index, tuple(found[key])))
    return fused


def breakdown_relevance_set(breakdown: ScoreBreakdown, relevance: float) -> ScoreBreakdown:
    """The breakdown with another relevance and the score it makes (every other factor unchanged)."""
    clamped = min(max(relevance, 0.0), 1.0)
    score = (
        clamped
        * breakdown.confidence
        * breakdown.recency_boost
        * breakdown.scope_weight
        * breakdown.consolidated_boost
        * breakdown.code_changed_factor
    )
    return replace(breakdown, relevance=clamped, score=score)
