"""REST view of a project's quality report (docs/consolidation.md#the-review-queue-and-disputes).

Thin: parse, call the selector, serialize. Texts in ``extend_schema`` are the public API
documentation, written for API users. Query strings are strict like everywhere in the API.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ
from consolidation.quality.selectors import REPORT_WEEKS, quality_report
from memories.reads import project_resolve
from reasoningbank.api_errors import error_responses
from reasoningbank.errors import NotFound
from reasoningbank.serializers import StrictQuerySerializer

TAGS = ["consolidation"]


class QualityQuerySerializer(StrictQuerySerializer):
    weeks = serializers.IntegerField(
        required=False, min_value=1, max_value=52, help_text=f"weeks of history (default {REPORT_WEEKS})"
    )


class QualityWeekSerializer(serializers.Serializer):
    week = serializers.DateField(source="start", help_text="the week's Monday")
    merged = serializers.IntegerField(help_text="memories merged into another (duplicate merge or synthesis)")
    rejected = serializers.IntegerField(help_text="writes the write gate refused as carrying no reusable value")
    near_copies = serializers.IntegerField(help_text="records answered with an existing memory (near copies)")
    unmerged = serializers.IntegerField(help_text="consolidations undone (un-merge)")
    contradictions = serializers.IntegerField(help_text="contradiction links made")
    reviews = serializers.IntegerField(help_text="pairs set aside for review")


class QualityReportSerializer(serializers.Serializer):
    """How healthy a project's memory bank is: merges, contradictions, pairs waiting for review, what the
    write gate refused and merges undone, now and per week."""

    project = serializers.CharField(source="project.slug")
    generated_at = serializers.DateTimeField()
    memories = serializers.IntegerField(help_text="every memory of the project, active or archived")
    active = serializers.IntegerField()
    duplicates = serializers.IntegerField(help_text="memories archived as a duplicate of another")
    consolidated = serializers.IntegerField(help_text="memories archived into a synthesised memory")
    duplicate_rate = serializers.FloatField(help_text="(duplicates + consolidated) / memories, 0 to 1")
    open_contradictions = serializers.IntegerField(help_text="contradiction links nobody has resolved yet")
    waiting_for_review = serializers.IntegerField(help_text="pairs with conflict cues waiting for a decision")
    rejected = serializers.IntegerField(help_text="writes the write gate refused, ever")
    rejected_by_reason = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="those by reason: empty, placeholder, repeated_characters, too_short, restates_title, "
        "restated_prompt",
    )
    near_copies = serializers.IntegerField(help_text="records answered with an existing near copy, ever")
    unmerged = serializers.IntegerField(help_text="consolidations undone, ever")
    weeks = QualityWeekSerializer(many=True, help_text="oldest first, the current week last")


class ProjectQualityView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        tags=TAGS,
        operation_id="projects_quality_retrieve",
        summary="Quality report of a project",
        description=(
            "How healthy the project's memory bank is: the duplicate rate (memories merged away as duplicates or "
            "into a synthesis, against all of them), open contradictions, pairs waiting for review, writes the "
            "write gate refused (by reason) and near copies it answered with an existing memory, and "
            "consolidations undone, in total and per week for the last `weeks` weeks. Needs `memories:read`."
        ),
        parameters=[
            OpenApiParameter("slug", str, OpenApiParameter.PATH, description="the project's slug"),
            QualityQuerySerializer,
        ],
        responses={200: QualityReportSerializer, **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request, slug: str) -> Response:
        query = QualityQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        project = project_resolve(self.principal, slug)
        if project is None:  # an empty slug cannot reach here (the route needs one); be explicit anyway
            raise NotFound(f"project {slug!r} not found", field="project")
        report = quality_report(self.principal, project, weeks=query.validated_data.get("weeks", REPORT_WEEKS))
        return Response(QualityReportSerializer(report).data)
