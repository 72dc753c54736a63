"""What the search tests share: one memory's text recorded in many places, and a search through the
service an agent's search runs (``memory_search_use``: ranking and usage signals)."""

from __future__ import annotations

from memories.search.contracts import SearchInput
from memories.search.services import memory_search_use
from tests.factories import memory_recorder

TITLE = "Retry flaky network calls with jittered backoff"
DESCRIPTION = "When an HTTP client call to a third-party API times out intermittently"
CONTENT = "Wrap the call in a retry loop with exponential backoff and random jitter, capped at five tries."
QUERY = "retry flaky network calls with backoff"

record = memory_recorder(title=TITLE, description=DESCRIPTION, content=CONTENT)


def search(principal, query=QUERY, **kwargs):
    return memory_search_use(principal=principal, search=SearchInput(query=query, **kwargs).to_query())


def ids(result):
    return [hit.memory.id for hit in result.hits]
