"""The memory operations' contracts (seed 000; DESIGN §3): search, record, get, feedback, outcome and
session submit — each one input model (validation and defaults) and one output model, and one
``*_run`` function (principal + input → output). The MCP tools (``memories/mcp_tools.py``) and the
REST views (``memories/api.py``, ``memories/api_sessions.py``) only parse, call ``*_run`` and render,
so both answer the same body for the same input (``tests/test_contract_parity.py``).

Names follow seed 000; where REST spelled something else first, the old spelling is noted.
"""

from __future__ import annotations

import time
from typing import Annotated, Literal

from django.conf import settings
from pydantic import Field, StringConstraints

from accounts.access import Principal
from memories import selectors, services, services_ledger, services_sessions, services_signals, services_summaries
from memories.models import AgentSession, Memory, MemorySummary
from memories.selectors_search import SearchHit, SearchQuery
from memories.selectors_summaries import summaries_search
from reasoningbank.contracts import NUL_FREE, Contract
from reasoningbank.metrics import search_observe
from reasoningbank.tracing import current_set, traced

# --- shared field types ----------------------------------------------------------------------------

NOT_BLANK = "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$"  # after trimming: at least one visible character


def _text(maximum: int) -> object:
    """A required text: trimmed, not blank, no NUL, at most ``maximum`` characters."""
    return StringConstraints(strip_whitespace=True, min_length=1, max_length=maximum, pattern=NOT_BLANK)


def _id() -> object:
    """An id: not blank, no NUL; any length (an unknown id is a 404, however long)."""
    return StringConstraints(strip_whitespace=True, min_length=1, pattern=NOT_BLANK)


def _optional_text(maximum: int) -> object:
    return StringConstraints(strip_whitespace=True, max_length=maximum, pattern=NUL_FREE)


PROJECT_DESCRIPTION = (
    "Project slug. Needed only when this token reaches several projects; otherwise the one project it "
    "reaches is used (a token limited to one project, or an organization-wide token in an organization "
    "with a single project)."
)
SEARCH_PROJECT_DESCRIPTION = (
    "Project slug: search that project, its team's and the organization's memories. Left out: every "
    "project this token reaches."
)
Project = Annotated[str | None, _optional_text(200), Field(description=PROJECT_DESCRIPTION)]
MemoryId = Annotated[str, _id(), Field(description="ID of the memory")]
# search and memory_context: the memories they return are noted as given to this session (the injection ledger)
SessionRef = Annotated[
    str,
    _optional_text(200),
    Field(
        description=(
            "Your session's id: the memories returned are noted as given to that session, and its outcome "
            "(memory_outcome or session_submit with the same id) then reaches each of them"
        )
    ),
]
Outcome = Literal["success", "failure", "mixed"]
Kind = Literal["procedural", "semantic", "episodic", "working"]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, max_length=services.TAG_MAX, pattern=NUL_FREE)]


def _r(value: float) -> float:
    """Agent-facing scores: four decimals are enough and cost fewer tokens."""
    return round(float(value), 4)


def _iso(value: object) -> str | None:
    return value.isoformat() if value is not None else None  # type: ignore[attr-defined]


# --- memory_get ------------------------------------------------------------------------------------


class MemoryOut(Contract):
    """A whole memory (never its embedding)."""

    id: str
    title: str
    description: str
    content: str
    outcome: Outcome
    tags: list[str]
    kind: Kind
    scope: Literal["project", "team", "org"]
    project: str | None = Field(description="project slug")
    team: str | None = Field(description="team slug")
    state: Literal["active", "archived", "proposed"] = Field(
        description="proposed: a promotion proposal awaiting review in the review queue (never searched)"
    )
    archived_reason: str = Field(description="why it was archived; empty while active")
    consolidated_into: str | None = Field(description="the consolidated memory it was merged into")
    tier: str
    retention: float
    importance: float
    confidence: float
    alpha: float
    beta: float
    usage_count: int
    last_used_at: str | None
    origin: str
    source_session: str | None
    promoted_from: str = Field(description="the kind consolidation's promotion ladder raised it from; empty if never")
    promoted_at: str | None
    promotion_reason: str = Field(description="which ladder criterion, with its figures")
    last_signal_at: str | None = Field(description="the last feedback, outcome or usage")
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, memory: Memory) -> MemoryOut:
        return cls(
            id=memory.id, title=memory.title, description=memory.description, content=memory.content,
            outcome=memory.outcome, tags=list(memory.tags), kind=memory.kind, scope=memory.scope,  # type: ignore[arg-type]
            project=memory.project.slug if memory.project is not None else None,
            team=memory.team.slug if memory.team is not None else None,
            state=memory.state, archived_reason=memory.archived_reason,  # type: ignore[arg-type]
            consolidated_into=memory.consolidated_into_id, tier=memory.tier, retention=memory.retention,
            importance=memory.importance, confidence=memory.confidence, alpha=memory.alpha, beta=memory.beta,
            usage_count=memory.usage_count, last_used_at=_iso(memory.last_used_at), origin=memory.origin,
            source_session=memory.source_session_id, promoted_from=memory.promoted_from,
            promoted_at=_iso(memory.promoted_at), promotion_reason=memory.promotion_reason,
            last_signal_at=_iso(memory.last_signal_at), created_at=memory.created_at.isoformat(),
            updated_at=memory.updated_at.isoformat(),
        )


