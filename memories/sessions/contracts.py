"""The ``session_submit`` operation's contract (a finished session handed in for distillation,
docs/session-context.md): one input model, one output model and ``session_submit_run``, shared by the
MCP tool and ``POST /api/v1/sessions``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from accounts.access import Principal
from memories.code.contracts import Repository
from memories.code.selectors import project_slug_resolve
from memories.core.contracts import Project, iso_or_none, required_text
from memories.models import AgentSession
from memories.sessions.services import session_submit
from memories.sessions.services_ledger import session_outcome_attribute
from memories.sessions.services_resubmit import SubmitResult
from memories.trust.provenance_contracts import SourceOut
from memories.trust.provenance_selectors import memory_sources
from reasoningbank.contracts import Contract


class SessionSubmitInput(Contract):
    session_id: Annotated[str, required_text(200), Field(description="Your own id for the session (idempotency key)")]
    outcome: Annotated[
        Literal["success", "failure", "unknown"] | None,
        Field(
            description=(
                "How the session's task ended. Left out: the outcome the transcript shows (a client format's "
                "tests passing at the end or the user's explicit verdict), `unknown` when it is not plain"
            )
        ),
    ] = None
    # not trimmed, and NUL characters are removed by session_submit (a pasted binary log must not fail)
    trace: Annotated[
        str,
        StringConstraints(strip_whitespace=False, min_length=1, pattern="\\S"),
        Field(description="The session transcript; secrets are scrubbed before storage"),
    ]
    project: Project = None
    repository: Repository = None
    trace_format: Annotated[
        Literal["plain", "claude-code-jsonl", "codex-rollout-jsonl", "gemini-cli-json", "cursor-jsonl", "git-log"],
        Field(
            description=(
                "What `trace` is: `plain` text (kept as it is), or a client's own transcript file that the "
                "service turns into a compact trace: `claude-code-jsonl` (Claude Code's session JSON Lines; "
                "send its tail when it is longer than the size limit), `codex-rollout-jsonl` (an OpenAI Codex CLI "
                "rollout file), `gemini-cli-json` (a Gemini CLI chat recording: its JSON Lines, or the one JSON "
                "object of releases before 0.39) or "
                "`cursor-jsonl` (a Cursor agent transcript), or `git-log` (a batch of a repository's commits, one JSON "
                "object a line: docs/code-memory.md#seeding-from-history)"
            )
        ),
    ] = "plain"
    partial: Annotated[
        bool,
        Field(
            description=(
                "True while the session goes on (a hook after each turn): the trace replaces the one sent "
                "before (or, once the session was distilled, adds its new turns), and distillation waits until "
                "no submission has come for a while. False (the default): the session is over, distil it now"
            )
        ),
    ] = False


class SessionMemory(Contract):
    id: str
    title: str
    source: SourceOut = Field(description="who wrote it, how, through which client, when; and whether it is trusted")


def session_memories(session: AgentSession) -> list[SessionMemory]:
    """The memories distilled from ``session``, each with its source (one query for all of them)."""
    memories = list(session.memories.all())
    sources = memory_sources(memories)
    return [SessionMemory(id=m.id, title=m.title, source=SourceOut.of(sources[m.id])) for m in memories]


class HeldFinding(Contract):
    """What the instruction-smell detector found in a memory distilled from the session (held for review)."""

    memory: str = Field(description="the distilled memory, waiting in quarantine")
    title: str
    rule: str = Field(description="the detector's rule that fired")
    reason: str = Field(description="why such text is held for review")
    field: str = Field(description="the memory's field the text is in")
    start: int = Field(description="where the text starts in that field")
    end: int = Field(description="where it ends")
    excerpt: str = Field(description="the text that fired the rule")


SESSION_MESSAGES = {
    "queued": "Session queued for distillation",
    "waiting_for_llm": "Session stored; it waits until an LLM provider is configured",
    "waiting_for_budget": "Session stored; it waits until the organization's LLM budget allows its distillation",
    "running": "Session is being distilled",
    "done": "Session distilled",
    "failed": "Session distillation failed; a moderator can retry it",
    "held": (
        "Session distilled, but the instruction-smell detector flagged what it produced (see held): those "
        "memories wait in quarantine until an admin reviews them in the review queue; until then they are not "
        "searched or injected"
    ),
}


class SessionSubmitOutput(Contract):
    """The submitted session: its distillation status (poll it by `session_id`)."""

    id: str = Field(description="the service's id for the session (`ses_…`)")
    session_id: str = Field(description="the id you submitted it with")
    project: str
    outcome: str
    status: Literal["queued", "running", "waiting_for_llm", "waiting_for_budget", "failed", "done", "held"] = Field(
        description="`held`: distilled, but memories it produced wait in quarantine for an admin's review (`held`)"
    )
    created: bool = Field(description="false when this session_id had been submitted before")
    replaced: bool = Field(
        default=False, description="true when this submission's trace replaced an earlier one not yet distilled"
    )
    continued: bool = Field(
        default=False,
        description=(
            "true when this submission continued a session distilled (or being distilled) before: the turns it "
            "holds after that part were added to the trace, for another round that distils only them"
        ),
    )
    rounds: int = Field(
        description="how many times the session was distilled: a session handed in again after its distillation "
        "(a resumed conversation) is distilled again, for its new turns only"
    )
    distilled_upto: int = Field(
        description="how many characters of the session's stored trace were distilled; what follows waits for "
        "the next round"
    )
    attempts: int
    error: str = Field(description="why the last distillation attempt failed, if it did")
    redactions: int = Field(description="how many secrets were redacted from the trace")
    memories: list[SessionMemory] = Field(description="the memories distilled from this session")
    held: list[HeldFinding] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,
        description="only on a held session: what the detector found in its distilled memories, span by span",
    )
    message: str
    created_at: str
    updated_at: str
    finished_at: str | None
    next_attempt_at: str | None


def _held(session: AgentSession) -> bool:
    return session.status == "queued" and session.attempts == 0 and session.next_attempt_at is not None


def _resubmission_note(result: SubmitResult, session: AgentSession) -> str:
    if result.created:
        return ""
    if result.continued:
        return " (continued: the turns since its last distillation were added)"
    if result.replaced:
        return " (trace replaced)"
    return " (nothing new since its last distillation)" if session.rounds else " (already submitted)"


def session_submit_run(principal: Principal, args: SessionSubmitInput) -> SessionSubmitOutput:
    project = project_slug_resolve(principal, args.project, args.repository)
    result = session_submit(principal=principal, **args.model_dump(exclude={"repository"}) | {"project": project})
    session: AgentSession = result.session
    # once the session is over, the memories it was given learn how it went (each once: the ledger, which
    # spans every round of the session: those given after a resume learn the later outcome)
    changed = result.created or result.replaced or result.continued
    if changed and not args.partial and session.outcome in ("success", "failure"):
        session_outcome_attribute(
            principal=principal, session_key=args.session_id, succeeded=session.outcome == "success"
        )
    return SessionSubmitOutput(
        id=session.id,
        session_id=session.external_id,
        project=session.project.slug,
        outcome=session.outcome,
        status=session.status,  # type: ignore[arg-type]
        created=result.created,
        replaced=result.replaced,
        continued=result.continued,
        rounds=session.rounds,
        distilled_upto=session.distilled_upto,
        attempts=session.attempts,
        error=session.error,
        redactions=session.redactions,
        memories=session_memories(session),
        held=[HeldFinding(**finding) for finding in session.held],
        message=SESSION_MESSAGES.get(session.status, session.status)
        + _resubmission_note(result, session)
        + (" once the session has been idle a while" if _held(session) else ""),
        created_at=session.created_at.isoformat(),
        updated_at=session.updated_at.isoformat(),
        finished_at=iso_or_none(session.finished_at),
        next_attempt_at=iso_or_none(session.next_attempt_at),
    )
