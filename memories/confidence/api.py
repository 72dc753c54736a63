"""REST views of a memory's confidence signals: feedback and outcome reports (their contracts,
``memories/confidence/contracts.py``: the same bodies as the MCP tools'), and the signals behind a
memory's confidence, one page at a time."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from memories.confidence import contracts as c
from memories.confidence.selectors import memory_signals
from memories.core.api import (
    ERRORS_LIST,
    ERRORS_WRITE,
    MEMORY_ID,
    READ,
    TAGS,
    WRITE,
    MemoryAPIView,
    contract_render,
    serializer_validate,
)
from memories.core.serializers import SignalSerializer
from reasoningbank.contracts import contract_parse
from reasoningbank.serializers import EmptyQuerySerializer


class MemoryFeedbackView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_feedback",
        summary="Say whether a memory helped",
        description=(
            "Explicit feedback on a memory (`helpful: true` or `false`, an optional comment). It moves the "
            "memory's confidence, which ranks it in search, and answers the new confidence. Needs "
            "`memories:write`."
        ),
        request=c.FeedbackBody,
        parameters=[MEMORY_ID],
        responses={200: c.FeedbackOutput, **ERRORS_WRITE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        args = contract_parse(c.FeedbackInput, request.data, memory_id=memory_id)
        return contract_render(c.memory_feedback_run(self.principal, args))


class MemoryOutcomeView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_outcome",
        summary="Report the outcome of a task that used a memory",
        description=(
            "Say whether the task that used this memory succeeded (`succeeded`), optionally naming your "
            "session (`session_id`). A weaker signal than feedback; it also moves the memory's confidence. "
            "Needs `memories:write`."
        ),
        request=c.OutcomeBody,
        parameters=[MEMORY_ID],
        responses={200: c.OutcomeOutput, **ERRORS_WRITE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        args = contract_parse(c.OutcomeInput, request.data, memory_id=memory_id)
        return contract_render(c.memory_outcome_run(self.principal, args))


class MemorySignalsView(MemoryAPIView):
    required_scopes = {"GET": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_signals",
        summary="A memory's confidence signals",
        description=(
            "The feedback, outcome reports, uses and code-stability reports (`type` `explicit`, `outcome`, "
            "`usage`, `stability`) behind a memory's confidence, newest first, one page at a "
            "time. Needs `memories:read`."
        ),
        parameters=[MEMORY_ID],
        responses={200: SignalSerializer(many=True), **ERRORS_LIST},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        serializer_validate(EmptyQuerySerializer, request.query_params)
        memory = self.memory(memory_id)
        page = self.paginate_queryset(memory_signals(self.principal, memory))
        return self.get_paginated_response(SignalSerializer(page, many=True).data)
