"""REST views for memories (DESIGN §1, §7): thin — parse, call a service/selector, serialize.

Every response mirrors the seed 000 MCP tool responses where one exists, so REST and MCP clients
see the same shapes. Tenancy comes only from the token (``self.principal``); a memory of another
org or outside the token's reach is a 404 from ``memory_get``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from memories.models import Memory
from memories.selectors import (
    MemoryFilters,
    memory_get,
    memory_lineage,
    memory_list,
    memory_signals,
)
from memories.serializers import (
    EmptyBodySerializer,
    ErrorSerializer,
    FeedbackResponseSerializer,
    FeedbackSerializer,
    LineageSerializer,
    MemoryArchiveSerializer,
    MemoryCreateSerializer,
    MemoryListQuerySerializer,
    MemoryRecordedSerializer,
    MemorySearchSerializer,
    MemorySerializer,
    MemoryUpdateSerializer,
    OutcomeResponseSerializer,
    OutcomeSerializer,
    PaginatedMemorySerializer,
    PaginatedSignalSerializer,
    SearchHitSerializer,
    SearchResponseSerializer,
    SignalSerializer,
)
from memories.services import (
    memory_archive,
    memory_feedback,
    memory_outcome,
    memory_record,
    memory_restore,
    memory_search_use,
    memory_update,
    search_query_validate,
)
from reasoningbank.pagination import Pagination

READ = SCOPE_MEMORIES_READ
WRITE = SCOPE_MEMORIES_WRITE

ERRORS_READ = {401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
ERRORS_WRITE = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer}
PAGE_PARAMETERS = [
    OpenApiParameter("page", int, description="page number (1-based)"),
    OpenApiParameter("page_size", int, description="results per page (default 50, at most 200)"),
]
TAGS = ["memories"]


def _valid(serializer_class: type[Serializer], data: Any) -> dict[str, Any]:
    """Validated data, or a 400 naming the first bad field (through the API's error handler)."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class MemoryAPIView(OrgAPIView):
    """JSON bodies only: a form-encoded body is a 415, not a silently mis-typed boolean."""

    parser_classes = [JSONParser]

    def memory(self, memory_id: str) -> Memory:
        return memory_get(self.principal, memory_id)


class MemoryListView(MemoryAPIView):
    required_scopes = {"GET": READ, "POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_list",
        summary="List memories",
        parameters=[MemoryListQuerySerializer, *PAGE_PARAMETERS],
        responses={200: PaginatedMemorySerializer, 400: ErrorSerializer, **ERRORS_READ},
    )
    def get(self, request: Request) -> Response:
        params = _valid(MemoryListQuerySerializer, request.query_params)
        filters = MemoryFilters(
            project=params.get("project") or None,
            scope=params["scope"],
            state=None if params["state"] == "any" else params["state"],
            outcome=params.get("outcome") or None,
            kind=params.get("kind") or None,
            tier=params.get("tier") or None,
            origin=params.get("origin") or None,
            tags=tuple(params.get("tag", ())),
            min_confidence=params.get("min_confidence"),
            max_confidence=params.get("max_confidence"),
            text=params.get("q") or None,
            ordering=params["ordering"],
        )
        paginator = Pagination()
        page = paginator.paginate_queryset(memory_list(self.principal, filters), request, view=self)
        return paginator.get_paginated_response(MemorySerializer(page, many=True).data)

    @extend_schema(
        tags=TAGS,
        operation_id="memories_create",
        summary="Record a memory (seed 000 memory_record)",
        request=MemoryCreateSerializer,
        responses={201: MemoryRecordedSerializer, **ERRORS_WRITE},
    )
    def post(self, request: Request) -> Response:
        memory = memory_record(principal=self.principal, **_valid(MemoryCreateSerializer, request.data))
        body = {
            "id": memory.id,
            "message": "Memory recorded successfully",
            "initial_confidence": memory.confidence,
            "memory": MemorySerializer(memory).data,
        }
        return Response(body, status=status.HTTP_201_CREATED)


class MemoryDetailView(MemoryAPIView):
    required_scopes = {"GET": READ, "PATCH": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_retrieve",
        summary="Get a memory",
        responses={200: MemorySerializer, **ERRORS_READ},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(MemorySerializer(self.memory(memory_id)).data)

    @extend_schema(
        tags=TAGS,
        operation_id="memories_update",
        summary="Edit a memory's content",
        request=MemoryUpdateSerializer,
        responses={200: MemorySerializer, **ERRORS_WRITE},
    )
    def patch(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        changes = _valid(MemoryUpdateSerializer, request.data)
        memory = memory_update(principal=self.principal, memory=memory, changes=changes)
        return Response(MemorySerializer(memory).data)


class MemoryArchiveView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_archive",
        summary="Archive a memory (nothing is deleted; it can be restored)",
        request=MemoryArchiveSerializer,
        responses={200: MemorySerializer, **ERRORS_WRITE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        reason = _valid(MemoryArchiveSerializer, request.data)["reason"]
        return Response(MemorySerializer(memory_archive(principal=self.principal, memory=memory, reason=reason)).data)


class MemoryRestoreView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_restore",
        summary="Restore an archived memory",
        request=None,
        responses={200: MemorySerializer, **ERRORS_WRITE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        _valid(EmptyBodySerializer, request.data)
        return Response(MemorySerializer(memory_restore(principal=self.principal, memory=memory)).data)


class MemorySearchView(MemoryAPIView):
    required_scopes = {"POST": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_search",
        summary="Search memories (seed 000 memory_search); records a usage signal on each result",
        request=MemorySearchSerializer,
        responses={200: SearchResponseSerializer, **ERRORS_WRITE},
    )
    def post(self, request: Request) -> Response:
        args = _valid(MemorySearchSerializer, request.data)
        explain = args.pop("explain")
        search = search_query_validate(**args)
        result = memory_search_use(principal=self.principal, search=search)
        hits = SearchHitSerializer(result.hits, many=True, context={"explain": explain}).data
        return Response({"memories": hits, "total_found": result.total_found, "tokens_used": result.tokens_used})


class MemoryFeedbackView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_feedback",
        summary="Say whether a memory helped (seed 000 memory_feedback)",
        request=FeedbackSerializer,
        responses={200: FeedbackResponseSerializer, **ERRORS_WRITE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        args = _valid(FeedbackSerializer, request.data)
        result = memory_feedback(principal=self.principal, memory=memory, **args)
        return Response(
            {"success": True, "new_confidence": round(result.new_confidence, 4), "message": "Feedback recorded"}
        )


class MemoryOutcomeView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_outcome",
        summary="Report whether the task that used a memory succeeded (seed 000 memory_outcome)",
        request=OutcomeSerializer,
        responses={200: OutcomeResponseSerializer, **ERRORS_WRITE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        args = _valid(OutcomeSerializer, request.data)
        result = memory_outcome(principal=self.principal, memory=memory, **args)
        return Response(
            {"recorded": True, "new_confidence": round(result.new_confidence, 4), "message": "Outcome recorded"}
        )


class MemoryLineageView(MemoryAPIView):
    required_scopes = {"GET": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_lineage",
        summary="A memory's links both ways and what it was consolidated into / from",
        responses={200: LineageSerializer, **ERRORS_READ},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        return Response(LineageSerializer({"memory": memory, **memory_lineage(self.principal, memory)}).data)


class MemorySignalsView(MemoryAPIView):
    required_scopes = {"GET": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_signals",
        summary="A memory's recent confidence signals (newest first)",
        parameters=PAGE_PARAMETERS,
        responses={200: PaginatedSignalSerializer, **ERRORS_READ},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        paginator = Pagination()
        page = paginator.paginate_queryset(memory_signals(self.principal, memory), request, view=self)
        return paginator.get_paginated_response(SignalSerializer(page, many=True).data)