class MemoryGetInput(Contract):
    memory_id: MemoryId


def memory_get_run(principal: Principal, args: MemoryGetInput) -> MemoryOut:
    return MemoryOut.of(selectors.memory_get(principal, args.memory_id))


# --- memory_search -----------------------------------------------------------------------------------


class SearchInput(Contract):
    query: Annotated[str, _text(services.QUERY_MAX), Field(description="Natural language query")]
    scope: Annotated[Literal["project", "team", "org", "all"], Field(description="Scope to search within")] = "all"
    outcome: Annotated[Literal["success", "failure", "all"], Field(description="Filter by outcome type")] = "all"
    limit: Annotated[
        int, Field(description="Maximum results", ge=1, le=settings.SEARCH_MAX_LIMIT)
    ] = settings.SEARCH_DEFAULT_LIMIT
    min_confidence: Annotated[
        float, Field(description="Minimum confidence threshold", ge=0.0, le=1.0)
    ] = settings.SEARCH_MIN_CONFIDENCE
    project: Annotated[str | None, _optional_text(200), Field(description=SEARCH_PROJECT_DESCRIPTION)] = None
    mode: Annotated[
        Literal["reflexive", "standard", "deep", "exhaustive"],
        Field(
            description=(
                "Which memories to search by tier: reflexive (hot only), standard (hot and warm), deep (also "
                "cold), exhaustive (every tier, archived memories included and marked with state)"
            )
        ),
    ] = "standard"
    session_id: SessionRef = ""
    include_summaries: Annotated[
        bool,
        Field(
            description=(
                "Also return the closest consolidated summaries, at most limit / 2, under `summaries` "
                "(present only when there are some)"
            )
        ),
    ] = True
    explain: Annotated[
        bool,
        Field(
            description=(
                "Include each result's score breakdown (both legs' scores and ranks, the fused relevance, "
                "confidence, boosts)"
            )
        ),
    ] = False

    def to_query(self) -> SearchQuery:
        return SearchQuery(
            query=self.query, scope=self.scope, outcome=self.outcome, limit=self.limit,
            min_confidence=float(self.min_confidence), project=self.project or None, mode=self.mode,
        )


class SearchExplanation(Contract):
    """Every factor of a result's score: relevance × confidence × recency_boost × scope_weight ×
    consolidated_boost = score, and where the relevance comes from: each leg's score and rank among
    this query's candidates. `confidence` is the value the search ranked with (before this search
    counted as a use). REST called this object `score` before."""

    relevance: float = Field(description="the fusion of both legs, 0 to 1")
    similarity: float = Field(description="vector leg: cosine similarity to the query")
    vector_rank: int | None = Field(description="vector leg: rank among the candidates")
    lexical: float = Field(description="lexical leg: BM25 score (0: no query term in the memory)")
    lexical_rank: int | None = Field(description="lexical leg: rank among the candidates that hold a term")
    confidence: float
    recency_boost: float
    scope: str
    scope_weight: float
    consolidated_boost: float
    score: float
    matched_by: list[str] = Field(description="vector and/or text: the legs that fetched it")

    @classmethod
    def of(cls, hit: SearchHit) -> SearchExplanation:
        b = hit.breakdown
        return cls(
            relevance=_r(b.relevance), similarity=_r(b.similarity), vector_rank=b.vector_rank,
            lexical=_r(b.lexical), lexical_rank=b.lexical_rank, confidence=_r(b.confidence),
            recency_boost=_r(b.recency_boost), scope=b.scope, scope_weight=_r(b.scope_weight),
            consolidated_boost=_r(b.consolidated_boost), score=_r(b.score), matched_by=list(hit.matched_by),
        )


