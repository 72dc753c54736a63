"""The ``memory_feedback`` and ``memory_outcome`` operations' contracts (docs/confidence.md): each one
input model, one output model and one ``*_run`` function, shared by the MCP tools and
``POST /api/v1/memories/{id}/feedback`` / ``…/outcome``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from accounts.access import Principal
from memories.confidence.services import memory_feedback, memory_outcome
from memories.core.contracts import MemoryId, id_text, optional_text, rounded
from memories.core.selectors import memory_get
from memories.sessions.services_ledger import session_outcome_attribute
from memories.validation import COMMENT_MAX, session_key_clean
from reasoningbank.contracts import Contract


class FeedbackBody(Contract):
    helpful: Annotated[bool, Field(description="Whether the memory was helpful")]
    comment: Annotated[
        str, optional_text(COMMENT_MAX), Field(description="Optional feedback comment")
    ] = ""


class FeedbackInput(FeedbackBody):
    memory_id: MemoryId


class FeedbackOutput(Contract):
    success: bool
    new_confidence: float
    message: str


def memory_feedback_run(principal: Principal, args: FeedbackInput) -> FeedbackOutput:
    memory = memory_get(principal, args.memory_id)
    result = memory_feedback(
        principal=principal, memory=memory, helpful=args.helpful, comment=args.comment
    )
    return FeedbackOutput(success=True, new_confidence=rounded(result.new_confidence), message="Feedback recorded")


class OutcomeBody(Contract):
    succeeded: Annotated[bool, Field(description="Whether the task succeeded after using this memory")]
    session_id: Annotated[
        str, optional_text(200), Field(description="Optional session ID for correlation")
    ] = ""


class OutcomeInput(OutcomeBody):
    memory_id: Annotated[str, id_text(), Field(description="ID of the memory that was used")]


class OutcomeOutput(Contract):
    recorded: bool
    new_confidence: float
    message: str


def memory_outcome_run(principal: Principal, args: OutcomeInput) -> OutcomeOutput:
    session_key_clean(args.session_id)  # before any work: a session id holding a secret is refused
    memory = memory_get(principal, args.memory_id)
    result = memory_outcome(
        principal=principal, memory=memory, succeeded=args.succeeded, session_id=args.session_id
    )
    message = "Outcome recorded"
    if args.session_id:  # the session's other memories (the injection ledger) learn it too
        others = session_outcome_attribute(
            principal=principal, session_key=args.session_id, succeeded=args.succeeded, already=[memory.id]
        )
        if others:
            noun = "memory" if len(others) == 1 else "memories"
            message += f"; also for {len(others)} other {noun} given to this session"
    return OutcomeOutput(recorded=True, new_confidence=rounded(result.new_confidence), message=message)
