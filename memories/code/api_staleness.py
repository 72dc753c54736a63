"""REST view of ``code_changes_report`` (``POST /api/v1/code/changes``): thin — parse the contract's
input, run it, render its output (the same body as the MCP tool's)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.api_base import OrgAPIView
from accounts.models import SCOPE_MEMORIES_WRITE
from memories.code import contracts_staleness as c
from reasoningbank.api_errors import error_responses
from reasoningbank.contracts import contract_parse


class CodeChangesView(OrgAPIView):
    required_scopes = {"POST": SCOPE_MEMORIES_WRITE}

    @extend_schema(
        tags=["code"],
        operation_id="code_changes_report",
        summary="Report what a commit changed",
        description=(
            "Tell the service what one commit changed — each file's status (added, modified, deleted, renamed "
            "with its old path), its hunks in the old file's numbering and the symbols they touch — so that the "
            "memories anchored to that code learn it: an anchor whose symbol (or, without one, whose lines) "
            "changed after its own commit is flagged `code_changed` with the commit (search ranks it lower and "
            "the injected text says to verify it), a deleted file's anchors become `deleted` (the memory is "
            "archived after a grace period unless its other anchors hold), a rename moves them to the new path. "
            "Reports may come in any order and twice: an older commit than an anchor's own flags nothing, and "
            "the same report again changes nothing (`already_reported`). `scripts/git-code-report` sends it "
            "from a post-commit hook or CI. A `repository` that is not a git remote is a 422 "
            "(`rejected_not_a_remote`). The same operation as the MCP tool `code_changes_report`. Needs "
            "`memories:write`."
        ),
        request=c.CodeChangesInput,
        responses={200: c.CodeChangesOutput, **error_responses(400, 401, 403, 415, 422)},
    )
    def post(self, request: Request) -> Response:
        args = contract_parse(c.CodeChangesInput, request.data)
        return Response(c.code_changes_report_run(self.principal, args).model_dump(mode="json"))