class SearchHitOut(Contract):
    """One result. `confidence` and `usage_count` already count this search as a use (when its
    relevance reaches the usage floor); `relevance` is the ranking score; `duplicates` only when
    near-identical memories were folded into it; `explain` only when the search asked for it."""

    id: str
    title: str
    description: str
    content: str
    outcome: str
    confidence: float
    usage_count: int
    relevance: float
    scope: str
    state: Literal["active", "archived"] = Field(
        default="active",
        exclude_if=lambda value: value == "active",
        description="only on an archived memory, which only an exhaustive search returns",
    )
    duplicates: list[str] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,
        description="near-identical memories folded into this result (same text, or embeddings ≥ 0.95 alike)",
    )
    explain: SearchExplanation | None = Field(default=None, exclude_if=lambda value: value is None)


class SummaryDecisionOut(Contract):
    decision: str
    rationale: str
    outcome: str | None
    confidence: Literal["high", "medium", "low"]


class SupersededFactOut(Contract):
    original_fact: str
    superseded_by: str
    source_memory_id: str = Field(description="the source memory that held the original fact (empty: not named)")


class SummaryOut(Contract):
    """What consolidation learned from one cluster of memories: a summary, key facts, decisions and
    superseded facts, beside the consolidated memory the cluster became."""

    id: str
    memory_id: str = Field(description="the consolidated memory the cluster became")
    source_memory_ids: list[str]
    project: str
    summary: str
    key_facts: list[str]
    decisions: list[SummaryDecisionOut]
    superseded_facts: list[SupersededFactOut]
    confidence: float = Field(description="the consolidated memory's confidence now")
    temporal_range: tuple[str, str] = Field(description="first and last time the sources were written (ISO 8601)")
    created_at: str
    consolidation_run_id: str
    activation_count: int
    status: Literal["ready", "rejected"] = Field(
        default="ready",
        exclude_if=lambda value: value == "ready",
        description="only on a summary whose reply could not be parsed (never served); `error` says why",
    )
    error: str = Field(default="", exclude_if=lambda value: not value)

    @classmethod
    def of(cls, summary: MemorySummary) -> SummaryOut:
        return cls(
            id=summary.id, memory_id=summary.memory_id, source_memory_ids=list(summary.source_memory_ids),
            # a search row carries the slug and the live confidence itself (selectors_summaries)
            project=getattr(summary, "project_slug", None) or summary.project.slug,
            summary=summary.summary, key_facts=list(summary.key_facts),
            decisions=[SummaryDecisionOut(**d) for d in summary.decisions],
            superseded_facts=[SupersededFactOut(**f) for f in summary.superseded_facts],
            confidence=_r(getattr(summary, "memory_confidence", None) or summary.memory.confidence),
            temporal_range=(summary.temporal_start.isoformat(), summary.temporal_end.isoformat()),
            created_at=summary.created_at.isoformat(), consolidation_run_id=summary.consolidation_run_id,
            activation_count=summary.activation_count, status=summary.status,  # type: ignore[arg-type]
            error=summary.error,
        )


class SummaryHitOut(SummaryOut):
    relevance: float = Field(description="cosine similarity of the summary to the query")


class SearchOutput(Contract):
    memories: list[SearchHitOut]
    total_found: int
    tokens_used: int
    summaries: list[SummaryHitOut] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,
        description="with include_summaries: the closest consolidated summaries (at most limit / 2); absent when none",
    )


