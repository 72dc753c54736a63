"""The memory MCP tools (seed 000): memory_search, memory_record, memory_feedback, memory_outcome,
memory_get, and session_submit (hand in a finished session trace for distillation).

Thin: typed arguments → the same services and selectors as REST → the response. The caller comes
from the verified token only (``tool_principal``).
"""

# No ``from __future__ import annotations``: the SDK reads tool signatures with eval_str, and the tool
# annotations refer to names local to ``register_memory_tools`` (limits from settings).

from typing import Annotated, Any, Literal, NotRequired

from django.conf import settings
from mcp.server import MCPServer
from mcp.types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from accounts.mcp_auth import tool_principal
from accounts.models import SCOPE_MEMORIES_READ, SCOPE_MEMORIES_WRITE
from reasoningbank.mcp_registry import register_tool_module, service_errors


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


class SearchExplanation(TypedDict):
    similarity: float
    confidence: float
    recency_boost: float
    scope_weight: float
    consolidated_boost: float
    score: float
    matched_by: list[str]


class SearchMemory(TypedDict):
    id: str
    title: str
    description: str
    content: str
    outcome: str
    confidence: float
    usage_count: int
    relevance: float
    scope: str
    explain: NotRequired[SearchExplanation]


class SearchResponse(TypedDict):
    memories: list[SearchMemory]
    total_found: int
    tokens_used: int


class RecordResponse(TypedDict):
    id: str
    message: str
    initial_confidence: float
    duplicate_of: NotRequired[str]  # only when nothing was recorded: the identical memory already there


class FeedbackResponse(TypedDict):
    success: bool
    new_confidence: float
    message: str


class OutcomeResponse(TypedDict):
    recorded: bool
    new_confidence: float
    message: str


class MemoryDetail(TypedDict):
    id: str
    title: str
    description: str
    content: str
    outcome: str
    tags: list[str]
    kind: str
    scope: str
    project: str | None
    state: str
    archived_reason: str
    consolidated_into: str | None
    tier: str
    confidence: float
    usage_count: int
    last_used_at: str | None
    origin: str
    created_at: str


PROJECT_DESCRIPTION = (
    "Project slug. Needed only when this token reaches several projects; otherwise the one project it "
    "reaches is used (a token limited to one project, or an organization-wide token in an organization "
    "with a single project)."
)
SEARCH_PROJECT_DESCRIPTION = (
    "Project slug: search that project, its team's and the organization's memories. Left out: every "
    "project this token reaches."
)

MemoryId = Annotated[str, Field(description="ID of the memory")]


