"""REST views of a session's starting context (``POST /api/v1/memories/context``, the contract
``memory_context``: the same body as the MCP tool's) and of the consolidated summaries it is made of
(list and get, the same ``SummaryOut`` search's ``summaries`` carry; docs/session-context.md). Thin:
parse, call the contract or a selector, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import Field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ
from memories.context.contracts import ContextInput, ContextOutput, SummaryOut, memory_context_run
from memories.context.selectors import summaries_list, summaries_usable, summary_get
from memories.core.api import ERRORS_WRITE, READ, MemoryAPIView, contract_render
from memories.core.api import TAGS as MEMORY_TAGS
from memories.models import MemorySummary
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import Contract, contract_parse
from reasoningbank.pagination import PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX
from reasoningbank.serializers import StrictQuerySerializer

TAGS = ["summaries"]
# the list answers a pydantic page, so drf-spectacular does not add the paginator's parameters itself
PAGE_PARAMETERS = [
    OpenApiParameter("page", {"type": "integer", "minimum": 1, "default": 1}, description="Page number, from 1."),
    OpenApiParameter(
        "page_size",
        {"type": "integer", "minimum": 1, "maximum": PAGE_SIZE_MAX, "default": PAGE_SIZE_DEFAULT},
        description=f"Results per page (default {PAGE_SIZE_DEFAULT}, at most {PAGE_SIZE_MAX}).",
    ),
]


class SummaryListQuerySerializer(StrictQuerySerializer):
    project = serializers.SlugField(required=False, help_text="project slug")
    status = serializers.ChoiceField(
        choices=[MemorySummary.STATUS_READY, MemorySummary.STATUS_REJECTED],
        required=False,
        help_text="ready (served to sessions and search) or rejected (the reply could not be parsed)",
    )
    memory = serializers.CharField(required=False, max_length=40, help_text="the consolidated memory's id")


class SummaryPage(Contract):
    count: int = Field(description="how many results there are over all pages")
    next: str | None = Field(description="the URL of the next page, null on the last")
    previous: str | None = Field(description="the URL of the previous page, null on the first")
    results: list[SummaryOut]


class SummaryListView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        tags=TAGS,
        operation_id="summaries_list",
        summary="List consolidated summaries",
        description=(
            "What consolidation learned from each cluster it synthesised: a summary, key facts, "
            "decisions and superseded facts, linked to the consolidated memory and its sources, newest first, "
            "one page at a time. `status=rejected` lists the replies that could not be parsed, with the "
            "error. Sessions start with the ready ones (`memory_context`), and search returns the closest. "
            "Needs `memories:read`."
        ),
        parameters=[SummaryListQuerySerializer, *PAGE_PARAMETERS],
        responses={200: SummaryPage, **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        params = SummaryListQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        qs = summaries_list(self.principal, **params.validated_data)
        page = self.paginate_queryset(qs)
        # a row no read can render is left out of its page and logged (docs/security/imports.md)
        usable = summaries_usable(page, read="list")
        return self.get_paginated_response([SummaryOut.of(s).model_dump(mode="json") for s in usable])


class SummaryDetailView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        tags=TAGS,
        operation_id="summaries_get",
        summary="Get a consolidated summary",
        description="One summary by id (`sum_…`), with its sources and the run that wrote it. Needs `memories:read`.",
        parameters=[OpenApiParameter("summary_id", str, OpenApiParameter.PATH, description="the summary's id")],
        responses={200: SummaryOut, **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, summary_id: str) -> Response:
        return Response(SummaryOut.of(summary_get(self.principal, summary_id)).model_dump(mode="json"))


class MemoryContextView(MemoryAPIView):
    required_scopes = {"POST": READ}

    @extend_schema(
        tags=MEMORY_TAGS,
        operation_id="memories_context",
        summary="Build a session's starting context",
        description=(
            "The `<memory_consolidated_summaries>` block a session starts with: the project's best knowledge "
            "(its consolidated summaries, then its highest-confidence procedural memories), at most `max` "
            "entries above `min_confidence` (never below the injection floor "
            "`CONFIDENCE_MIN_FOR_INJECTION`: a lower value is raised to it, and the answer's `min_confidence` "
            "says what was applied), within `token_budget`, ordered by `prioritize`. Pass the session's "
            "existing `context` and the answer's `context` holds exactly one block: an earlier one is replaced. "
            "Records no usage. The same operation as the MCP tool `memory_context`; "
            "the Claude Code plugin's SessionStart hook calls it. Needs `memories:read`."
        ),
        request=ContextInput,
        responses={200: ContextOutput, **ERRORS_WRITE},
    )
    def post(self, request: Request) -> Response:
        return contract_render(memory_context_run(self.principal, contract_parse(ContextInput, request.data)))