@traced("memory.search")
def memory_search_run(principal: Principal, args: SearchInput) -> SearchOutput:
    services.session_key_clean(args.session_id)  # before any work: a session id holding a secret is refused
    started = time.perf_counter()
    current_set(  # seed 002's recall.search attributes: the query's length, never its text
        query_length=len(args.query), mode=args.mode, limit=args.limit, scope=args.scope, outcome=args.outcome,
        include_summaries=args.include_summaries, org_id=principal.organization.id,
    )
    result = services.memory_search_use(principal=principal, search=args.to_query())
    current_set(project_id=result.project.id if result.project else None, result_count=len(result.hits),
                total_found=result.total_found, tokens_used=result.tokens_used)
    summaries = (
        summaries_search(
            principal, query_vector=result.query_vector, project=result.project, scope=args.scope,
            limit=args.limit // 2, min_similarity=settings.SEARCH_MIN_SIMILARITY,
            min_confidence=float(args.min_confidence),
        )
        if args.include_summaries
        else []
    )
    services_summaries.summaries_activate([hit.summary.id for hit in summaries], write_behind=True)
    if args.session_id:
        services_ledger.session_uses_record(
            principal=principal, session_key=args.session_id, via="search",
            memory_ids=[hit.memory.id for hit in result.hits if hit.memory.state == Memory.STATE_ACTIVE]
            + [hit.summary.memory_id for hit in summaries],
        )
    hits = [
        SearchHitOut(
            id=hit.memory.id, title=hit.memory.title, description=hit.memory.description,
            content=hit.memory.content, outcome=hit.memory.outcome, confidence=_r(hit.memory.confidence),
            usage_count=hit.memory.usage_count, relevance=_r(hit.breakdown.score), scope=hit.memory.scope,
            state=hit.memory.state,  # type: ignore[arg-type]
            duplicates=list(hit.duplicates), explain=SearchExplanation.of(hit) if args.explain else None,
        )
        for hit in result.hits
    ]
    search_observe(mode=args.mode, seconds=time.perf_counter() - started, found=bool(hits))
    return SearchOutput(
        memories=hits, total_found=result.total_found, tokens_used=result.tokens_used,
        summaries=[SummaryHitOut(**SummaryOut.of(h.summary).model_dump(), relevance=h.similarity) for h in summaries],
    )


# --- memory_record -----------------------------------------------------------------------------------


class RecordInput(Contract):
    title: Annotated[str, _text(services.TITLE_MAX), Field(description="Short, descriptive title")]
    description: Annotated[str, _text(services.DESCRIPTION_MAX), Field(description="When/why to apply this strategy")]
    content: Annotated[str, _text(services.CONTENT_MAX), Field(description="Detailed steps or approach")]
    outcome: Annotated[
        Outcome,
        Field(description="Whether this is a pattern to follow (success) or avoid (failure), or mixed"),
    ]
    tags: Annotated[
        list[Tag], Field(description="Categorization tags", max_length=services.TAGS_MAX, default_factory=list)
    ]
    kind: Annotated[
        Kind | None,
        Field(description="procedural (how-to, the default), semantic (a fact), episodic (an event), working"),
    ] = None
    project: Project = None
    scope: Annotated[
        Literal["project", "team", "org"],
        Field(description="Who may find it: the project, its team, or the whole organization"),
    ] = "project"


class RecordOutput(Contract):
    id: str
    message: str
    initial_confidence: float
    memory: MemoryOut
    duplicate_of: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "Only when nothing was recorded: an active memory in the same place already has this title, "
            "description and content (case and whitespace ignored), outcome and kind, or a near copy of them "
            "(`duplicate_reason`); its id, the same as `id`."
        ),
    )
    duplicate_reason: Literal["identical", "near_copy"] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "Only with `duplicate_of`: `identical` (the same text), or `near_copy` (embeddings at least "
            "WRITE_GATE_NEAR_COPY_SIMILARITY alike, with the same numbers and no negation or opposite word "
            "between them)"
        ),
    )
    similarity: float | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Only for a near copy: how alike the two are (cosine similarity of their embeddings)",
    )


def memory_record_run(principal: Principal, args: RecordInput) -> tuple[RecordOutput, bool]:
    """The answer, and whether a memory was created (REST: 201, else 200)."""
    result = services.memory_record_or_duplicate(principal=principal, **args.model_dump())
    memory = result.memory
    output = RecordOutput(
        id=memory.id, message=result.message, initial_confidence=_r(memory.confidence), memory=MemoryOut.of(memory),
        duplicate_of=memory.id if result.duplicate else None,
        duplicate_reason=result.reason if result.duplicate else None,  # type: ignore[arg-type]
        similarity=_r(result.similarity) if result.similarity is not None else None,
    )
    return output, not result.duplicate


# --- memory_feedback / memory_outcome ----------------------------------------------------------------


class FeedbackBody(Contract):
    helpful: Annotated[bool, Field(description="Whether the memory was helpful")]
    comment: Annotated[
        str, _optional_text(services.COMMENT_MAX), Field(description="Optional feedback comment")
    ] = ""


class FeedbackInput(FeedbackBody):
    memory_id: MemoryId


class FeedbackOutput(Contract):
    success: bool
    new_confidence: float
    message: str


