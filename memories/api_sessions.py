"""REST views for agent sessions (distillation): submit, list, detail, retry."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from memories.distillation import SESSION_OUTCOMES, session_retry, session_submit
from memories.selectors_sessions import session_get, session_list
from reasoningbank.pagination import Pagination


class SessionSubmitSerializer(serializers.Serializer):
    session_id = serializers.CharField(max_length=200, help_text="the agent's own id for the session (idempotency key)")
    outcome = serializers.ChoiceField(choices=SESSION_OUTCOMES)
    trace = serializers.CharField(trim_whitespace=False, help_text="the session transcript; secrets are scrubbed")
    project = serializers.CharField(
        required=False, allow_null=True, help_text="project slug (optional for single-project tokens)"
    )


class SessionSerializer(serializers.Serializer):
    id = serializers.CharField()
    session_id = serializers.CharField(source="external_id")
    project = serializers.CharField(source="project.slug")
    outcome = serializers.CharField()
    status = serializers.CharField()
    attempts = serializers.IntegerField()
    error = serializers.CharField()
    redactions = serializers.IntegerField()
    memories = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    next_attempt_at = serializers.DateTimeField(allow_null=True)

    def get_memories(self, obj) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
        return [{"id": m.id, "title": m.title} for m in obj.memories.all()]


class SessionDetailSerializer(SessionSerializer):
    trace = serializers.CharField()
    raw_reply = serializers.CharField()


class SessionListCreateView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ, "POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=["queued", "running", "done", "failed", "waiting_for_llm"]),
            OpenApiParameter("project", str),
        ],
        responses=SessionSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        qs = session_list(
            self.principal, status=request.query_params.get("status"), project=request.query_params.get("project")
        )
        paginator = Pagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(SessionSerializer(page, many=True).data)

    @extend_schema(request=SessionSubmitSerializer, responses={201: SessionSerializer, 200: SessionSerializer})
    def post(self, request: Request) -> Response:
        data = SessionSubmitSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = session_submit(principal=self.principal, **data.validated_data)
        return Response(
            SessionSerializer(result.session).data,
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )


class SessionDetailView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(responses=SessionDetailSerializer)
    def get(self, request: Request, session_id: str) -> Response:
        return Response(SessionDetailSerializer(session_get(self.principal, session_id)).data)


class SessionRetryView(OrgAPIView):
    required_scopes = {"POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(request=None, responses=SessionSerializer)
    def post(self, request: Request, session_id: str) -> Response:
        session = session_retry(principal=self.principal, session=session_get(self.principal, session_id))
        return Response(SessionSerializer(session).data)
