"""REST views of the core memory operations (docs/agent-api.md): list, record, get, edit and lineage —
thin: parse, call a service/selector, serialize — and what every memories REST view shares
(``MemoryAPIView``, ``contract_render``, ``serializer_validate``, the error sets, ``MEMORY_ID``). The
features' views are ``memories/<feature>/api.py``.

The agent operations (record, get) are their contracts (``memories/core/contracts.py``): the body is
validated by the same input model as the MCP tool's arguments and the answer is the same output
model, so REST and MCP answer the same body. Tenancy comes only from the token
(``self.principal``); a memory of another org or outside the token's reach is a 404 from
``memory_get``.

The ``extend_schema`` texts are the public API documentation (``/api/docs/``): written for API
users, never copied from docstrings (drf-spectacular would otherwise publish view docstrings).
Every operation declares its error statuses with the one ``Error`` body (``error_responses``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import BaseModel
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from memories.code.selectors import anchor_dicts_by_memory
from memories.core import contracts as c
from memories.core.selectors import MemoryFilters, memory_get, memory_lineage, memory_list
from memories.core.serializers import (
    LineageSerializer,
    MemoryListQuerySerializer,
    MemorySerializer,
    MemoryUpdatedSerializer,
    MemoryUpdateSerializer,
)
from memories.core.services import memory_update
from memories.models import Memory
from memories.trust.provenance_selectors import memory_sources
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import contract_parse, contract_query_schema

READ = SCOPE_MEMORIES_READ
WRITE = SCOPE_MEMORIES_WRITE

# what can go wrong, per kind of operation (400 only where there is input to get wrong)
ERRORS_READ_ONE = error_responses(401, 403, 404)
ERRORS_LIST = error_responses(400, 401, 403, 404)
ERRORS_WRITE = error_responses(400, 401, 403, 404, 415)
ERRORS_GATED = error_responses(400, 401, 403, 404, 415, 422)  # writes of memory text pass the write gate
TAGS = ["memories"]
MEMORY_ID = OpenApiParameter("memory_id", str, OpenApiParameter.PATH, description="the memory's id (`mem_…`)")


def contract_render(output: BaseModel, status_code: int = status.HTTP_200_OK) -> Response:
    """An operation's output model as the response body (the same JSON its MCP tool answers)."""
    return Response(output.model_dump(mode="json"), status=status_code)