def memory_feedback_run(principal: Principal, args: FeedbackInput) -> FeedbackOutput:
    memory = selectors.memory_get(principal, args.memory_id)
    result = services_signals.memory_feedback(
        principal=principal, memory=memory, helpful=args.helpful, comment=args.comment
    )
    return FeedbackOutput(success=True, new_confidence=_r(result.new_confidence), message="Feedback recorded")


class OutcomeBody(Contract):
    succeeded: Annotated[bool, Field(description="Whether the task succeeded after using this memory")]
    session_id: Annotated[
        str, _optional_text(200), Field(description="Optional session ID for correlation")
    ] = ""


class OutcomeInput(OutcomeBody):
    memory_id: Annotated[str, _id(), Field(description="ID of the memory that was used")]


class OutcomeOutput(Contract):
    recorded: bool
    new_confidence: float
    message: str


def memory_outcome_run(principal: Principal, args: OutcomeInput) -> OutcomeOutput:
    services.session_key_clean(args.session_id)  # before any work: a session id holding a secret is refused
    memory = selectors.memory_get(principal, args.memory_id)
    result = services_signals.memory_outcome(
        principal=principal, memory=memory, succeeded=args.succeeded, session_id=args.session_id
    )
    message = "Outcome recorded"
    if args.session_id:  # the session's other memories (the injection ledger) learn it too
        others = services_ledger.session_outcome_attribute(
            principal=principal, session_key=args.session_id, succeeded=args.succeeded, already=[memory.id]
        )
        if others:
            noun = "memory" if len(others) == 1 else "memories"
            message += f"; also for {len(others)} other {noun} given to this session"
    return OutcomeOutput(recorded=True, new_confidence=_r(result.new_confidence), message=message)


# --- session_submit ----------------------------------------------------------------------------------


class SessionSubmitInput(Contract):
    session_id: Annotated[
        str, _text(200), Field(description="Your own id for the session (idempotency key)")
    ]
    outcome: Annotated[Literal["success", "failure", "unknown"], Field(description="How the session's task ended")]
    # not trimmed, and NUL characters are removed by session_submit (a pasted binary log must not fail)
    trace: Annotated[
        str,
        StringConstraints(strip_whitespace=False, min_length=1, pattern="\\S"),
        Field(description="The session transcript; secrets are scrubbed before storage"),
    ]
    project: Project = None


class SessionMemory(Contract):
    id: str
    title: str


SESSION_MESSAGES = {
    "queued": "Session queued for distillation",
    "waiting_for_llm": "Session stored; it waits until an LLM provider is configured",
    "running": "Session is being distilled",
    "done": "Session distilled",
    "failed": "Session distillation failed; a moderator can retry it",
}


class SessionSubmitOutput(Contract):
    """The submitted session: its distillation status (poll it by `session_id`)."""

    id: str = Field(description="the service's id for the session (`ses_…`)")
    session_id: str = Field(description="the id you submitted it with")
    project: str
    outcome: str
    status: Literal["queued", "running", "waiting_for_llm", "failed", "done"]
    created: bool = Field(description="false when this session_id had been submitted before")
    attempts: int
    error: str = Field(description="why the last distillation attempt failed, if it did")
    redactions: int = Field(description="how many secrets were redacted from the trace")
    memories: list[SessionMemory] = Field(description="the memories distilled from this session")
    message: str
    created_at: str
    updated_at: str
    finished_at: str | None
    next_attempt_at: str | None


def session_submit_run(principal: Principal, args: SessionSubmitInput) -> SessionSubmitOutput:
    result = services_sessions.session_submit(principal=principal, **args.model_dump())
    session: AgentSession = result.session
    if result.created and args.outcome in ("success", "failure"):  # the memories it was given learn it
        services_ledger.session_outcome_attribute(
            principal=principal, session_key=args.session_id, succeeded=args.outcome == "success"
        )
    return SessionSubmitOutput(
        id=session.id, session_id=session.external_id, project=session.project.slug, outcome=session.outcome,
        status=session.status,  # type: ignore[arg-type]
        created=result.created, attempts=session.attempts, error=session.error, redactions=session.redactions,
        memories=[SessionMemory(id=m.id, title=m.title) for m in session.memories.all()],
        message=SESSION_MESSAGES.get(session.status, session.status)
        + ("" if result.created else " (already submitted)"),
        created_at=session.created_at.isoformat(), updated_at=session.updated_at.isoformat(),
        finished_at=_iso(session.finished_at), next_attempt_at=_iso(session.next_attempt_at),
    )
