"""REST views of the quarantine (docs/security/memory-poisoning.md#quarantine): the memories and summaries
the instruction-smell detector held for review, listed with what fired and who wrote them, approved or
deleted by an admin. Thin: parse, call a selector or service, serialize. Texts in ``extend_schema`` are
the public API documentation (no class docstrings on the views: drf-spectacular would publish them).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import SCOPE_ADMIN
from memories.core.api import MEMORY_ID, MemoryAPIView, serializer_validate
from memories.core.selectors import project_resolve
from memories.trust.selectors_quarantine import (
    memory_written_by,
    quarantine_list,
    quarantined_get,
    summaries_held,
    summary_held_get,
)
from memories.trust.services_quarantine import (
    quarantine_approve,
    quarantine_delete,
    summary_held_approve,
    summary_held_delete,
)
from reasoningbank.api_errors import error_responses
from reasoningbank.serializers import EmptyBodySerializer, StrictQuerySerializer

TAGS = ["quarantine"]
SUMMARY_ID = OpenApiParameter("summary_id", str, OpenApiParameter.PATH, description="the summary's id (`sum_…`)")
ERRORS_DECIDE = error_responses(
    400, 401, 403, 404, 409, 415, conflict="It was decided meanwhile: it is no longer held for review."
)


class QuarantineQuerySerializer(StrictQuerySerializer):
    project = serializers.SlugField(
        required=False, help_text="only what this project holds (with its team's and the organization's memories)"
    )


class FlagSerializer(serializers.Serializer):
    """One finding of the instruction-smell detector, with its span."""

    rule = serializers.CharField(help_text="the detector's rule, e.g. `override_instructions`")
    reason = serializers.CharField(help_text="why such text is held for review")
    field = serializers.CharField(help_text="the field the text is in")
    start = serializers.IntegerField(help_text="where the text starts in that field (characters)")
    end = serializers.IntegerField(help_text="where it ends")
    excerpt = serializers.CharField(help_text="the text that fired the rule (invisible characters shown as escapes)")


class QuarantinedMemorySerializer(serializers.Serializer):
    """A memory held for review (or, in an approval's answer, just approved)."""

    id = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    content = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    outcome = serializers.CharField()
    kind = serializers.CharField()
    scope = serializers.CharField()
    project = serializers.CharField(source="project.slug", allow_null=True, default=None, help_text="project slug")
    team = serializers.CharField(source="team.slug", allow_null=True, default=None, help_text="team slug")
    state = serializers.CharField(help_text="`quarantined`; `active` once approved")
    origin = serializers.CharField(help_text="recorded, distilled (from a session), consolidated or extracted")
    flags = FlagSerializer(many=True, help_text="what the detector found, span by span")
    written_by = serializers.SerializerMethodField(help_text="who wrote it, how and through which token or session")
    provenance = serializers.JSONField(help_text="its full provenance, as recorded when it was written")
    source_session = serializers.CharField(
        source="source_session_id", allow_null=True, help_text="the session it was distilled from"
    )
    trust = serializers.CharField(help_text="`trusted` once an admin approved it")
    reviewed_by = serializers.SerializerMethodField(help_text="the admin who approved it (email), or null")
    reviewed_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()

    def get_written_by(self, memory: Any) -> str:
        return memory_written_by(memory)

    def get_reviewed_by(self, memory: Any) -> str | None:
        return memory.reviewed_by.email if memory.reviewed_by is not None else None


class HeldSummarySerializer(serializers.Serializer):
    """A consolidated summary held for review."""

    id = serializers.CharField()
    memory = serializers.CharField(source="memory_id", help_text="the consolidated memory it summarises")
    project = serializers.CharField(source="project.slug")
    status = serializers.CharField(help_text="`held`; `ready` once approved")
    summary = serializers.CharField()
    key_facts = serializers.ListField(child=serializers.CharField())
    decisions = serializers.ListField(child=serializers.DictField())
    superseded_facts = serializers.ListField(child=serializers.DictField())
    flags = FlagSerializer(many=True, help_text="what the detector found, span by span")
    consolidation_run = serializers.CharField(source="consolidation_run_id", help_text="the run that wrote it")
    created_at = serializers.DateTimeField()


class QuarantineAPIView(MemoryAPIView):
    def project(self, request: Request) -> Any:
        params = serializer_validate(QuarantineQuerySerializer, request.query_params)
        slug = params.get("project")
        return project_resolve(self.principal, slug) if slug else None


class QuarantineListView(QuarantineAPIView):
    required_scopes = {"GET": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="quarantine_list",
        summary="List memories held in quarantine",
        description=(
            "The memories the instruction-smell detector held for review because their text speaks to the AI that "
            "would read them (override phrases, role tags, secrecy towards the user, sending keys or environment, "
            "scripts piped into a shell from a host the organization has not allowed, hidden text, data-carrying "
            "links), oldest first, one page at a time: each with the findings (rule, reason, field and span), who "
            "wrote it and how (`written_by`, `provenance`). None of them is searched, injected, consolidated or "
            "counted as active until approved. Needs `admin`."
        ),
        parameters=[QuarantineQuerySerializer],
        responses={200: QuarantinedMemorySerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        project = self.project(request)
        page = self.paginate_queryset(quarantine_list(self.principal, project=project))
        return self.get_paginated_response(QuarantinedMemorySerializer(page, many=True).data)


class QuarantineApproveView(QuarantineAPIView):
    required_scopes = {"POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="quarantine_approve",
        summary="Approve a quarantined memory",
        description=(
            "The memory becomes active (searched and injected like any other), trusted, and reviewed by you; the "
            "detector learns each of its findings as an exception of the organization, so the same text recorded "
            "again is not held (nothing else is exempted). No body (or `{}`). Audited "
            "(`memory.quarantine_approve`). A memory no longer in quarantine is a 409 (another in its stead: a "
            "404); at the plan's limit of active memories a 403. Needs `admin`."
        ),
        request=None,
        parameters=[MEMORY_ID],
        responses={200: QuarantinedMemorySerializer, **ERRORS_DECIDE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        serializer_validate(EmptyBodySerializer, request.data)
        memory = quarantined_get(self.principal, memory_id)
        return Response(QuarantinedMemorySerializer(quarantine_approve(principal=self.principal, memory=memory)).data)


class QuarantineMemoryView(QuarantineAPIView):
    required_scopes = {"DELETE": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="quarantine_delete",
        summary="Delete a quarantined memory",
        description=(
            "Delete a memory held in quarantine for good (its links and signals with it). Answers 204. Audited "
            "(`memory.quarantine_delete`, with its title and the rules that held it). Only a memory in "
            "quarantine can be deleted here (anything else is a 404). Needs `admin`."
        ),
        parameters=[MEMORY_ID],
        responses={204: None, **ERRORS_DECIDE},
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        quarantine_delete(principal=self.principal, memory=quarantined_get(self.principal, memory_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class HeldSummaryListView(QuarantineAPIView):
    required_scopes = {"GET": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="quarantine_summaries_list",
        summary="List summaries held for review",
        description=(
            "Consolidated summaries the instruction-smell detector held (`status: held`), oldest first, with the "
            "findings: never served to a session or a search until approved. Needs `admin`."
        ),
        parameters=[QuarantineQuerySerializer],
        responses={200: HeldSummarySerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        project = self.project(request)
        page = self.paginate_queryset(summaries_held(self.principal, project=project))
        return self.get_paginated_response(HeldSummarySerializer(page, many=True).data)


class HeldSummaryApproveView(QuarantineAPIView):
    required_scopes = {"POST": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="quarantine_summaries_approve",
        summary="Approve a held summary",
        description=(
            "The summary becomes ready (served with its consolidated memory); its findings become exceptions of "
            "the organization. No body (or `{}`). Audited (`summary.quarantine_approve`). Needs `admin`."
        ),
        request=None,
        parameters=[SUMMARY_ID],
        responses={200: HeldSummarySerializer, **ERRORS_DECIDE},
    )
    def post(self, request: Request, summary_id: str) -> Response:
        serializer_validate(EmptyBodySerializer, request.data)
        summary = summary_held_get(self.principal, summary_id)
        return Response(HeldSummarySerializer(summary_held_approve(principal=self.principal, summary=summary)).data)


class HeldSummaryView(QuarantineAPIView):
    required_scopes = {"DELETE": SCOPE_ADMIN}

    @extend_schema(
        tags=TAGS,
        operation_id="quarantine_summaries_delete",
        summary="Delete a held summary",
        description=(
            "Delete a held summary (a later consolidation run may summarise the cluster again). Answers 204. "
            "Audited (`summary.quarantine_delete`). Needs `admin`."
        ),
        parameters=[SUMMARY_ID],
        responses={204: None, **ERRORS_DECIDE},
    )
    def delete(self, request: Request, summary_id: str) -> Response:
        summary_held_delete(principal=self.principal, summary=summary_held_get(self.principal, summary_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
