"""REST view of ``session_code_report`` (``POST /api/v1/sessions/code-report``, listed with the sessions
in the API docs): thin — parse the contract's input, run it, render its output (the same body as the
MCP tool's)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_WRITE
from memories.code_reports import contracts as c
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import contract_parse

TAGS = ["sessions"]


class SessionCodeReportView(OrgAPIView):
    required_scopes = {"POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(
        tags=TAGS,
        operation_id="sessions_code_report",
        summary="Report what became of a session's code",
        description=(
            "Tell the service whether an agent session's code lasted, so that every memory the session was "
            "given (`memory_search` / `memory_context` called with its `session_id`) learns from it. A git "
            "post-commit hook ties each commit to its session (`{session_id, commit, status: \"committed\"}`, no "
            "signal); a CI job later reports the commit `kept` (no revert for 7 days: a positive code-stability "
            "signal on each of those memories) or `reverted` (a negative one). A report may name the session, "
            "the commit, or both. Each memory is reached once; the first verdict is final: the same report "
            "again answers `already_reported: true` and changes nothing, the opposite verdict is a 409. `kept` "
            "judges code tied before: its commit (or, naming the session alone, one of the session's commits) "
            "must have been reported `committed` earlier, else a 409 naming the field; `reverted` may tie a new "
            "commit at once. An unknown session or commit is a 404 naming it. `scripts/git-code-report` does "
            "both jobs. The same operation as the MCP tool `session_code_report`. Needs `memories:write`."
        ),
        request=c.CodeReportInput,
        responses={
            200: c.CodeReportOutput,
            **error_responses(
                400, 401, 403, 404, 409, 415,
                conflict=(
                    "The session or commit already has the other verdict, the commit is tied to another "
                    "session, or `kept` names code not tied before."
                ),
            ),
        },
    )
    def post(self, request: Request) -> Response:
        args = contract_parse(c.CodeReportInput, request.data)
        return Response(c.session_code_report_run(self.principal, args).model_dump(mode="json"))
