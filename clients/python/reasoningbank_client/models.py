"""Request and response bodies of the ReasoningBank REST API, generated from its OpenAPI schema by
clients/python/generate_models.py. Do not edit: regenerate (docs/sdks.md#regenerating)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

SearchScopeEnum = Literal["project", "team", "org", "all"]


SearchOutcomeEnum = Literal["success", "failure", "all"]


ModeEnum = Literal["reflexive", "standard", "deep", "exhaustive"]


class SearchRequest(TypedDict):
    query: str
    scope: NotRequired[SearchScopeEnum]
    outcome: NotRequired[SearchOutcomeEnum]
    limit: NotRequired[int]
    min_confidence: NotRequired[float]
    project: NotRequired[str | None]
    repository: NotRequired[str | None]
    mode: NotRequired[ModeEnum]
    session_id: NotRequired[str]
    include_summaries: NotRequired[bool]
    explain: NotRequired[bool]
    exclude_seen: NotRequired[bool]
    token_budget: NotRequired[int | None]
    min_similarity: NotRequired[float | None]
    paths: NotRequired[list[str]]
    paths_only: NotRequired[bool]
    inject: NotRequired[bool]


SearchHitOutStateEnum = Literal["active", "archived"]


class CodeChangedOut(TypedDict):
    """The flag of a memory whose anchored code changed (docs/code-memory.md#staleness)."""

    commit: str
    path: str
    symbol: str
    changed_at: str | None


class SearchExplanation(TypedDict):
    """Every factor of a result's score: relevance × confidence × recency_boost × scope_weight ×
    consolidated_boost × path_boost = score, and where the relevance comes from: each leg's score and rank among
    this query's candidates. `confidence` is the value the search ranked with (before this search
    counted as a use). REST called this object `score` before."""

    relevance: float
    fused: float
    time_expression: float
    time_period: float
    similarity: float
    vector_rank: int | None
    lexical: float
    lexical_rank: int | None
    confidence: float
    recency_boost: float
    scope: str
    scope_weight: float
    consolidated_boost: float
    path_boost: float
    score: float
    matched_by: list[str]
    own_relevance: float
    neighbour: str | None
    neighbour_relevance: float
    query: NotRequired[str | None]
    found_by: NotRequired[list[str]]
    code_changed_factor: float


HowEnum = Literal["recorded", "distilled", "synthesised", "pattern", "promoted", "imported", "extracted"]


TrustEnum = Literal["trusted", "pending"]


class SourceOut(TypedDict):
    """Who wrote this memory, how and through which client: ask before you act on what it says."""

    how: HowEnum
    by: str
    via: str | None
    at: str
    trust: TrustEnum
    reviewed_by: str | None
    label: str


AnchorOutStateEnum = Literal["current", "code_changed", "deleted"]


class AnchorOut(TypedDict):
    """An anchor as stored: the place or error signature, and whether the code changed since."""

    repository: str
    path: str
    symbol: str
    line_start: int | None
    line_end: int | None
    commit: str
    error_signature: str
    error_text: str
    state: AnchorOutStateEnum
    changed_commit: str


class SearchHitOut(TypedDict):
    """One result. `confidence` and `usage_count` already count this search as a use (when its
    relevance reaches the usage floor; never for an `inject` search, whose results are impressions);
    `relevance` is the ranking score; `duplicates` only when
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
    state: NotRequired[SearchHitOutStateEnum]
    duplicates: NotRequired[list[str]]
    code_changed: NotRequired[CodeChangedOut | None]
    explain: NotRequired[SearchExplanation | None]
    source: SourceOut
    anchors: NotRequired[list[AnchorOut]]


ConfidenceEnum = Literal["high", "medium", "low"]


class SummaryDecisionOut(TypedDict):
    decision: str
    rationale: str
    outcome: str | None
    confidence: ConfidenceEnum


class SupersededFactOut(TypedDict):
    original_fact: str
    superseded_by: str
    source_memory_id: str


Status1beEnum = Literal["ready", "rejected"]


class SummaryHitOut(TypedDict):
    id: str
    memory_id: str
    source_memory_ids: list[str]
    project: str
    summary: str
    key_facts: list[str]
    decisions: list[SummaryDecisionOut]
    superseded_facts: list[SupersededFactOut]
    confidence: float
    temporal_range: list[Any]
    created_at: str
    consolidation_run_id: str
    activation_count: int
    status: NotRequired[Status1beEnum]
    error: NotRequired[str]
    relevance: float


QueryRewriteOutStatusEnum = Literal["rewritten", "skipped"]


class QueryRewriteOut(TypedDict):
    """What a deep search made of its question (docs/search.md#deep-search-rewriting-the-question):
    rewritten by the configured LLM into focused queries, each searched and the results fused; or
    skipped, and why — the question was then searched as asked."""

    status: QueryRewriteOutStatusEnum
    queries: list[str]
    cached: bool
    reason: Literal["off", "no_llm", "over_budget", "llm_unavailable", "llm_error", "reply_unreadable"] | None
    detail: str | None


class SearchResponse(TypedDict):
    memories: list[SearchHitOut]
    total_found: int
    tokens_used: int
    summaries: NotRequired[list[SummaryHitOut]]
    query_rewrite: NotRequired[QueryRewriteOut | None]
    injection_block: NotRequired[str | None]


MemoryOutcomeEnum = Literal["success", "failure", "mixed"]


MemoryScopeEnum = Literal["project", "team", "org"]


class AnchorIn(TypedDict):
    """A place in the code the memory is about (a path, optionally a symbol and lines), or an error it is
    about, or both."""

    repository: NotRequired[str | None]
    path: NotRequired[str | None]
    symbol: NotRequired[str | None]
    line_start: NotRequired[int | None]
    line_end: NotRequired[int | None]
    commit: NotRequired[str | None]
    error: NotRequired[str | None]


class RecordRequest(TypedDict):
    title: str
    description: str
    content: str
    outcome: MemoryOutcomeEnum
    tags: NotRequired[list[str]]
    kind: NotRequired[Literal["procedural", "semantic", "episodic", "working"] | None]
    project: NotRequired[str | None]
    scope: NotRequired[MemoryScopeEnum]
    anchors: NotRequired[list[AnchorIn]]


RecordResponseStatusEnum = Literal["recorded", "flagged", "quarantined", "duplicate"]


KindAa5Enum = Literal["working", "episodic", "semantic", "procedural"]


StateB04Enum = Literal["active", "archived", "proposed", "quarantined"]


class Finding(TypedDict):
    """One finding of the instruction-smell detector: the rule that fired, why, and what it read."""

    rule: str
    reason: str
    field: str
    excerpt: str


class MemoryOut(TypedDict):
    """A whole memory (never its embedding)."""

    id: str
    title: str
    description: str
    content: str
    outcome: MemoryOutcomeEnum
    tags: list[str]
    kind: KindAa5Enum
    scope: MemoryScopeEnum
    project: str | None
    team: str | None
    state: StateB04Enum
    flags: list[Finding]
    archived_reason: str
    consolidated_into: str | None
    tier: str
    retention: float
    importance: float
    confidence: float
    alpha: float
    beta: float
    usage_count: int
    last_used_at: str | None
    impression_count: int
    last_shown_at: str | None
    origin: str
    source_session: str | None
    promoted_from: str
    promoted_at: str | None
    promotion_reason: str
    last_signal_at: str | None
    created_at: str
    updated_at: str
    source: SourceOut
    anchors: list[AnchorOut]


class QuarantineNote(TypedDict):
    """Why a memory was held for review, and what happens next."""

    rules: list[Finding]
    message: str


class RecordResponse(TypedDict):
    id: str
    status: RecordResponseStatusEnum
    message: str
    initial_confidence: float
    memory: MemoryOut
    quarantine: NotRequired[QuarantineNote | None]
    duplicate_of: NotRequired[str | None]
    duplicate_reason: NotRequired[Literal["identical", "near_copy"] | None]
    similarity: NotRequired[float | None]


class FeedbackRequest(TypedDict):
    helpful: bool
    comment: NotRequired[str]


class FeedbackResponse(TypedDict):
    success: bool
    new_confidence: float
    message: str


class OutcomeRequest(TypedDict):
    succeeded: bool
    session_id: NotRequired[str]


class OutcomeResponse(TypedDict):
    recorded: bool
    new_confidence: float
    message: str


PrioritizeEnum = Literal["relevance", "recency", "activation"]


class ContextRequest(TypedDict):
    project: NotRequired[str | None]
    repository: NotRequired[str | None]
    context: NotRequired[str]
    task: NotRequired[str]
    max: NotRequired[int]
    min_confidence: NotRequired[float]
    token_budget: NotRequired[int]
    session_id: NotRequired[str]
    prioritize: NotRequired[PrioritizeEnum]


ContextResponseSourceEnum = Literal["summaries", "procedural_memories", "mixed"]


class ContextResponse(TypedDict):
    context: str
    context_block: str
    summaries_injected: int
    tokens_used: int
    replaced_existing: bool
    source: ContextResponseSourceEnum
    memory_ids: list[str]
    summary_ids: list[str]
    memory_sources: list[SourceOut]
    min_confidence: float
    project: str


class AskRequest(TypedDict):
    question: str
    project: NotRequired[str | None]
    limit: NotRequired[int]
    min_confidence: NotRequired[float]
    mode: NotRequired[ModeEnum]
    session_id: NotRequired[str]


TemporalResolutionSourceEnum = Literal["llm", "resolver"]


class TemporalResolution(TypedDict):
    """A relative date of a memory and the absolute date it means."""

    original_text: str
    memory_timestamp: str
    resolved_date: str
    confidence: float
    source: TemporalResolutionSourceEnum
    agrees: bool | None
    corrected_from: str | None
    memory_id: str | None


class AskMemory(TypedDict):
    """A memory the LLM was shown, numbered as in its prompt (from 1)."""

    id: str
    title: str
    recorded_at: str
    cited: bool
    source: SourceOut


class AskResponse(TypedDict):
    answer: str
    confidence: float
    reasoning: str
    temporal_resolutions: list[TemporalResolution]
    source_memory_ids: list[str]
    requires_inference: bool
    memories: list[AskMemory]
    llm_called: bool
    warnings: list[str]


class RecallRequest(TypedDict):
    session_id: NotRequired[str]
    repository: NotRequired[str]
    path: NotRequired[str]
    root: NotRequired[str]
    error: NotRequired[str]
    project: NotRequired[str | None]
    limit: NotRequired[int]
    token_budget: NotRequired[int | None]


class RecallAnchorOut(TypedDict):
    """The anchor that brought a memory back: where in the code it is about, and whether that code changed."""

    repository: str
    path: str
    symbol: str
    line_start: int | None
    line_end: int | None
    commit: str
    error_text: str
    state: str
    changed_commit: str


class RecallHitOut(TypedDict):
    id: str
    title: str
    description: str
    content: str
    outcome: str
    confidence: float
    scope: str
    matched_by: str
    code_changed: bool
    anchor: RecallAnchorOut
    source: SourceOut


class ErrorSignatureOut(TypedDict):
    type: str
    message: str
    frames: list[str]
    text: str
    digest: str


class RecallResponse(TypedDict):
    memories: list[RecallHitOut]
    injection_block: str
    tokens_used: int
    repository: str
    path: str
    error_signature: ErrorSignatureOut | None


TraceFormatEnum = Literal["plain", "claude-code-jsonl", "codex-rollout-jsonl", "gemini-cli-json", "cursor-jsonl", "git-log"]


class SessionSubmitRequest(TypedDict):
    session_id: str
    outcome: NotRequired[Literal["success", "failure", "unknown"] | None]
    trace: str
    project: NotRequired[str | None]
    repository: NotRequired[str | None]
    trace_format: NotRequired[TraceFormatEnum]
    partial: NotRequired[bool]


SessionStatusEnum = Literal["queued", "running", "done", "failed", "waiting_for_llm", "waiting_for_budget", "held"]


class SessionMemory(TypedDict):
    id: str
    title: str
    source: SourceOut


class HeldFinding(TypedDict):
    """What the instruction-smell detector found in a memory distilled from the session (held for review)."""

    memory: str
    title: str
    rule: str
    reason: str
    field: str
    start: int
    end: int
    excerpt: str


class SessionSubmitResponse(TypedDict):
    """The submitted session: its distillation status (poll it by `session_id`)."""

    id: str
    session_id: str
    project: str
    outcome: str
    status: SessionStatusEnum
    created: bool
    replaced: bool
    continued: bool
    rounds: int
    distilled_upto: int
    attempts: int
    error: str
    redactions: int
    memories: list[SessionMemory]
    held: NotRequired[list[HeldFinding]]
    message: str
    created_at: str
    updated_at: str
    finished_at: str | None
    next_attempt_at: str | None


class SessionDetail(TypedDict):
    """A submitted agent session with its (redacted) trace."""

    id: str
    session_id: str
    project: str
    outcome: str
    status: SessionStatusEnum
    rounds: int
    distilled_upto: int
    attempts: int
    error: str
    warnings: list[str]
    redactions: int
    memories: list[SessionMemory]
    held: list[HeldFinding]
    created_at: str
    updated_at: str
    finished_at: str | None
    next_attempt_at: str | None
    trace: str
    raw_reply: str


StatusA9aEnum = Literal["committed", "kept", "reverted"]


class CodeReportRequest(TypedDict):
    session_id: NotRequired[str]
    commit: NotRequired[str]
    status: StatusA9aEnum


class CodeReportResponse(TypedDict):
    session_id: str
    commit: str
    status: StatusA9aEnum
    memory_ids: list[str]
    signals_written: int
    already_reported: bool
    message: str


ChangedFileInStatusEnum = Literal["added", "modified", "deleted", "renamed"]


class HunkIn(TypedDict):
    start: int
    lines: int


class ChangedFileIn(TypedDict):
    status: ChangedFileInStatusEnum
    path: str
    old_path: NotRequired[str]
    hunks: NotRequired[list[HunkIn]]
    symbols: NotRequired[list[str] | None]


class CodeChangesRequest(TypedDict):
    repository: str
    commit: str
    committed_at: str
    files: list[ChangedFileIn]


class CodeChangesResponse(TypedDict):
    repository: str
    commit: str
    code_changed: list[str]
    deleted: list[str]
    moved: list[str]
    already_reported: bool
    message: str


class ConsolidateRestRequest(TypedDict):
    project_id: NotRequired[str | None]
    similarity_threshold: NotRequired[float | None]
    dry_run: NotRequired[bool]
    max_clusters: NotRequired[int]
    force: NotRequired[bool]
    project: NotRequired[str | None]
    wait: NotRequired[bool]


class ConsolidateResponse(TypedDict):
    """The run (as `GET /api/v1/consolidation/runs/{id}` shows it) with the consolidation statistics at
    the top level. For a dry run the lists are what a real run would create and archive, and `preview` holds
    its proposals; nothing changed."""

    created_memories: list[str]
    archived_memories: list[str]
    skipped_count: int
    total_processed: int
    duration_seconds: float
    run_id: str
    id: str
    project: str | None
    trigger: str
    status: str
    dry_run: bool
    options: dict[str, Any]
    phase: str
    progress: float
    counters: dict[str, Any]
    phase_durations: dict[str, Any]
    warnings: list[Any]
    errors: list[Any]
    preview: dict[str, Any]
    result: dict[str, Any]
    llm_calls: int
    llm_input_tokens: int
    llm_output_tokens: int
    created_at: str
    started_at: str | None
    finished_at: str | None


HistoryFileStatusEnum = Literal["A", "M", "D", "R", "C", "T", "U"]


class HistoryFile(TypedDict):
    path: str
    status: NotRequired[HistoryFileStatusEnum]
    old_path: NotRequired[str]
    symbols: NotRequired[list[str]]


class PullRequest(TypedDict):
    number: int
    title: NotRequired[str]
    body: NotRequired[str]


class HistoryCommit(TypedDict):
    sha: str
    parents: NotRequired[list[str]]
    date: NotRequired[str]
    author: NotRequired[str]
    subject: NotRequired[str]
    body: NotRequired[str]
    files: NotRequired[list[HistoryFile]]
    reverts: NotRequired[str]
    fixes: NotRequired[list[str]]
    pr: NotRequired[PullRequest | None]


class HistorySeedRequest(TypedDict):
    repository: str
    commits: list[HistoryCommit]
    project: NotRequired[str | None]
    batch_size: NotRequired[int]
    dry_run: NotRequired[bool]


class HistoryBatch(TypedDict):
    id: str
    session_id: str
    commits: int
    status: str


class HistoryEstimate(TypedDict):
    batches: int
    input_tokens: int
    output_tokens: int
    tokens: int
    provider: str
    model: str
    estimated_cost: str | None
    currency: str


class HistorySeedResponse(TypedDict):
    project: str
    repository: str
    dry_run: bool
    received: int
    skipped: int
    submitted: int
    batches: list[HistoryBatch]
    estimate: HistoryEstimate
    episodic_memories: int
    gated: int
    quarantined: int
    waiting_for_llm: bool
    last_commit: str
    message: str


class HistoryProgressResponse(TypedDict):
    project: str
    repository: str
    last_commit: str
    commits: int
    batches: int
    batches_distilled: int
    batches_by_status: dict[str, int]
    episodic_memories: int
    distilled_memories: int
    updated_at: str | None
    message: str


FormatEnum = Literal["reasoningbank", "claude-md", "mem0"]


class ImportRequestRequest(TypedDict):
    format: NotRequired[FormatEnum]
    text: str
    project: NotRequired[str]
    dry_run: NotRequired[bool]
    source_name: NotRequired[str]
    reviewed: NotRequired[bool]


class ImportSkipped(TypedDict):
    where: str
    reason: str
    message: str


class ImportResult(TypedDict):
    format: str
    dry_run: bool
    project: str | None
    created: dict[str, int]
    projects_created: list[str]
    teams_created: list[str]
    skipped: list[ImportSkipped]
    warnings: list[str]
    memory_ids: dict[str, str]
    quarantined: int
    held_summaries: int
    flagged: int
    trust: TrustEnum


ArchiveReasonEnum = Literal["manual", "stale", "superseded", "duplicate", "consolidated", "low_confidence", "code_deleted"]


BlankEnum = Literal[""]


TierEnum = Literal["hot", "warm", "cold", "archived"]


OriginEnum = Literal["recorded", "distilled", "consolidated", "extracted"]


PromotedFromEnum = Literal["working", "episodic", "semantic", "procedural"]


class Memory(TypedDict):
    """A whole memory (never its embedding)."""

    id: str
    title: str
    description: str
    content: str
    outcome: MemoryOutcomeEnum
    tags: list[str]
    kind: KindAa5Enum
    scope: MemoryScopeEnum
    project: NotRequired[str | None]
    team: NotRequired[str | None]
    state: StateB04Enum
    flags: list[Finding]
    archived_reason: ArchiveReasonEnum | BlankEnum
    consolidated_into: str | None
    tier: TierEnum
    retention: float
    importance: float
    confidence: float
    alpha: float
    beta: float
    usage_count: int
    last_used_at: str | None
    impression_count: int
    last_shown_at: str | None
    origin: OriginEnum
    source_session: str | None
    promoted_from: PromotedFromEnum | BlankEnum
    promoted_at: str | None
    promotion_reason: str
    last_signal_at: str | None
    created_at: str
    updated_at: str
    source: SourceOut
    anchors: list[AnchorOut]


class PaginatedMemoryList(TypedDict):
    count: int
    next: str | None
    previous: str | None
    results: list[Memory]


class Session(TypedDict):
    """A submitted agent session and what its distillation produced."""

    id: str
    session_id: str
    project: str
    outcome: str
    status: SessionStatusEnum
    rounds: int
    distilled_upto: int
    attempts: int
    error: str
    warnings: list[str]
    redactions: int
    memories: list[SessionMemory]
    held: list[HeldFinding]
    created_at: str
    updated_at: str
    finished_at: str | None
    next_attempt_at: str | None


class PaginatedSessionList(TypedDict):
    count: int
    next: str | None
    previous: str | None
    results: list[Session]


class Error(TypedDict):
    """Documentation only: the body of every 4xx answer."""

    detail: str
    code: str
    errors: dict[str, list[str]]


class MemoriesListQuery(TypedDict, total=False):
    """The query parameters of ``memories_list``."""

    kind: Literal["working", "episodic", "semantic", "procedural"]
    max_confidence: float
    min_confidence: float
    ordering: Literal[
        "-created_at", "created_at", "-confidence", "confidence", "-usage_count", "-last_used_at", "title"
    ]
    origin: Literal["recorded", "distilled", "consolidated", "extracted"]
    outcome: Literal["success", "failure", "mixed"]
    page: int
    page_size: int
    path: str
    project: str
    q: str
    scope: Literal["project", "team", "org", "all"]
    state: Literal["active", "archived", "any", "proposed"]
    symbol: str
    tag: list[str]
    tier: Literal["hot", "warm", "cold", "archived"]


class SessionsListQuery(TypedDict, total=False):
    """The query parameters of ``sessions_list``."""

    page: int
    page_size: int
    project: str
    status: Literal["queued", "running", "done", "failed", "waiting_for_llm", "waiting_for_budget", "held"]
