"""MCP tool ``session_submit``: hand in a finished session trace for distillation (issue #4)."""

# No ``from __future__ import annotations``: the SDK evaluates tool signatures.

from typing import Annotated, Literal

from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from accounts.models import SCOPE_MEMORIES_WRITE
from reasoningbank.mcp_server import register_tool_module, service_errors, tool_principal


class SessionMemory(TypedDict):
    id: str
    title: str


class SessionSubmitResponse(TypedDict):
    id: str
    session_id: str
    status: str
    created: bool
    error: str
    memories: list[SessionMemory]
    message: str


_MESSAGES = {
    "queued": "Session queued for distillation",
    "waiting_for_llm": "Session stored; it waits until an LLM provider is configured",
    "running": "Session is being distilled",
    "done": "Session distilled",
    "failed": "Session distillation failed; a moderator can retry it",
}


@register_tool_module
def register_session_tools(server: MCPServer) -> None:
    from memories.distillation import session_submit as submit

    @server.tool(
        description=(
            "Submit a finished agent session so reusable strategies (success) or anti-patterns (failure) are "
            "distilled from it into memories. Idempotent on session_id: resubmitting returns the session's status."
        ),
        annotations=ToolAnnotations(
            title="Submit a session",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    def session_submit(
        session_id: Annotated[str, Field(description="Your own id for the session (idempotency key)", max_length=200)],
        outcome: Annotated[Literal["success", "failure", "unknown"], Field(description="How the session's task ended")],
        trace: Annotated[str, Field(description="The session transcript; secrets are scrubbed before storage")],
        project: Annotated[
            str, Field(description="Project slug (only needed when the token reaches several projects)")
        ] = "",
    ) -> SessionSubmitResponse:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_WRITE)
            result = submit(
                principal=principal, session_id=session_id, outcome=outcome, trace=trace, project=project or None
            )
            session = result.session
            return {
                "id": session.id,
                "session_id": session.external_id,
                "status": session.status,
                "created": result.created,
                "error": session.error,
                "memories": [{"id": m.id, "title": m.title} for m in session.memories.all()],
                "message": _MESSAGES.get(session.status, session.status)
                + ("" if result.created else " (already submitted)"),
            }
