"""The write a search makes: each memory an agent asked for and was plausibly given counts as a use of it (a
usage signal, which moves its confidence); a search for an injection (the hooks' recall) uses nothing — what it
puts in the agent's context is an impression, counted by the caller once the block is built
(docs/confidence.md#impressions-and-use). The reads behind a search are ``memories/search/selectors.py``."""

from __future__ import annotations

import time

from django.conf import settings

from accounts.access import Principal
from memories.confidence.services import memories_mark_used
from memories.embedding import query_embed
from memories.search.selectors import SearchQuery, SearchResult, memory_search
from memories.search.services_deep import memory_search_deep
from reasoningbank.db_replica import replica_read


def memory_search_use(*, principal: Principal, search: SearchQuery) -> SearchResult:
    """Search, then record a usage signal (docs/search.md#usage-signals) on each returned memory whose
    fused relevance reaches ``SEARCH_USAGE_MIN_RELEVANCE`` — unless the search is for an injection."""
    started = time.perf_counter()
    vector = query_embed(search.query)
    embedding_ms = (time.perf_counter() - started) * 1000
    # a deep search may rewrite the question through the LLM (docs/search.md#deep-search-rewriting-the-question);
    # either reads from the read replica when there is one (docs/operations.md#a-read-replica)
    read = memory_search_deep if search.mode == "deep" else memory_search
    result = replica_read(read, principal, search, query_vector=vector)
    result.embedding_ms = embedding_ms
    if search.injection:  # shown without being asked for: an impression, not a use
        return result
    # only results an agent plausibly used: ranking noise below the floor must not feed confidence
    floor = settings.SEARCH_USAGE_MIN_RELEVANCE
    # (an archived memory an exhaustive search surfaced is shown, not used)
    used = [hit.memory for hit in result.hits if hit.breakdown.relevance >= floor and hit.memory.state == "active"]
    # on the primary, like every write; a search's own usage signals keep no later read off the replica
    memories_mark_used(principal=principal, memories=used, project=result.project, write_behind=True)
    return result
