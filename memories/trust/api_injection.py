"""REST views of the review for injection (docs/security/memory-poisoning.md#injection-policy): the
memories waiting for review before they are injected, and clearing one (the policy itself is part of the
trust policy, ``api_policy``) — thin: parse, call a selector or service, serialize. Texts in
``extend_schema`` are the public API documentation."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import SCOPE_ADMIN
from memories.core.api import MEMORY_ID, MemoryAPIView, serializer_validate
from memories.models import Memory
from memories.trust.selectors_injection import injection_pending_list, memory_label
from memories.trust.services_injection import memory_injection_clear
from reasoningbank.api_errors import error_responses
from reasoningbank.serializers import EmptyBodySerializer, EmptyQuerySerializer

TAGS = ["trust"]


class InjectionReviewSerializer(serializers.Serializer):
    """A memory as the review for injection shows it: its text, where it is, where it came from, and
    whether it may be injected automatically."""

    id = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    content = serializers.CharField()
    project = serializers.CharField(source="project.slug", allow_null=True, default=None, help_text="project slug")
    team = serializers.CharField(source="team.slug", allow_null=True, default=None, help_text="team slug")
    state = serializers.ChoiceField(choices=[s for s, _ in Memory.STATE_CHOICES])
    trust = serializers.ChoiceField(
        choices=[t for t, _ in Memory.TRUST_CHOICES],
        help_text="`trusted`: the hooks and memory_context may inject it; `pending`: it waits for an admin's review",
    )
    source = serializers.SerializerMethodField(help_text="who wrote it, how, through which client and when")
    reviewed_by = serializers.EmailField(source="reviewed_by.email", allow_null=True, default=None)
    reviewed_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    def get_source(self, memory: Memory) -> str:
        return memory_label(memory)


class InjectionPendingListView(MemoryAPIView):
    required_scopes = {"GET": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="trust_injection_pending_list",
        summary="Memories waiting for review before injection",
        description=(
            "Active memories the hooks and memory_context do not inject until an admin clears them (`trust: "
            "pending`: written by an OAuth app the organization does not trust, a read-only token, or imported), "
            "oldest first, one page at a time, each with its source. An explicit search still finds them. "
            "Needs `admin`."
        ),
        responses={200: InjectionReviewSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        EmptyQuerySerializer(data=request.query_params).is_valid(raise_exception=True)
        page = self.paginate_queryset(injection_pending_list(self.principal))
        return self.get_paginated_response(InjectionReviewSerializer(page, many=True).data)


class MemoryInjectionClearView(MemoryAPIView):
    required_scopes = {"POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="trust_injection_clear",
        summary="Clear a memory for injection",
        description=(
            "An admin's review: the memory (active, `trust: pending`) becomes `trusted`, so the hooks and "
            "memory_context may inject it; the reviewer and the time are kept on it and the change is audited "
            "(`memory.injection_clear`). No body (or `{}`). A memory already trusted, quarantined (approve it in "
            "the quarantine review) or archived is a 409. Needs `admin`."
        ),
        request=None,
        parameters=[MEMORY_ID],
        responses={
            200: InjectionReviewSerializer,
            **error_responses(400, 401, 403, 404, 409, 415, conflict="The memory has nothing to clear."),
        },
    )
    def post(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        serializer_validate(EmptyBodySerializer, request.data)
        cleared = memory_injection_clear(principal=self.principal, memory=memory)
        return Response(InjectionReviewSerializer(cleared).data)
