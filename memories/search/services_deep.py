"""Deep search's question rewrite (docs/search.md#deep-search-rewriting-the-question): with
``SEARCH_DEEP_REWRITE`` on and an LLM configured, a ``deep`` search asks the LLM for 1–3 focused
queries (metered as ``search_rewrite``, within the organization's LLM budget, cached per organization),
searches the question and each query with the usual pipeline, and fuses the rankings
(``memories.search.rewrite.rankings_fuse``) before the answer is built as usual.

Never a failed search and never a made-up rewrite: without the setting, without an LLM, over the
budget, with the LLM down or slower than ``SEARCH_DEEP_REWRITE_TIMEOUT`` or an unreadable reply, the
question is searched as asked and ``QueryRewrite`` says why.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from accounts.access import Principal
from memories.embedding import query_embed
from memories.search.rewrite import (
    REWRITE_MAX_TOKENS,
    REWRITE_SYSTEM_PROMPT,
    QueryRewrite,
    RewriteParseError,
    breakdown_relevance_set,
    rankings_fuse,
    rewrite_cache_key,
    rewrite_parse,
    rewrite_prompt,
)
from memories.search.selectors import (
    SearchHit,
    SearchQuery,
    SearchResult,
    memory_search,
    memory_search_rank,
    search_result_finish,
)
from reasoningbank.ai.llm import LLMError, LLMPermanentError, LLMTransientError, LLMUnavailable, llm_from_settings
from reasoningbank.ai.metered import LLMBudgetExceeded, llm_complete
from reasoningbank.scrubbing import scrub_secrets
from reasoningbank.tracing import span

logger = logging.getLogger(__name__)

PURPOSE = "search_rewrite"  # LlmCall.purpose (registered in memories/apps.py)
DETAIL_MAX = 300  # an LLM error's text in the answer is cut here


def _skipped(reason: str, detail: str) -> QueryRewrite:
    return QueryRewrite(status="skipped", reason=reason, detail=detail[:DETAIL_MAX])


def query_rewrite(principal: Principal, question: str) -> QueryRewrite:
    """The configured LLM's focused queries for ``question``, from the organization's cache when it
    asked the same within ``SEARCH_DEEP_REWRITE_CACHE_TTL``; or why there are none."""
    if not settings.SEARCH_DEEP_REWRITE:
        return _skipped("off", "SEARCH_DEEP_REWRITE is off: the question was searched as asked.")
    try:  # no retries: a search waits for one bounded call, never for a backoff
        llm = llm_from_settings(timeout=float(settings.SEARCH_DEEP_REWRITE_TIMEOUT), max_retries=0)
    except LLMPermanentError as exc:
        return _skipped("no_llm", f"The configured LLM cannot be used ({exc}); the question was searched as asked.")
    if llm.provider == "none":
        return _skipped("no_llm", "No LLM is configured (LLM_PROVIDER=none): the question was searched as asked.")
    paused_key = f"search:rewrite-paused:{llm.provider}:{llm.model}"  # this process's memory (docs/search.md)
    if cache.get(paused_key):
        return _skipped(
            "llm_unavailable",
            f"The LLM failed moments ago and is not asked again for up to {settings.SEARCH_DEEP_REWRITE_PAUSE:g} s; "
            "the question was searched as asked.",
        )
    organization = principal.organization
    key = rewrite_cache_key(organization.id, question, provider=llm.provider, model=llm.model)
    cached = cache.get(key)
    if isinstance(cached, list):
        return QueryRewrite(status="rewritten", queries=tuple(cached), cached=True)
    try:
        result = llm_complete(
            organization=organization,
            purpose=PURPOSE,
            system=REWRITE_SYSTEM_PROMPT,
            # a secret pasted into a question never reaches the provider
            prompt=rewrite_prompt(scrub_secrets(question).text),
            max_tokens=REWRITE_MAX_TOKENS,
            llm=llm,
        )
    except LLMBudgetExceeded as exc:
        return _skipped("over_budget", f"Not rewritten: {exc}.")
    except LLMUnavailable:
        return _skipped("no_llm", "No LLM is configured: the question was searched as asked.")
    except LLMTransientError as exc:
        # an LLM that is down would otherwise cost every deep search the whole timeout: searches in the
        # next SEARCH_DEEP_REWRITE_PAUSE seconds skip it at once
        cache.set(paused_key, True, timeout=settings.SEARCH_DEEP_REWRITE_PAUSE)
        return _skipped(
            "llm_unavailable", f"The LLM did not answer in time ({exc}); the question was searched as asked."
        )
    except LLMError as exc:
        return _skipped("llm_error", f"The LLM refused the request ({exc}); the question was searched as asked.")
    try:
        queries = rewrite_parse(result.text, question)
    except RewriteParseError as exc:
        logger.warning("deep search: unreadable rewrite reply (%s): %.300r", exc, result.text)
        return _skipped(
            "reply_unreadable", f"The LLM's reply held no list of queries ({exc}); the question was searched as asked."
        )
    cache.set(key, queries, timeout=float(settings.SEARCH_DEEP_REWRITE_CACHE_TTL))
    return QueryRewrite(status="rewritten", queries=tuple(queries))


def memory_search_deep(
    principal: Principal, search: SearchQuery, *, query_vector: list[float], now: datetime | None = None
) -> SearchResult:
    """A deep search: the question and the LLM's queries each ranked by the usual pipeline, the
    rankings fused (``SEARCH_DEEP_REWRITE_FUSION``), then folded, limited and budgeted as usual."""
    with span("memory.search.rewrite") as current:
        rewrite = query_rewrite(principal, search.query)
        current.set_attributes(
            {
                "status": rewrite.status,
                "reason": rewrite.reason or "",
                "cached": rewrite.cached,
                "queries": len(rewrite.queries),
            }
        )
    if not rewrite.queries:
        result = memory_search(principal, search, query_vector=query_vector, now=now)
        result.rewrite = rewrite
        return result
    now = now or timezone.now()  # every query ranks recency against the same moment
    queries = [search.query, *rewrite.queries]
    rankings: list[list[SearchHit]] = []
    project = None
    for index, query in enumerate(queries):
        vector = query_vector if index == 0 else query_embed(query)
        ranked = memory_search_rank(principal, dataclasses.replace(search, query=query), query_vector=vector, now=now)
        rankings.append(ranked.hits)
        project = ranked.project
    fused = rankings_fuse(
        [[(hit.memory.id, hit.breakdown.relevance) for hit in hits] for hits in rankings],
        fusion=str(settings.SEARCH_DEEP_REWRITE_FUSION),
        weight=float(settings.SEARCH_DEEP_REWRITE_WEIGHT),
    )
    by_query = [{hit.memory.id: hit for hit in hits} for hits in rankings]
    hits: list[SearchHit] = []
    found_by: dict[str, tuple[str, ...]] = {}
    for candidate in fused:
        kept = by_query[candidate.query][candidate.key]
        hits.append(
            SearchHit(
                kept.memory,
                breakdown_relevance_set(kept.breakdown, candidate.relevance),
                kept.matched_by,
                code_changed=kept.code_changed,
            )
        )
        order = (candidate.query, *(i for i in candidate.found_by if i != candidate.query))
        found_by[candidate.key] = tuple(queries[i] for i in order)
    hits.sort(key=lambda hit: (-hit.breakdown.score, hit.memory.id))
    result = search_result_finish(hits, search, project=project, query_vector=query_vector)
    result.rewrite = rewrite
    result.found_by = {hit.memory.id: found_by[hit.memory.id] for hit in result.hits}
    return result
