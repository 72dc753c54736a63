"""REST views for memories (DESIGN §1, §7): thin — parse, call a service/selector, serialize.

The agent operations (search, record, get, feedback, outcome) are their contracts
(``memories/contracts.py``): the body is validated by the same input model as the MCP tool's
arguments and the answer is the same output model, so REST and MCP answer the same body.
Tenancy comes only from the token (``self.principal``); a memory of another org or outside the
token's reach is a 404 from ``memory_get``.

The ``extend_schema`` texts are the public API documentation (``/api/docs/``): written for API
users, never copied from docstrings (drf-spectacular would otherwise publish view docstrings).
Every operation declares its error statuses with the one ``Error`` body (``error_responses``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import BaseModel
from rest_framework import status
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from memories import contracts as c
from memories import contracts_ask as ca
from memories import contracts_context as cc
from memories.models import Memory
from memories.moderation import memory_archive, memory_restore
from memories.selectors import (
    MemoryFilters,
    memory_get,
    memory_lineage,
    memory_list,
    memory_signals,
)
from memories.serializers import (
    LineageSerializer,
    MemoryArchiveSerializer,
    MemoryListQuerySerializer,
    MemorySerializer,
    MemoryUpdateSerializer,
    SignalSerializer,
)
from memories.services import memory_update
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import contract_parse
from reasoningbank.pagination import Pagination
from reasoningbank.serializers import EmptyBodySerializer, EmptyQuerySerializer

READ = SCOPE_MEMORIES_READ
WRITE = SCOPE_MEMORIES_WRITE

# what can go wrong, per kind of operation (400 only where there is input to get wrong)
ERRORS_READ_ONE = error_responses(401, 403, 404)
ERRORS_LIST = error_responses(400, 401, 403, 404)
ERRORS_WRITE = error_responses(400, 401, 403, 404, 415)
ERRORS_GATED = error_responses(400, 401, 403, 404, 415, 422)  # writes of memory text pass the write gate
TAGS = ["memories"]
MEMORY_ID = OpenApiParameter("memory_id", str, OpenApiParameter.PATH, description="the memory's id (`mem_…`)")


def _render(output: BaseModel, status_code: int = status.HTTP_200_OK) -> Response:
    """An operation's output model as the response body (the same JSON its MCP tool answers)."""
    return Response(output.model_dump(mode="json"), status=status_code)


