"""REST views of moderation: archive and restore a memory, un-merge a consolidated one, and the
contradictions consolidation set aside (list, resolve) — thin: parse, call a moderation service or
selector, serialize. The dispute and un-merge routes keep the paths they were published under
(``/api/v1/consolidation/disputes…``, ``/api/v1/memories/{id}/unmerge``, tag ``consolidation``)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memories.core.api import ERRORS_WRITE, MEMORY_ID, READ, TAGS, WRITE, MemoryAPIView, serializer_validate
from memories.core.serializers import MemoryArchiveSerializer, MemorySerializer
from memories.moderation.selectors import disputed_list
from memories.moderation.services import (
    RESOLUTIONS,
    contradiction_resolve,
    memory_archive,
    memory_restore,
    memory_unmerge,
)
from reasoningbank.api_errors import error_responses
from reasoningbank.errors import NotFound
from reasoningbank.serializers import EmptyBodySerializer, EmptyQuerySerializer, StrictSerializer

# disputes and un-merge were published with consolidation's runs: their docs stay in that section
CONSOLIDATION_TAGS = ["consolidation"]


class MemoryArchiveView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_archive",
        summary="Archive a memory",
        description=(
            "Take a memory out of search without deleting it; `POST …/restore` brings it back. The optional "
            "`reason` is one of `manual` (default), `stale`, `superseded`, `duplicate` or `consolidated` "
            "(see `ArchiveReasonEnum`). Archiving an archived memory changes nothing and answers it as it is. "
            "Needs `memories:write`."
        ),
        request=MemoryArchiveSerializer,
        parameters=[MEMORY_ID],
        responses={200: MemorySerializer, **ERRORS_WRITE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        reason = serializer_validate(MemoryArchiveSerializer, request.data)["reason"]
        return Response(MemorySerializer(memory_archive(principal=self.principal, memory=memory, reason=reason)).data)


class MemoryRestoreView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_restore",
        summary="Restore an archived memory",
        description=(
            "Make an archived memory active again, whatever archived it; its links stay as history. No body "
            "(or `{}`). A memory that is already active is a 409. Needs `memories:write`."
        ),
        request=None,
        parameters=[MEMORY_ID],
        responses={
            200: MemorySerializer,
            **error_responses(
                400, 401, 403, 404, 409, 415, conflict="The memory is already active: nothing to restore."
            ),
        },
    )
    def post(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        serializer_validate(EmptyBodySerializer, request.data)
        return Response(MemorySerializer(memory_restore(principal=self.principal, memory=memory)).data)


class DisputeMemorySerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    content = serializers.CharField()


class DisputeSerializer(serializers.Serializer):
    """Two memories that contradict each other, as judged during consolidation."""

    id = serializers.IntegerField(help_text="the dispute's id, for resolving it")
    first = DisputeMemorySerializer(source="source")
    second = DisputeMemorySerializer(source="target")
    confidence = serializers.FloatField(source="weight", help_text="how sure the judge was that they contradict")
    explanation = serializers.CharField(source="reason")
    created_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)


class DisputeListView(MemoryAPIView):
    required_scopes = {"GET": READ}

    @extend_schema(
        tags=CONSOLIDATION_TAGS,
        operation_id="consolidation_disputes_list",
        summary="List contradictions awaiting a moderator",
        description=(
            "Pairs of memories that consolidation found to contradict each other and that nobody has resolved "
            "yet, newest first, one page at a time. Both stay active until resolved. Needs `memories:read`."
        ),
        responses={200: DisputeSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        EmptyQuerySerializer(data=request.query_params).is_valid(raise_exception=True)
        page = self.paginate_queryset(disputed_list(self.principal))
        return self.get_paginated_response(DisputeSerializer(page, many=True).data)


class DisputeResolveSerializer(StrictSerializer):
    resolution = serializers.ChoiceField(
        choices=[
            ("keep_first", "keep the first memory; the second is archived as superseded"),
            ("keep_second", "keep the second memory; the first is archived as superseded"),
            ("keep_both", "both are right (in their own context): keep both"),
        ],
        help_text="which memory to keep",
    )


assert {c for c, _ in DisputeResolveSerializer().fields["resolution"].choices.items()} == set(RESOLUTIONS)


class DisputeResolveView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=CONSOLIDATION_TAGS,
        operation_id="consolidation_disputes_resolve",
        summary="Resolve a contradiction",
        description=(
            "Settle a dispute: keep the first memory, the second, or both. The one not kept is archived as "
            "superseded and linked to the one kept. A dispute already resolved is a 409. Needs `memories:write`."
        ),
        parameters=[OpenApiParameter("link_id", str, OpenApiParameter.PATH, description="the dispute's `id`")],
        request=DisputeResolveSerializer,
        responses={
            200: DisputeSerializer,
            **error_responses(400, 401, 403, 404, 409, 415, conflict="The dispute is already resolved."),
        },
    )
    def post(self, request: Request, link_id: str) -> Response:
        data = DisputeResolveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        link = (
            disputed_list(self.principal, include_resolved=True)
            .filter(pk=link_id if link_id.isascii() and link_id.isdigit() and len(link_id) < 19 else -1)
            .first()
        )
        if link is None:
            raise NotFound(f"dispute {link_id!r} not found", field="link_id")
        link = contradiction_resolve(principal=self.principal, link=link, resolution=data.validated_data["resolution"])
        return Response(DisputeSerializer(link).data)


class UnmergeSerializer(serializers.Serializer):
    archived = serializers.CharField(help_text="the consolidated memory, now archived")
    restored = serializers.ListField(child=serializers.CharField(), help_text="its sources, active again")


class MemoryUnmergeView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=CONSOLIDATION_TAGS,
        operation_id="memories_unmerge",
        summary="Un-merge a consolidated memory",
        description=(
            "Undo a consolidation: the source memories of this consolidated memory become active again and the "
            "consolidated memory is archived; the links stay as history. Only an active consolidated memory "
            "(`origin: consolidated`) can be un-merged: for any other memory the 409 says what to do instead "
            "(a memory archived as a duplicate is brought back with restore; a source is brought back by "
            "un-merging its consolidated memory). No body (or `{}`). Needs `memories:write`."
        ),
        parameters=[MEMORY_ID],
        request=None,
        responses={
            200: UnmergeSerializer,
            **error_responses(
                400, 401, 403, 404, 409, 415, conflict="This memory cannot be un-merged; the message says what to do."
            ),
        },
    )
    def post(self, request: Request, memory_id: str) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        memory = self.memory(memory_id)
        restored = memory_unmerge(principal=self.principal, memory=memory)
        return Response({"archived": memory.id, "restored": [m.id for m in restored]})
