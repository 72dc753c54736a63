"""REST view of ``memory_ask`` (``POST /api/v1/memories/ask``): thin — parse the contract's input,
run it, render its output (the same body as the MCP tool's)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from memories.ask import contracts as c
from memories.core.api import ERRORS_WRITE, READ, TAGS, MemoryAPIView, contract_render
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import contract_parse


class MemoryAskView(MemoryAPIView):
    required_scopes = {"POST": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_ask",
        summary="Ask a question of the memory bank",
        description=(
            "The configured LLM answers `question` from the memories a search retrieves for it (`limit`, "
            "`min_confidence`, `mode` and `project` as in search), each shown with the timestamp it was "
            'recorded at, so relative dates in them ("yesterday", "last week", "two days ago", weekdays) '
            "are resolved against when they were written. A deterministic resolver checks the LLM's "
            "`temporal_resolutions`: `agrees` says whether it reads a phrase the same way, a date it is sure "
            "is wrong is corrected (`corrected_from`, and a sentence in `warnings`), and phrases in the cited "
            "memories the LLM left out are added (`source: resolver`). `source_memory_ids` are the memories the "
            "answer rests on; with a `session_id` they are noted as given to that session. When the search finds "
            "nothing the answer says so and the LLM is not asked (`llm_called: false`). Without an LLM "
            "(`LLM_PROVIDER=none`) the answer is a 503 `llm_not_configured`, never a made-up answer; an org over "
            "its monthly LLM budget gets a 403 `limit_exceeded`. Each LLM call is metered. The same operation as "
            "the MCP tool `memory_ask`. Needs `memories:read`."
        ),
        request=c.AskInput,
        responses={
            200: c.AskOutput,
            **ERRORS_WRITE,
            **error_responses(
                403,
                502,
                503,
                described={
                    403: "The token lacks `memories:read`, or the organization's monthly LLM budget is used up "
                    "(`limit_exceeded`).",
                    502: "The LLM refused the request (`llm_error`) or its reply could not be read as an answer "
                    "(`llm_reply_invalid`): no answer is given.",
                    503: "No LLM is configured (`llm_not_configured`: set `LLM_PROVIDER` and `LLM_API_KEY`), the "
                    "provider did not answer (`llm_unavailable`), or the database is unreachable.",
                },
            ),
        },
    )
    def post(self, request: Request) -> Response:
        return contract_render(c.memory_ask_run(self.principal, contract_parse(c.AskInput, request.data)))
