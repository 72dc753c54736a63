"""The ``session_code_report`` operation's contract (docs/session-context.md#code-stability): what
became of an agent session's code — tied to the session by a git post-commit hook (``committed``), later
``kept`` for 7 days (a positive stability signal) or ``reverted`` (a negative one) on every memory the
session was given. One input model, one output model and ``session_code_report_run``, shared by the MCP
tool (``memories/mcp_tools.py``), ``POST /api/v1/sessions/code-report``
(``memories/code_reports/api.py``) and ``scripts/git-code-report``. The rules live in
``memories/code_reports/services.py``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, StringConstraints

from accounts.access import Principal
from memories.code_reports.services import SESSION_KEY_MAX, session_code_report
from memories.validation import session_key_clean
from reasoningbank.contracts import NUL_FREE, Contract

CodeStatus = Literal["committed", "kept", "reverted"]


class CodeReportInput(Contract):
    # the schema says what the service checks: a session id with a visible character, or a commit, and
    # both for `committed`
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["session_id"], "properties": {"session_id": {"pattern": "\\S"}}},
                {"required": ["commit"], "properties": {"commit": {"minLength": 40}}},
            ],
            # committed ties the two together: it needs both
            "if": {"properties": {"status": {"const": "committed"}}},
            "then": {
                "required": ["session_id", "commit"],
                "properties": {"session_id": {"pattern": "\\S"}, "commit": {"minLength": 40}},
            },
        }
    )

    session_id: Annotated[
        str,
        StringConstraints(strip_whitespace=True, max_length=SESSION_KEY_MAX, pattern=NUL_FREE),
        Field(
            description=(
                "Your session's id, the one you passed to memory_search / memory_context: the verdict reaches "
                "the memories they gave it. Required with status committed; later reports may name the commit "
                "alone"
            )
        ),
    ] = ""
    commit: Annotated[
        str,
        # checked before it is lower-cased, so either case is accepted
        StringConstraints(strip_whitespace=True, to_lower=True, pattern="^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})?$"),
        Field(description="The full git sha (40 or 64 hexadecimal digits) of the session's commit"),
    ] = ""
    status: Annotated[
        CodeStatus,
        Field(
            description=(
                "committed: tie the commit to the session (no signal yet); kept: the change stood 7 days without "
                "a revert (positive), only for code tied before (the commit, or naming the session alone one of "
                "its commits, reported committed earlier: else refused, 409); reverted: it was reverted "
                "(negative), and may tie a new commit at once. The first verdict is final: the same one again "
                "changes nothing, the other one is refused"
            )
        ),
    ]


class CodeReportOutput(Contract):
    session_id: str = Field(description="the session the report concerns (the commit's, when only it was named)")
    commit: str = Field(description="the commit reported, empty when none was named")
    status: CodeStatus
    memory_ids: list[str] = Field(
        description="the memories given to the session that this report reached (each is reached once)"
    )
    signals_written: int = Field(description="stability signals written: archived memories are marked, not signalled")
    already_reported: bool = Field(description="this report had been made before: nothing changed")
    message: str


def session_code_report_run(principal: Principal, args: CodeReportInput) -> CodeReportOutput:
    session_key_clean(args.session_id)  # outside the report's transaction: a revocation sticks
    report = session_code_report(
        principal=principal, status=args.status, session_key=args.session_id, commit=args.commit
    )
    return CodeReportOutput(
        session_id=report.session_key,
        commit=report.commit,
        status=args.status,
        memory_ids=report.reached,
        signals_written=len(report.signalled),
        already_reported=report.already_reported,
        message=report.message,
    )
