"""REST views for agent sessions: submit (distillation), list, detail and retry (the code report:
``memories/code_reports/api.py``).

A session is addressed in the URL by the ``session_id`` the client chose when submitting it, or by
the ``ses_…`` id the service gave it (``session_get``). Texts in ``extend_schema`` are the public
API documentation, written for API users (no class docstrings: they would be published).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from memories.sessions import contracts as c
from memories.sessions.selectors import STATUSES, session_get, session_list
from memories.sessions.services import session_retry
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import contract_parse
from reasoningbank.serializers import EmptyBodySerializer, StrictQuerySerializer

TAGS = ["sessions"]
SESSION_ID_HELP = "the `session_id` you submitted the session with, or the `id` the service gave it (`ses_…`)"


class SessionListQuerySerializer(StrictQuerySerializer):
    status = serializers.ChoiceField(choices=STATUSES, required=False, help_text="only sessions in this state")
    project = serializers.CharField(required=False, help_text="only this project's sessions (its slug)")


class SessionSerializer(serializers.Serializer):
    """A submitted agent session and what its distillation produced."""

    id = serializers.CharField(help_text="the service's id for the session (`ses_…`)")
    session_id = serializers.CharField(source="external_id", help_text="the id you submitted it with")
    project = serializers.CharField(source="project.slug")
    outcome = serializers.CharField()
    status = serializers.ChoiceField(choices=STATUSES)
    rounds = serializers.IntegerField(
        help_text="how many times it was distilled: a session handed in again after its distillation (a resumed "
        "conversation) is distilled again, for its new turns only"
    )
    distilled_upto = serializers.IntegerField(
        help_text="how many characters of its trace were distilled; what follows waits for the next round"
    )
    attempts = serializers.IntegerField()
    error = serializers.CharField(help_text="why the last distillation attempt failed, if it did")
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="extracted memories the write gate kept out of the bank, each with the reason",
    )
    redactions = serializers.IntegerField(help_text="how many secrets were redacted from the trace")
    memories = serializers.SerializerMethodField(help_text="the memories distilled from this session")
    held = serializers.SerializerMethodField(
        help_text="a `held` session's findings: what the instruction-smell detector found in its distilled memories "
        "(they wait in quarantine for an admin's review), span by span; empty otherwise"
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    next_attempt_at = serializers.DateTimeField(allow_null=True)

    # the contract's component (``memories.sessions.contracts.SessionMemory``, registered by the submit operation)
    @extend_schema_field({"type": "array", "items": {"$ref": "#/components/schemas/SessionMemory"}})
    def get_memories(self, obj) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
        return [memory.model_dump(mode="json") for memory in c.session_memories(obj)]

    @extend_schema_field({"type": "array", "items": {"$ref": "#/components/schemas/HeldFinding"}})
    def get_held(self, obj) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
        return [c.HeldFinding(**finding).model_dump(mode="json") for finding in obj.held]


class SessionDetailSerializer(SessionSerializer):
    """A submitted agent session with its (redacted) trace."""

    trace = serializers.CharField()
    raw_reply = serializers.CharField(help_text="the LLM's last reply when it could not be read, for diagnosis")


class SessionListCreateView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ, "POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="sessions_list",
        summary="List submitted sessions",
        description=(
            "The agent sessions submitted for distillation in the projects the token reaches, newest first, "
            "one page at a time; optionally only those in one `status` or one `project`. Needs `memories:read`."
        ),
        parameters=[SessionListQuerySerializer],
        responses={200: SessionSerializer(many=True), **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        query = SessionListQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        qs = session_list(self.principal, **query.validated_data)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(SessionSerializer(page, many=True).data)

    @extend_schema(
        tags=TAGS,
        operation_id="sessions_submit",
        summary="Submit a finished session for distillation",
        description=(
            "Hand in the transcript of a finished agent session; the service distills the lessons in it into "
            "memories in the background (poll `GET /api/v1/sessions/{session_id}`). Secrets in the trace are "
            "redacted before storing. `trace_format` names a client's own transcript format, which the "
            "service turns into a compact trace (a trace with no conversation in it is a 422). Submitting "
            "the same `session_id` to the same project again answers 200 with that session: its trace is "
            "replaced while it waits for its first distillation; once it was distilled (or while it is), a trace "
            "that continues it (the same transcript grown at its end: a resumed conversation) adds its new turns "
            "for another round that distils only them (`continued`), the same trace again changes nothing, and "
            "one that does not continue it is a 409 (nothing changes). A new one answers 201. Needs "
            "`memories:write`."
        ),
        request=c.SessionSubmitInput,
        responses={
            201: c.SessionSubmitOutput,
            200: c.SessionSubmitOutput,
            **error_responses(
                400, 401, 403, 404, 409, 415, 422, conflict="The trace does not continue the one the session holds."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        output = c.session_submit_run(self.principal, contract_parse(c.SessionSubmitInput, request.data))
        return Response(
            output.model_dump(mode="json"), status=status.HTTP_201_CREATED if output.created else status.HTTP_200_OK
        )


class SessionDetailView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ}

    @extend_schema(
        tags=TAGS,
        operation_id="sessions_retrieve",
        summary="Get a session",
        description=(
            "A submitted session's distillation status (`queued`, `running`, `waiting_for_llm`, "
            "`waiting_for_budget`, `failed`, `done`, or `held`: the instruction-smell detector flagged what it "
            "produced, and `held` lists what fired, span by span, while those memories wait in quarantine for an "
            "admin's review), its error if any, the memories it produced and its redacted trace. Address it by "
            "the `session_id` you submitted or by its `ses_…` id. When the token "
            "reaches several projects that each have a session with this `session_id`, the answer is a 400 "
            "listing their `ses_…` ids. Needs `memories:read`."
        ),
        parameters=[OpenApiParameter("session_id", str, OpenApiParameter.PATH, description=SESSION_ID_HELP)],
        responses={200: SessionDetailSerializer, **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request, session_id: str) -> Response:
        return Response(SessionDetailSerializer(session_get(self.principal, session_id)).data)


class SessionRetryView(OrgAPIView):
    required_scopes = {"POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="sessions_retry",
        summary="Retry a session's distillation",
        description=(
            "Queue a `failed`, `waiting_for_llm` or `waiting_for_budget` session for distillation again (a "
            "session in any other state is a 409). No body (or `{}`). Address it by the `session_id` you "
            "submitted or by its `ses_…` id. Needs `memories:write`."
        ),
        parameters=[OpenApiParameter("session_id", str, OpenApiParameter.PATH, description=SESSION_ID_HELP)],
        request=None,
        responses={
            200: SessionSerializer,
            **error_responses(400, 401, 403, 404, 409, 415, conflict="The session is neither failed nor waiting."),
        },
    )
    def post(self, request: Request, session_id: str) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        session = session_retry(principal=self.principal, session=session_get(self.principal, session_id))
        return Response(SessionSerializer(session).data)
