"""REST view of ``memory_recall`` (``POST /api/v1/memories/recall``): thin — parse the contract's input,
run it, render its output (the same body as the MCP tool's; docs/code-memory.md#recall-at-the-moment-of-action)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from memories.code import contracts_recall as c
from memories.core.api import ERRORS_GATED, READ, TAGS, MemoryAPIView, contract_render
from reasoningbank.contracts import contract_parse


class MemoryRecallView(MemoryAPIView):
    required_scopes = {"POST": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_recall",
        summary="Recall the memories about a file or an error",
        description=(
            "What the team knows about the file an agent is about to read or change (`path`: the memories "
            "anchored to it, then to its directory) or about the error a command just failed with (`error`: "
            "the memories anchored to the same error signature), framed for injection as per-prompt recall "
            "frames them: only what the organization's injection policy lets be injected, within "
            "`token_budget`, and never a memory the session (`session_id`) was given before; what is returned "
            "is noted as given to it. A memory whose code changed since says so (`code_changed`). Needs "
            "`memories:read`."
        ),
        request=c.RecallInput,
        responses={200: c.RecallOutput, **ERRORS_GATED},
    )
    def post(self, request: Request) -> Response:
        return contract_render(c.memory_recall_run(self.principal, contract_parse(c.RecallInput, request.data)))
