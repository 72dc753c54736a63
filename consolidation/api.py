"""REST views for consolidation runs: request (manual trigger), list, detail; disputes; un-merge.

Thin: parse, call a service/selector, serialize. Texts in ``extend_schema`` are the public API
documentation, written for API users (no class docstrings on the views: drf-spectacular would
publish them). Bodies are strict JSON objects like everywhere in the API (``StrictSerializer``).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_CONSOLIDATION_RUN, SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from consolidation.contracts import ConsolidateOutput, ConsolidateRestInput, memory_consolidate_run
from consolidation.models import ConsolidationRun
from consolidation.selectors import run_get, run_list
from memories.api import MEMORY_ID
from memories.moderation import RESOLUTIONS, contradiction_resolve, memory_unmerge
from memories.selectors import disputed_list, memory_get, project_resolve
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import contract_parse
from reasoningbank.errors import NotFound
from reasoningbank.pagination import Pagination
from reasoningbank.serializers import (
    EmptyBodySerializer,
    EmptyQuerySerializer,
    StrictQuerySerializer,
    StrictSerializer,
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


class ConsolidationAPIView(OrgAPIView):
    # JSON bodies only, as everywhere in the API
    parser_classes = [JSONParser]


class RunListCreateView(ConsolidationAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ, "POST": SCOPE_CONSOLIDATION_RUN}
    pagination_class = Pagination

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
        paginator = Pagination()
        page = paginator.paginate_queryset(run_list(self.principal, project=project), request, view=self)
        return paginator.get_paginated_response(RunSerializer(page, many=True).data)

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
            "`memory_consolidate`). One run at a time per project (409 otherwise); a project is not "
            "consolidated twice within 24 h unless `force`. Needs `consolidation:run` and the Pro plan or above."
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


class RunDetailView(ConsolidationAPIView):
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


class DisputeListView(ConsolidationAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}
    pagination_class = Pagination

    @extend_schema(
        tags=TAGS,
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
        paginator = Pagination()
        page = paginator.paginate_queryset(disputed_list(self.principal), request, view=self)
        return paginator.get_paginated_response(DisputeSerializer(page, many=True).data)


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


class DisputeResolveView(ConsolidationAPIView):
    required_scopes = {"POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(
        tags=TAGS,
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


class MemoryUnmergeView(ConsolidationAPIView):
    required_scopes = {"POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(
        tags=TAGS,
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
        memory = memory_get(self.principal, memory_id)
        restored = memory_unmerge(principal=self.principal, memory=memory)
        return Response({"archived": memory.id, "restored": [m.id for m in restored]})
