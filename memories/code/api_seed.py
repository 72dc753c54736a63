"""REST views of seeding from history (``POST``/``GET /api/v1/code/history``): thin — parse the contract's
input, run it, render its output. The client reads the git log on its own machine and sends the commits;
the service never runs git on a user's path (docs/code-memory.md#seeding-from-history)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from memories.code import contracts_seed as c
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import contract_parse, contract_query_schema

TAGS = ["sessions"]  # a seeding hands in sessions: listed with them in the API docs


class HistorySeedView(OrgAPIView):
    required_scopes = {"GET": SCOPE_MEMORIES_READ, "POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="code_history_seed",
        summary="Fill the bank from a repository's history",
        description=(
            "Hand in commits of a repository (read from `git log` on your machine, oldest first, at most 500 a "
            "request) for distillation into memories anchored to the files and symbols they changed. Commits the "
            "project already has from this repository are skipped, so a re-run (or a run after a force-push) "
            "submits only new ones. The rest go in batches of `batch_size`, each a session of trace format "
            "`git-log` (poll it at `GET /api/v1/sessions/{id}`, or the whole seeding here with GET). `dry_run: "
            "true` submits nothing and answers the batches it would make with their likely LLM tokens and cost. "
            "Without an LLM configured the batches wait for one, and each commit message the write gate lets in "
            "becomes an episodic memory anchored to its files (screened like any write). Answers 201 when it "
            "submitted something, else 200. Needs `memories:write`."
        ),
        request=c.HistorySeedInput,
        responses={201: c.HistorySeedOutput, 200: c.HistorySeedOutput, **error_responses(400, 401, 403, 404, 415, 422)},
    )
    def post(self, request: Request) -> Response:
        output = c.history_seed_run(self.principal, contract_parse(c.HistorySeedInput, request.data))
        created = status.HTTP_201_CREATED if output.submitted or output.episodic_memories else status.HTTP_200_OK
        return Response(output.model_dump(mode="json"), status=created)

    @extend_schema(
        tags=TAGS,
        operation_id="code_history_progress",
        summary="How far a repository's seeding got",
        description=(
            "The newest commit read from `repository` into the project (a re-run reads after it), the commits and "
            "batches submitted, the batches by distillation status and the memories made. A repository never "
            "seeded into the project is a 404. Needs `memories:read`."
        ),
        parameters=[
            OpenApiParameter(
                "repository",
                contract_query_schema(c.HistoryProgressInput, "repository"),
                OpenApiParameter.QUERY,
                required=True,
                description="the repository's git remote, any spelling",
            ),
            OpenApiParameter(
                "project",
                contract_query_schema(c.HistoryProgressInput, "project"),
                OpenApiParameter.QUERY,
                required=False,
                description="the project's slug (required when the token reaches several)",
            ),
        ],
        responses={200: c.HistoryProgressOutput, **error_responses(400, 401, 403, 404)},
    )
    def get(self, request: Request) -> Response:
        args = contract_parse(c.HistoryProgressInput, request.query_params.dict())
        return Response(c.history_progress_run(self.principal, args).model_dump(mode="json"))
