"""REST views for consolidation runs: request (manual trigger), list, detail. (The disputes it sets aside
and un-merge are moderation's: ``memories/moderation/api.py``.)

Thin: parse, call a service/selector, serialize. Texts in ``extend_schema`` are the public API
documentation, written for API users (no class docstrings on the views: drf-spectacular would
publish them). Bodies are strict JSON objects like everywhere in the API (``StrictSerializer``).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_CONSOLIDATION_RUN, SCOPE_MEMORIES_READ
from consolidation.contracts import ConsolidateOutput, ConsolidateRestInput, memory_consolidate_run
from consolidation.models import ConsolidationRun
from consolidation.selectors import run_get, run_list
from memories.reads import project_resolve
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import contract_parse
from reasoningbank.serializers import (
    StrictQuerySerializer,
)

TAGS = ["consolidation"]
RUN_STATUSES = tuple(s for s, _ in ConsolidationRun.STATUS_CHOICES)


class RunListQuerySerializer(StrictQuerySerializer):
    project = serializers.CharField(required=False, help_text="only this project's runs (its slug)")


class RunSerializer(serializers.Serializer):
    """A consolidation run: its progress while it works, then what it changed (or would change)."""

    id = serializers.CharField(help_text="`run_…`")
    project = serializers.CharField(source="project.slug", allow_null=True)
    trigger = serializers.ChoiceField(choices=[t for t, _ in ConsolidationRun.TRIGGER_CHOICES])
    status = serializers.ChoiceField(choices=RUN_STATUSES)
    dry_run = serializers.BooleanField(help_text="a preview: nothing was or will be changed")
    options = serializers.JSONField()
    phase = serializers.CharField()
    progress = serializers.FloatField(help_text="0 to 1")
    counters = serializers.JSONField()
    phase_durations = serializers.JSONField()
    warnings = serializers.JSONField()
    errors = serializers.JSONField()
    preview = serializers.JSONField(help_text="what a dry run would do")
    result = serializers.JSONField(help_text="created and archived memories, when finished")
    llm_calls = serializers.IntegerField()
    llm_input_tokens = serializers.IntegerField()
    llm_output_tokens = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class RunListCreateView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ, "POST": SCOPE_CONSOLIDATION_RUN}

    @extend_schema(
        tags=TAGS,
        operation_id="consolidation_runs_list",
        summary="List consolidation runs",
        description=(
            "Consolidation runs of the projects the token reaches (manual, scheduled and on-demand), newest "
            "first, one page at a time; optionally only one `project`'s. Needs `memories:read`."
        ),
        parameters=[RunListQuerySerializer],
        responses={200: RunSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        query = RunListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        slug = query.validated_data.get("project")
        project = project_resolve(self.principal, slug) if slug else None
        page = self.paginate_queryset(run_list(self.principal, project=project))
        return self.get_paginated_response(RunSerializer(page, many=True).data)

    @extend_schema(
        tags=TAGS,
        operation_id="consolidation_runs_create",
        summary="Consolidate a project",
        description=(
            "Start a consolidation run on a project: near-identical memories are merged, groups of similar ones "
            "are synthesized into one consolidated memory (their sources archived, see lineage and un-merge), "
            "contradictions are set aside for a moderator and stale memories are archived. `dry_run: true` "
            "only previews. Answers 202 at once with the queued run's id (poll `GET …/runs/{run_id}`), or with "
            "`wait: true` 200 with the finished run's statistics (the same body as the MCP tool "
            "`memory_consolidate`). One run at a time per project (409 otherwise); a requested run runs however "
            "recently the project was consolidated (`force` is accepted and has no effect). Needs "
            "`consolidation:run` and the Pro plan or above."
        ),
        request=ConsolidateRestInput,
        responses={
            202: ConsolidateOutput,
            200: ConsolidateOutput,
            **error_responses(
                400, 401, 403, 404, 409, 415, conflict="A run of this project is already queued or running."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        args = contract_parse(ConsolidateRestInput, request.data)
        output = memory_consolidate_run(self.principal, args, wait=args.wait)
        return Response(
            output.model_dump(mode="json"), status=status.HTTP_200_OK if args.wait else status.HTTP_202_ACCEPTED
        )


class RunDetailView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        tags=TAGS,
        operation_id="consolidation_runs_retrieve",
        summary="Get a consolidation run",
        description=(
            "A run's status, phase and progress while it works; then its counters, the memories it created "
            "and archived (`result`) or, for a dry run, what it would do (`preview`), and its LLM usage. "
            "Needs `memories:read`."
        ),
        parameters=[OpenApiParameter("run_id", str, OpenApiParameter.PATH, description="the run's id (`run_…`)")],
        responses={200: RunSerializer, **error_responses(401, 403, 404)},
    )
    def get(self, request: Request, run_id: str) -> Response:
        return Response(RunSerializer(run_get(self.principal, run_id)).data)
