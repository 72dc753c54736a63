"""The ``memory_context`` operation's contract (seed 002 "SessionStart Summary Injection", issue 14):
an agent's session starts with a ``<memory_consolidated_summaries>`` block of the project's best
knowledge, replacing any earlier block in the context it passes (idempotent). One input model, one
output model and ``memory_context_run``, shared by the MCP tool (``memories/mcp_tools.py``), ``POST
/api/v1/memories/context`` (``memories/api.py``) and ``scripts/claude-session-start``.

Until consolidation keeps summaries, the block carries the project's highest-confidence procedural
memories (``source: "procedural_memories"``)."""

from __future__ import annotations

from typing import Annotated, Literal

from django.conf import settings
from django.utils import timezone
from pydantic import Field, StringConstraints

from accounts.access import Principal
from memories import selectors, services, services_ledger
from memories.context_block import ContextEntry, block_format, context_inject
from memories.contracts import Project, SessionRef
from memories.selectors_context import context_memories
from reasoningbank.contracts import NUL_FREE, Contract

CONTEXT_MAX = 400_000  # characters of existing context accepted (a long session's preamble)


class ContextInput(Contract):
    project: Project = None
    context: Annotated[
        str,
        StringConstraints(max_length=CONTEXT_MAX, pattern=NUL_FREE),
        Field(description="The session's existing context; an earlier block in it is replaced, not repeated"),
    ] = ""
    task: Annotated[
        str,
        StringConstraints(strip_whitespace=True, max_length=services.QUERY_MAX, pattern=NUL_FREE),
        Field(description="What the session is about to do: with prioritize=relevance, memories for it come first"),
    ] = ""
    max: Annotated[
        int, Field(description="At most this many entries", ge=1, le=50)
    ] = settings.HOOK_SESSION_START_SUMMARIES_MAX
    min_confidence: Annotated[
        float, Field(description="Only entries at least this trusted", ge=0.0, le=1.0)
    ] = settings.HOOK_SESSION_START_SUMMARIES_MIN_CONFIDENCE
    token_budget: Annotated[
        int, Field(description="The block stays within this many tokens (~4 characters each)", ge=200, le=20_000)
    ] = settings.HOOK_SESSION_START_SUMMARIES_TOKEN_BUDGET
    session_id: SessionRef = ""
    prioritize: Annotated[
        Literal["relevance", "recency", "activation"],
        Field(description="relevance to the task (by confidence without one), recency, or activation (use)"),
    ] = settings.HOOK_SESSION_START_SUMMARIES_PRIORITIZE  # type: ignore[assignment]  # env_choice: these 3 names


class ContextOutput(Contract):
    context: str = Field(description="the given context with exactly one block (none when nothing qualifies)")
    context_block: str = Field(description="the block alone (empty when nothing qualifies)")
    summaries_injected: int
    tokens_used: int = Field(description="the block's size in tokens (~4 characters each)")
    replaced_existing: bool = Field(description="the given context held a block, which was replaced")
    source: Literal["summaries", "procedural_memories"] = Field(
        description="what the entries are: consolidated summaries, or (until a project has any) procedural memories"
    )
    memory_ids: list[str] = Field(description="the memories behind the entries, in order")
    project: str


def memory_context_run(principal: Principal, args: ContextInput) -> ContextOutput:
    project = selectors.project_target(principal, args.project)
    memories = []
    if settings.HOOK_SESSION_START_SUMMARIES_ENABLED:
        vector = services.query_embed(args.task) if args.task and args.prioritize == "relevance" else None
        memories = context_memories(
            principal, project, limit=args.max, min_confidence=args.min_confidence,
            prioritize=args.prioritize, task=args.task, task_vector=vector,
        )
    entries = [
        ContextEntry(
            id=m.id, title=m.title, body=f"{m.description.strip()}\n\n{m.content.strip()}",
            start=m.created_at, end=m.updated_at,
        )
        for m in memories
    ]
    block = block_format(entries, token_budget=args.token_budget, generated_at=timezone.now())
    if args.session_id:
        services_ledger.session_uses_record(
            principal=principal, session_key=args.session_id, memory_ids=block.entries, via="context"
        )
    context, replaced = context_inject(args.context, block)
    return ContextOutput(
        context=context, context_block=block.text, summaries_injected=len(block.entries),
        tokens_used=block.tokens, replaced_existing=replaced, source="procedural_memories",
        memory_ids=block.entries, project=project.slug,
    )
