"""REST views for consolidation runs: request (manual trigger), list, detail; disputes; un-merge."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_CONSOLIDATION_RUN, SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from consolidation.selectors import disputed_list, run_get, run_list
from consolidation.services import (
    RESOLUTIONS,
    consolidation_enqueue,
    consolidation_execute,
    consolidation_request,
    contradiction_resolve,
    memory_unmerge,
    project_argument,
    run_options_validate,
)
from memories.selectors import memory_get, project_resolve, project_target
from reasoningbank.errors import InvalidInput, NotFound
from reasoningbank.pagination import Pagination

TAGS = ["consolidation"]


class RunRequestSerializer(serializers.Serializer):
    project = serializers.CharField(
        required=False, allow_blank=True, help_text="the project's slug (only needed when the token reaches several)"
    )
    project_id = serializers.CharField(required=False, allow_blank=True, help_text="same as project (seed 000's name)")
    similarity_threshold = serializers.FloatField(required=False, allow_null=True, default=None)
    dry_run = serializers.BooleanField(required=False, default=False)
    max_clusters = serializers.IntegerField(required=False, default=0)
    force = serializers.BooleanField(required=False, default=False, help_text="ignore the 24 h window")
    wait = serializers.BooleanField(
        required=False, default=False, help_text="run now and answer when done (else 202 and poll the run)"
    )


class RunSerializer(serializers.Serializer):
    id = serializers.CharField()
    project = serializers.CharField(source="project.slug", allow_null=True)
    trigger = serializers.CharField()
    status = serializers.CharField()
    dry_run = serializers.BooleanField()
    options = serializers.JSONField()
    phase = serializers.CharField()
    progress = serializers.FloatField()
    counters = serializers.JSONField()
    phase_durations = serializers.JSONField()
    warnings = serializers.JSONField()
    errors = serializers.JSONField()
    preview = serializers.JSONField()
    result = serializers.JSONField()
    llm_calls = serializers.IntegerField()
    llm_input_tokens = serializers.IntegerField()
    llm_output_tokens = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RunListCreateView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ, "POST": SCOPE_CONSOLIDATION_RUN}

    @extend_schema(tags=TAGS, responses=RunSerializer(many=True))
    def get(self, request: Request) -> Response:
        project = (
            project_resolve(self.principal, request.query_params.get("project"))
            if request.query_params.get("project")
            else None
        )
        paginator = Pagination()
        page = paginator.paginate_queryset(run_list(self.principal, project=project), request, view=self)
        return paginator.get_paginated_response(RunSerializer(page, many=True).data)

    @extend_schema(tags=TAGS, request=RunRequestSerializer, responses={202: RunSerializer, 200: RunSerializer})
    def post(self, request: Request) -> Response:
        data = RunRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        project = project_target(
            self.principal, project_argument(project=values.get("project"), project_id=values.get("project_id"))
        )
        options = run_options_validate(
            similarity_threshold=values["similarity_threshold"],
            max_clusters=values["max_clusters"],
            dry_run=values["dry_run"],
            force=values["force"],
        )
        run = consolidation_request(principal=self.principal, project=project, options=options)
        if values["wait"]:
            run = consolidation_execute(run.id) or run_get(self.principal, run.id)
            return Response(RunSerializer(run).data, status=status.HTTP_200_OK)
        consolidation_enqueue(run)
        return Response(RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


class RunDetailView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(tags=TAGS, responses=RunSerializer)
    def get(self, request: Request, run_id: str) -> Response:
        return Response(RunSerializer(run_get(self.principal, run_id)).data)


class DisputeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    first = serializers.SerializerMethodField()
    second = serializers.SerializerMethodField()
    confidence = serializers.FloatField(source="weight")
    explanation = serializers.CharField(source="reason")
    created_at = serializers.DateTimeField()
    resolved_at = serializers.DateTimeField(allow_null=True)

    def get_first(self, link) -> dict:  # type: ignore[no-untyped-def]
        return {"id": link.source.id, "title": link.source.title, "content": link.source.content}

    def get_second(self, link) -> dict:  # type: ignore[no-untyped-def]
        return {"id": link.target.id, "title": link.target.title, "content": link.target.content}


class DisputeListView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(tags=TAGS, responses=DisputeSerializer(many=True))
    def get(self, request: Request) -> Response:
        paginator = Pagination()
        page = paginator.paginate_queryset(disputed_list(self.principal), request, view=self)
        return paginator.get_paginated_response(DisputeSerializer(page, many=True).data)


class DisputeResolveSerializer(serializers.Serializer):
    resolution = serializers.ChoiceField(choices=RESOLUTIONS)


class DisputeResolveView(OrgAPIView):
    required_scopes = {"POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(tags=TAGS, request=DisputeResolveSerializer, responses=DisputeSerializer)
    def post(self, request: Request, link_id: str) -> Response:
        data = DisputeResolveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        link = (
            disputed_list(self.principal, include_resolved=True).filter(pk=link_id if link_id.isdigit() else -1).first()
        )
        if link is None:
            raise NotFound(f"dispute {link_id!r} not found")
        link = contradiction_resolve(principal=self.principal, link=link, resolution=data.validated_data["resolution"])
        return Response(DisputeSerializer(link).data)


class MemoryUnmergeView(OrgAPIView):
    required_scopes = {"POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(tags=TAGS, request=None, responses={200: serializers.DictField()})
    def post(self, request: Request, memory_id: str) -> Response:
        memory = memory_get(self.principal, memory_id)
        if memory.state != "active":
            raise InvalidInput("this consolidated memory is already archived", field="memory_id")
        restored = memory_unmerge(principal=self.principal, memory=memory)
        return Response({"archived": memory.id, "restored": [m.id for m in restored]})