@register_tool_module
def register_memory_tools(server: MCPServer) -> None:
    """memory_search, memory_record, memory_feedback, memory_outcome (seed 000) and memory_get."""
    from memories import selectors, services, services_signals

    default_limit = int(settings.SEARCH_DEFAULT_LIMIT)
    max_limit = int(settings.SEARCH_MAX_LIMIT)
    default_min_confidence = float(settings.SEARCH_MIN_CONFIDENCE)

    @server.tool(
        description="Search for relevant strategies and patterns",
        annotations=ToolAnnotations(title="Search memories", read_only_hint=True, open_world_hint=False),
    )
    def memory_search(
        query: Annotated[str, Field(description="Natural language query")],
        scope: Annotated[
            Literal["project", "team", "org", "all"], Field(description="Scope to search within")
        ] = "all",
        outcome: Annotated[Literal["success", "failure", "all"], Field(description="Filter by outcome type")] = "all",
        limit: Annotated[int, Field(description="Maximum results", ge=1, le=max_limit)] = default_limit,
        min_confidence: Annotated[
            float, Field(description="Minimum confidence threshold", ge=0.0, le=1.0)
        ] = default_min_confidence,
        project: Annotated[str, Field(description=SEARCH_PROJECT_DESCRIPTION)] = "",
        explain: Annotated[
            bool, Field(description="Include each result's score breakdown (similarity, confidence, boosts)")
        ] = False,
    ) -> SearchResponse:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_READ)
            search = services.search_query_validate(
                query=query, scope=scope, outcome=outcome, limit=limit, min_confidence=min_confidence,
                project=project or None,
            )
            result = services.memory_search_use(principal=principal, search=search)
            memories: list[SearchMemory] = []
            for hit in result.hits:
                memory = hit.memory
                item: SearchMemory = {
                    "id": memory.id,
                    "title": memory.title,
                    "description": memory.description,
                    "content": memory.content,
                    "outcome": memory.outcome,
                    "confidence": round(memory.confidence, 4),
                    "usage_count": memory.usage_count,
                    "relevance": round(hit.breakdown.score, 4),  # the ranking score (same as REST)
                    "scope": memory.scope,
                }
                if explain:
                    b = hit.breakdown
                    item["explain"] = {
                        "similarity": round(b.similarity, 4),
                        "confidence": round(b.confidence, 4),
                        "recency_boost": round(b.recency_boost, 4),
                        "scope_weight": b.scope_weight,
                        "consolidated_boost": b.consolidated_boost,
                        "score": round(b.score, 4),
                        "matched_by": list(hit.matched_by),
                    }
                memories.append(item)
            return {"memories": memories, "total_found": result.total_found, "tokens_used": result.tokens_used}

    @server.tool(
        description=(
            "Explicitly capture a strategy or pattern. Recording the same title, description and content "
            "(case and whitespace ignored) with the same outcome where an active memory already holds them "
            "records nothing: the answer carries that memory's id and duplicate_of."
        ),
        annotations=ToolAnnotations(
            title="Record a memory", read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    def memory_record(
        title: Annotated[str, Field(description="Short, descriptive title", max_length=services.TITLE_MAX)],
        description: Annotated[
            str, Field(description="When/why to apply this strategy", max_length=services.DESCRIPTION_MAX)
        ],
        content: Annotated[str, Field(description="Detailed steps or approach", max_length=services.CONTENT_MAX)],
        outcome: Annotated[
            Literal["success", "failure"], Field(description="Whether this is a pattern to follow or avoid")
        ],
        tags: Annotated[list[str], Field(description="Categorization tags", default_factory=list)],
        project: Annotated[str, Field(description=PROJECT_DESCRIPTION)] = "",
        scope: Annotated[
            Literal["project", "team", "org"],
            Field(description="Who may find it: the project, its team, or the whole organization"),
        ] = "project",
    ) -> RecordResponse:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_WRITE)
            result = services.memory_record_or_duplicate(
                principal=principal, title=title, description=description, content=content, outcome=outcome,
                tags=tags, project=project or None, scope=scope,
            )
            recorded: RecordResponse = {
                "id": result.memory.id,
                "message": result.message,
                "initial_confidence": round(result.memory.confidence, 4),
            }
            if result.duplicate:
                recorded["duplicate_of"] = result.memory.id
            return recorded

    @server.tool(
        description="Provide feedback on a retrieved memory",
        annotations=ToolAnnotations(
            title="Rate a memory", read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    def memory_feedback(
        memory_id: MemoryId,
        helpful: Annotated[bool, Field(description="Whether the memory was helpful")],
        comment: Annotated[
            str, Field(description="Optional feedback comment", max_length=services.COMMENT_MAX)
        ] = "",
    ) -> FeedbackResponse:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_WRITE)
            memory = selectors.memory_get(principal, memory_id)
            result = services_signals.memory_feedback(
                principal=principal, memory=memory, helpful=helpful, comment=comment
            )
            return {"success": True, "new_confidence": round(result.new_confidence, 4), "message": "Feedback recorded"}

    @server.tool(
        description=(
            "Report whether a task succeeded after using a memory. Call this after completing a task that "
            "used a retrieved memory to help the system learn which memories are actually useful."
        ),
        annotations=ToolAnnotations(
            title="Report a task outcome", read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=False,
        ),
    )
    def memory_outcome(
        memory_id: Annotated[str, Field(description="ID of the memory that was used")],
        succeeded: Annotated[bool, Field(description="Whether the task succeeded after using this memory")],
        session_id: Annotated[
            str, Field(description="Optional session ID for correlation", max_length=200)
        ] = "",
    ) -> OutcomeResponse:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_WRITE)
            memory = selectors.memory_get(principal, memory_id)
            result = services_signals.memory_outcome(
                principal=principal, memory=memory, succeeded=succeeded, session_id=session_id
            )
            return {"recorded": True, "new_confidence": round(result.new_confidence, 4), "message": "Outcome recorded"}

    @server.tool(
        description=(
            "Fetch one memory by ID with all its fields: content, tags, kind, scope and project, lifecycle "
            "(state, archived reason, the memory it was consolidated into, tier), confidence, usage and origin. "
            "Works for archived memories too."
        ),
        annotations=ToolAnnotations(title="Get a memory", read_only_hint=True, open_world_hint=False),
    )
    def memory_get(memory_id: MemoryId) -> MemoryDetail:
        with service_errors():
            principal = tool_principal(SCOPE_MEMORIES_READ)
            memory = selectors.memory_get(principal, memory_id)
            return {
                "id": memory.id,
                "title": memory.title,
                "description": memory.description,
                "content": memory.content,
                "outcome": memory.outcome,
                "tags": list(memory.tags),
                "kind": memory.kind,
                "scope": memory.scope,
                "project": memory.project.slug if memory.project is not None else None,
                "state": memory.state,
                "archived_reason": memory.archived_reason,
                "consolidated_into": memory.consolidated_into_id,
                "tier": memory.tier,
                "confidence": round(memory.confidence, 4),
                "usage_count": memory.usage_count,
                "last_used_at": _iso(memory.last_used_at),
                "origin": memory.origin,
                "created_at": memory.created_at.isoformat(),
            }


# --- session_submit (issue #4) ---------------------------------------------------------------------


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
    from memories.services_sessions import session_submit as submit

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
