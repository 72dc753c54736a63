"""REST view of ``memory_search`` (``POST /api/v1/memories/search``): thin — parse the contract's input,
run it, render its output (the same body as the MCP tool's)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from memories.core.api import ERRORS_GATED, READ, TAGS, MemoryAPIView, contract_render
from memories.search import contracts as c
from reasoningbank.contracts import contract_parse


class MemorySearchView(MemoryAPIView):
    required_scopes = {"POST": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_search",
        summary="Search memories",
        description=(
            "Find the memories that fit a task, by meaning and by keywords, ranked by similarity × "
            "confidence × recency × scope. `scope` widens or narrows where to look (`all` by default: the "
            "project, its team and the organization); `outcome` keeps only successes or failures. Each result "
            "counts as a use of that memory (it feeds its confidence); `explain: true` adds each result's "
            "score breakdown. Needs `memories:read`."
        ),
        request=c.SearchInput,
        responses={200: c.SearchOutput, **ERRORS_GATED},
    )
    def post(self, request: Request) -> Response:
        return contract_render(c.memory_search_run(self.principal, contract_parse(c.SearchInput, request.data)))