def _valid(serializer_class: type[Serializer], data: Any) -> dict[str, Any]:
    """Validated data, or a 400 naming the first bad field (through the API's error handler)."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class MemoryAPIView(OrgAPIView):
    # JSON bodies only: a form-encoded body is a 415, not a silently mis-typed boolean. (No class
    # docstrings on these views: drf-spectacular would publish them as operation descriptions.)

    parser_classes = [JSONParser]

    def memory(self, memory_id: str) -> Memory:
        return memory_get(self.principal, memory_id)


class MemoryListView(MemoryAPIView):
    required_scopes = {"GET": READ, "POST": WRITE}
    pagination_class = Pagination

    @extend_schema(
        tags=TAGS,
        operation_id="memories_list",
        summary="List memories",
        description=(
            "The memories the token can reach, newest first unless `ordering` says otherwise, one page at a "
            "time. Only active memories unless `state` is `archived` or `any` (both); `proposed` lists the "
            "promotion proposals awaiting review in the review queue, which no other value includes. Every filter "
            "is optional; `tag` may be repeated (a memory must carry all of them). An empty value (`?tier=`) or an "
            "unknown parameter is a 400 naming it. Needs `memories:read`."
        ),
        parameters=[MemoryListQuerySerializer],
        responses={200: MemorySerializer(many=True), **ERRORS_LIST},
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
        summary="Record a memory",
        description=(
            "Store something an agent learned: a title, when it applies (`description`), the lesson itself "
            "(`content`) and whether it came from a success or a failure. `project` is the project's slug; it "
            "may be left out when the token reaches a single project. `scope` says who can find it: the "
            "project (default), its team or the whole organization. Secrets in the text are redacted before "
            "storing. Answers 201 with the new memory's id and initial confidence. Recording it again where an "
            "active memory already has the same title, description and content (case and whitespace ignored), "
            "outcome and kind creates nothing: 200 with that memory's id, also as `duplicate_of`; a near copy of an "
            "active memory (embeddings this alike, the same numbers, no negation or opposite word between them) "
            "is answered the same way with `duplicate_reason: near_copy` and its `similarity`. Text without "
            "reusable value (empty, placeholder or template text, a character repeated, content shorter than the "
            "minimum or only restating the title, our own prompt echoed) is a 422 naming the field, with the "
            "code `rejected_<reason>`. Needs `memories:write`."
        ),
        request=c.RecordInput,
        responses={
            201: c.RecordOutput,
            200: c.RecordOutput,
            **ERRORS_GATED,
            **error_responses(409, conflict="`scope: team` in a project that belongs to no team."),
        },
    )
    def post(self, request: Request) -> Response:
        output, created = c.memory_record_run(self.principal, contract_parse(c.RecordInput, request.data))
        # nothing created (an identical memory was there): 200 with that memory
        return _render(output, status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class MemoryDetailView(MemoryAPIView):
    required_scopes = {"GET": READ, "PATCH": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_retrieve",
        summary="Get a memory",
        description=(
            "One memory with every field, whether active or archived (its embedding is never returned). "
            "Needs `memories:read`."
        ),
        parameters=[MEMORY_ID],
        responses={200: c.MemoryOut, **ERRORS_READ_ONE},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        return _render(c.memory_get_run(self.principal, contract_parse(c.MemoryGetInput, {}, memory_id=memory_id)))

    @extend_schema(
        tags=TAGS,
        operation_id="memories_update",
        summary="Edit a memory",
        description=(
            "Change any of `title`, `description`, `content`, `outcome`, `tags` and `kind`; fields left out "
            "keep their value. A changed text is re-embedded, so search finds the new wording, and passes the "
            "write gate (a 422 naming the field when it holds nothing reusable). Needs `memories:write` and a "
            "token that reaches the memory's project."
        ),
        request=MemoryUpdateSerializer,
        parameters=[MEMORY_ID],
        responses={200: MemorySerializer, **ERRORS_GATED},
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
        reason = _valid(MemoryArchiveSerializer, request.data)["reason"]
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
        _valid(EmptyBodySerializer, request.data)
        return Response(MemorySerializer(memory_restore(principal=self.principal, memory=memory)).data)


class MemorySearchView(MemoryAPIView):
    required_scopes = {"POST": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_search",
        summary="Search memories",
        description=(
            "Find the memories that fit a task, by meaning and by keywords, ranked by similarity × "
            "confidence × recency × scope. `scope` widens or narrows where to look (`all` by default: the "
            "project, its team and the organization); `outcome` keeps only successes or failures. Each result "
            "counts as a use of that memory (it feeds its confidence); `explain: true` adds each result's "
            "score breakdown. Needs `memories:read`."
        ),
        request=c.SearchInput,
        responses={200: c.SearchOutput, **ERRORS_WRITE},
    )
    def post(self, request: Request) -> Response:
        return _render(c.memory_search_run(self.principal, contract_parse(c.SearchInput, request.data)))


class MemoryContextView(MemoryAPIView):
    required_scopes = {"POST": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_context",
        summary="Build a session's starting context",
        description=(
            "The `<memory_consolidated_summaries>` block a session starts with: the project's best knowledge "
            "(its consolidated summaries, then its highest-confidence procedural memories), at most `max` "
            "entries above `min_confidence` (never below the injection floor "
            "`CONFIDENCE_MIN_FOR_INJECTION`: a lower value is raised to it, and the answer's `min_confidence` "
            "says what was applied), within `token_budget`, ordered by `prioritize`. Pass the session's "
            "existing `context` and the answer's `context` holds exactly one block: an earlier one is replaced. "
            "Records no usage. The same operation as the MCP tool `memory_context`; "
            "`scripts/claude-session-start` calls it as a Claude Code SessionStart hook. Needs `memories:read`."
        ),
        request=cc.ContextInput,
        responses={200: cc.ContextOutput, **ERRORS_WRITE},
    )
    def post(self, request: Request) -> Response:
        return _render(cc.memory_context_run(self.principal, contract_parse(cc.ContextInput, request.data)))


class MemoryAskView(MemoryAPIView):
    required_scopes = {"POST": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_ask",
        summary="Ask a question of the memory bank",
        description=(
            "The configured LLM answers `question` from the memories a search retrieves for it (`limit`, "
            "`min_confidence`, `mode` and `project` as in search), each shown with the timestamp it was "
            'recorded at, so relative dates in them ("yesterday", "last week", "two days ago", weekdays) '
            "are resolved against when they were written. A deterministic resolver checks the LLM's "
            "`temporal_resolutions`: `agrees` says whether it reads a phrase the same way, a date it is sure "
            "is wrong is corrected (`corrected_from`, and a sentence in `warnings`), and phrases in the cited "
            "memories the LLM left out are added (`source: resolver`). `source_memory_ids` are the memories the "
            "answer rests on; with a `session_id` they are noted as given to that session. When the search finds "
            "nothing the answer says so and the LLM is not asked (`llm_called: false`). Without an LLM "
            "(`LLM_PROVIDER=none`) the answer is a 503 `llm_not_configured`, never a made-up answer; an org over "
            "its monthly LLM budget gets a 403 `limit_exceeded`. Each LLM call is metered. The same operation as "
            "the MCP tool `memory_ask`. Needs `memories:read`."
        ),
        request=ca.AskInput,
        responses={
            200: ca.AskOutput,
            **ERRORS_WRITE,
            **error_responses(
                403,
                502,
                503,
                described={
                    403: "The token lacks `memories:read`, or the organization's monthly LLM budget is used up "
                    "(`limit_exceeded`).",
                    502: "The LLM refused the request (`llm_error`) or its reply could not be read as an answer "
                    "(`llm_reply_invalid`): no answer is given.",
                    503: "No LLM is configured (`llm_not_configured`: set `LLM_PROVIDER` and `LLM_API_KEY`), the "
                    "provider did not answer (`llm_unavailable`), or the database is unreachable.",
                },
            ),
        },
    )
    def post(self, request: Request) -> Response:
        return _render(ca.memory_ask_run(self.principal, contract_parse(ca.AskInput, request.data)))


class MemoryFeedbackView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_feedback",
        summary="Say whether a memory helped",
        description=(
            "Explicit feedback on a memory (`helpful: true` or `false`, an optional comment). It moves the "
            "memory's confidence, which ranks it in search, and answers the new confidence. Needs "
            "`memories:write`."
        ),
        request=c.FeedbackBody,
        parameters=[MEMORY_ID],
        responses={200: c.FeedbackOutput, **ERRORS_WRITE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        args = contract_parse(c.FeedbackInput, request.data, memory_id=memory_id)
        return _render(c.memory_feedback_run(self.principal, args))


class MemoryOutcomeView(MemoryAPIView):
    required_scopes = {"POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_outcome",
        summary="Report the outcome of a task that used a memory",
        description=(
            "Say whether the task that used this memory succeeded (`succeeded`), optionally naming your "
            "session (`session_id`). A weaker signal than feedback; it also moves the memory's confidence. "
            "Needs `memories:write`."
        ),
        request=c.OutcomeBody,
        parameters=[MEMORY_ID],
        responses={200: c.OutcomeOutput, **ERRORS_WRITE},
    )
    def post(self, request: Request, memory_id: str) -> Response:
        args = contract_parse(c.OutcomeInput, request.data, memory_id=memory_id)
        return _render(c.memory_outcome_run(self.principal, args))


class MemoryLineageView(MemoryAPIView):
    required_scopes = {"GET": READ}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_lineage",
        summary="A memory's lineage",
        description=(
            "Where a memory comes from and where it went: its links to other memories both ways (consolidates, "
            "supersedes, contradicts, duplicates, references; each with the consolidation run that made it), "
            "the consolidated memory it was merged into, and, for a consolidated memory, its sources. "
            "Archived memories are included. Needs `memories:read`."
        ),
        parameters=[MEMORY_ID],
        responses={200: LineageSerializer, **ERRORS_READ_ONE},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        return Response(LineageSerializer({"memory": memory, **memory_lineage(self.principal, memory)}).data)


class MemorySignalsView(MemoryAPIView):
    required_scopes = {"GET": READ}
    pagination_class = Pagination

    @extend_schema(
        tags=TAGS,
        operation_id="memories_signals",
        summary="A memory's confidence signals",
        description=(
            "The feedback, outcome reports, uses and code-stability reports (`type` `explicit`, `outcome`, "
            "`usage`, `stability`) behind a memory's confidence, newest first, one page at a "
            "time. Needs `memories:read`."
        ),
        parameters=[MEMORY_ID],
        responses={200: SignalSerializer(many=True), **ERRORS_LIST},
    )
    def get(self, request: Request, memory_id: str) -> Response:
        _valid(EmptyQuerySerializer, request.query_params)
        memory = self.memory(memory_id)
        paginator = Pagination()
        page = paginator.paginate_queryset(memory_signals(self.principal, memory), request, view=self)
        return paginator.get_paginated_response(SignalSerializer(page, many=True).data)