def serializer_validate(serializer_class: type[Serializer], data: Any) -> dict[str, Any]:
    """Validated data, or a 400 naming the first bad field (through the API's error handler)."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class MemoryAPIView(OrgAPIView):
    # (No class docstrings on these views: drf-spectacular would publish them as operation descriptions.)

    def memory(self, memory_id: str) -> Memory:
        return memory_get(self.principal, memory_id)


class MemoryListView(MemoryAPIView):
    required_scopes = {"GET": READ, "POST": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_list",
        summary="List memories",
        description=(
            "The memories the token can reach, newest first unless `ordering` says otherwise, one page at a "
            "time. Only active memories unless `state` is `archived` or `any` (both); `proposed` lists the "
            "promotion proposals awaiting review in the review queue, which no other value includes (memories "
            "held in quarantine are listed for admins by `GET /api/v1/quarantine`). Every filter "
            "is optional; `tag` may be repeated (a memory must carry all of them). `path` lists the memories "
            "anchored to a file of the code, or with a trailing slash to anything under a directory, and `symbol` "
            "narrows to a function or class there. An empty value (`?tier=`) or an "
            "unknown parameter is a 400 naming it. Needs `memories:read`."
        ),
        parameters=[MemoryListQuerySerializer],
        responses={200: MemorySerializer(many=True), **ERRORS_LIST, **error_responses(422)},
    )
    def get(self, request: Request) -> Response:
        params = serializer_validate(MemoryListQuerySerializer, request.query_params)
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
            path=params.get("path") or None,
            symbol=params.get("symbol") or None,
        )
        page = self.paginate_queryset(memory_list(self.principal, filters))
        sources = memory_sources(page or [])  # one query for the page
        anchors = anchor_dicts_by_memory(page or [])  # and one for their anchors
        context = {"sources": sources, "anchors": anchors}
        return self.get_paginated_response(MemorySerializer(page, many=True, context=context).data)

    @extend_schema(
        tags=TAGS,
        operation_id="memories_create",
        summary="Record a memory",
        description=(
            "Store something an agent learned: a title, when it applies (`description`), the lesson itself "
            "(`content`) and whether it came from a success or a failure. `project` is the project's slug; it "
            "may be left out when the token reaches a single project. `scope` says who can find it: the "
            "project (default), its team or the whole organization. Secrets in the text are redacted before "
            "storing. Answers 201 with the new memory's id and initial confidence, and `status` `recorded`. Text "
            "addressed to the AI that would read it (override phrases, role tags, requests to send keys or pipe a "
            "script from an unknown host into a shell, hidden text, data-carrying image links) is flagged by the "
            "instruction-smell detector: when the organization quarantines (the default) the memory is still "
            "stored, 201 with `status: quarantined` and `quarantine` (the rules, what fired, and what happens "
            "next: an admin reviews it; until then it is not searched or injected); when it only flags, "
            "`status: flagged` and the memory's `flags`. Recording it again where an "
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
        return contract_render(output, status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class MemoryDetailView(MemoryAPIView):
    required_scopes = {"GET": READ, "PATCH": WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="memories_retrieve",
        summary="Get a memory",
        description=(
            "One memory with every field, whether active or archived (its embedding is never returned). "
            "With `session_id`, a session reading it for its task: a use of the memory. Needs `memories:read`."
        ),
        parameters=[
            MEMORY_ID,
            OpenApiParameter(
                "session_id",
                contract_query_schema(c.MemoryGetInput, "session_id"),
                OpenApiParameter.QUERY,
                description=c.GET_SESSION_DESCRIPTION,
            ),
        ],
        responses={200: c.MemoryOut, **ERRORS_LIST},  # a 400: a query parameter the contract does not know
    )
    def get(self, request: Request, memory_id: str) -> Response:
        # the query's parameters are the contract's fields: an unknown one is a 400, as in a body
        args = contract_parse(c.MemoryGetInput, dict(request.query_params.items()), memory_id=memory_id)
        return contract_render(c.memory_get_run(self.principal, args))

    @extend_schema(
        tags=TAGS,
        operation_id="memories_update",
        summary="Edit a memory",
        description=(
            "Change any of `title`, `description`, `content`, `outcome`, `tags` and `kind`, or replace its "
            "`anchors` (`[]` removes them); fields left out keep their value. A changed text is re-embedded, so "
            "search finds the new wording, and passes the write gate (a 422 naming the field when it holds nothing "
            "reusable). A changed text or tags pass the instruction-smell detector as a new memory does: when the "
            "organization quarantines, a flagged edit "
            "answers 200 with `state: quarantined` and `quarantine` (the rules that fired, what happens next), "
            "and a clean edit of a quarantined memory makes it active again. Needs `memories:write` and a token "
            "that reaches the memory's project."
        ),
        request=MemoryUpdateSerializer,
        parameters=[MEMORY_ID],
        responses={200: MemoryUpdatedSerializer, **ERRORS_GATED},
    )
    def patch(self, request: Request, memory_id: str) -> Response:
        memory = self.memory(memory_id)
        changes = serializer_validate(MemoryUpdateSerializer, request.data)
        memory = memory_update(principal=self.principal, memory=memory, changes=changes)
        held = memory.state == Memory.STATE_QUARANTINED
        return Response(
            {
                **MemorySerializer(memory).data,
                "quarantine": c.QuarantineNote.of(memory).model_dump(mode="json") if held else None,
            }
        )


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


