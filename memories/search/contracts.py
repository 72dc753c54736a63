"""The ``memory_search`` operation's contract (docs/search.md): one input model, one output model and
``memory_search_run``, shared by the MCP tool and ``POST /api/v1/memories/search``.

With ``inject`` the search is an injection (docs/search.md#searching-for-injection): only what the
organization's injection policy lets be injected automatically, and the framed block the hooks hand
their client, built here so that every client frames it the same way (``memories/trust/framing.py``)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Annotated, Literal

from django.conf import settings
from pydantic import AfterValidator, Field

from accounts.access import Principal
from memories.code.anchors import PATH_MAX
from memories.code.contracts import AnchorOut, Repository
from memories.code.paths import ANCHOR_PATH_BOOST, PATHS_MAX, path_selection, path_spec_clean
from memories.code.selectors import anchor_dicts_by_memory, project_slug_resolve
from memories.code.selectors_staleness import CodeChanged, code_changed_of
from memories.confidence.services_impressions import memories_mark_shown
from memories.context.contracts import SummaryOut
from memories.context.selectors import SummaryHit, summaries_search
from memories.context.services import summaries_activate
from memories.core.contracts import SEARCH_PROJECT_DESCRIPTION, SessionRef, optional_text, required_text, rounded
from memories.models import Memory
from memories.search.ranking import estimate_tokens
from memories.search.rewrite import QueryRewrite, SkipReason
from memories.search.selectors import SearchHit, SearchQuery, hit_tokens, within_budget
from memories.search.services import memory_search_use
from memories.sessions.selectors import session_seen_memory_ids
from memories.sessions.services_ledger import session_uses_record
from memories.trust.framing import (
    PROMPT_FIXED_TOKENS,
    PROMPT_NOTE_OVERHEAD_TOKENS,
    PromptBlock,
    PromptNote,
    prompt_block_format,
)
from memories.trust.provenance_contracts import SourceOut
from memories.trust.provenance_selectors import memory_sources
from memories.trust.selectors_injection import injection_labels, injection_policy_of
from memories.validation import QUERY_MAX, session_key_clean
from reasoningbank.contracts import Contract
from reasoningbank.db_replica import replica_read
from reasoningbank.errors import Rejected
from reasoningbank.metrics import search_observe
from reasoningbank.tracing import current_set, traced

TOKEN_BUDGET_MIN, TOKEN_BUDGET_MAX = 50, 20_000
# with inject, the budget covers the block's framing and leaves at least this much for the notes
INJECT_BUDGET_MIN = PROMPT_FIXED_TOKENS + PROMPT_NOTE_OVERHEAD_TOKENS + TOKEN_BUDGET_MIN


class SearchInput(Contract):
    query: Annotated[str, required_text(QUERY_MAX), Field(description="Natural language query")]
    scope: Annotated[Literal["project", "team", "org", "all"], Field(description="Scope to search within")] = "all"
    outcome: Annotated[Literal["success", "failure", "all"], Field(description="Filter by outcome type")] = "all"
    limit: Annotated[
        int, Field(description="Maximum results", ge=1, le=settings.SEARCH_MAX_LIMIT)
    ] = settings.SEARCH_DEFAULT_LIMIT
    min_confidence: Annotated[
        float, Field(description="Minimum confidence threshold", ge=0.0, le=1.0)
    ] = settings.SEARCH_MIN_CONFIDENCE
    project: Annotated[str | None, optional_text(200), Field(description=SEARCH_PROJECT_DESCRIPTION)] = None
    repository: Repository = None
    mode: Annotated[
        Literal["reflexive", "standard", "deep", "exhaustive"],
        Field(
            description=(
                "Which memories to search by tier: reflexive (hot only), standard (hot and warm), deep (also "
                "cold; where the service enables it, the configured LLM also splits the question into focused "
                "queries whose results are fused, see `query_rewrite`), exhaustive (every tier, archived "
                "memories included and marked with state)"
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
    exclude_seen: Annotated[
        bool,
        Field(
            description=(
                "Only memories new to the session `session_id` names (required then): a memory its ledger "
                "says it was already given (by a search or memory_context) is never returned again; the next "
                "best take its place"
            )
        ),
    ] = False
    token_budget: Annotated[
        int | None,
        Field(
            description=(
                "Return results, best first, only while their title, description and content fit in this many "
                "tokens together (four characters a token, as `tokens_used`); one too big for what is left is "
                "skipped and a smaller one after it may still fit"
            ),
            ge=TOKEN_BUDGET_MIN,
            le=TOKEN_BUDGET_MAX,
        ),
    ] = None
    min_similarity: Annotated[
        float | None,
        Field(
            description=(
                "Only memories whose embedding is at least this similar to the query's (cosine, 0 to 1), whatever "
                "their keyword match: the floor that keeps an automatic injection on topic"
            ),
            ge=0.0,
            le=1.0,
        ),
    ] = None

    paths: Annotated[
        list[Annotated[str, required_text(PATH_MAX), AfterValidator(path_spec_clean)]],
        Field(
            description=(
                "The code you work in: repository-relative files (`src/app.py`), or directories with a trailing "
                f"slash (`src/api/`, everything under it), at most {PATHS_MAX}. Memories anchored there are "
                f"searched too and rank {ANCHOR_PATH_BOOST:g}× higher (`path_boost` in explain); others still "
                "come after them unless `paths_only`"
            ),
            max_length=PATHS_MAX,
        ),
    ] = []
    paths_only: Annotated[
        bool,
        Field(description="Only memories anchored on one of `paths` (required then)"),
    ] = False

    inject: Annotated[
        bool,
        Field(
            description=(
                "Search for an automatic injection (the agent hooks' per-prompt recall): only memories the "
                "organization's injection policy lets be injected without a person's review, and "
                "`injection_block`, the results framed as data (a preamble, each memory in its own element "
                "with its source), as every hook injects them; with `token_budget`, the whole block, its "
                f"framing included, stays within it (then at least {INJECT_BUDGET_MIN}). What it returns is "
                "counted as shown, not used: it moves no confidence"
            )
        ),
    ] = False

    def to_query(self, *, injection: str = "") -> SearchQuery:
        paths = path_selection(self.paths)  # each already clean (path_spec_clean)
        budget = self.token_budget
        if injection and budget is not None:  # the notes' share: the block's own lines come first
            budget -= PROMPT_FIXED_TOKENS
        return SearchQuery(
            query=self.query, scope=self.scope, outcome=self.outcome, limit=self.limit,
            min_confidence=float(self.min_confidence), project=self.project or None, mode=self.mode,
            exclude_session=self.session_id if self.exclude_seen else "", token_budget=budget,
            min_similarity=self.min_similarity, injection=injection,
            entry_overhead=PROMPT_NOTE_OVERHEAD_TOKENS if injection else 0,
            paths=paths, paths_only=self.paths_only,
        )


class SearchExplanation(Contract):
    """Every factor of a result's score: relevance × confidence × recency_boost × scope_weight ×
    consolidated_boost × path_boost = score, and where the relevance comes from: each leg's score and rank among
    this query's candidates. `confidence` is the value the search ranked with (before this search
    counted as a use). REST called this object `score` before."""

    relevance: float = Field(
        description="0 to 1: the fusion of both legs (`fused`), adjusted for the query's time cues when it has any "
        "((fused + w × time_expression + w × time_period) / (1 + w × the query's cues), w = SEARCH_TIME_WEIGHT: "
        "`own_relevance`), then blended with the best neighbour's (`neighbour`, `neighbour_relevance`)"
    )
    fused: float = Field(description="the fusion of both legs, 0 to 1, before the time cues")
    time_expression: float = Field(description="1 when the query asks when and the memory states a time, else 0")
    time_period: float = Field(description="1 when the memory was recorded in a period the query names, else 0")
    similarity: float = Field(description="vector leg: cosine similarity to the query")
    vector_rank: int | None = Field(description="vector leg: rank among the candidates")
    lexical: float = Field(description="lexical leg: BM25 score (0: no query term in the memory)")
    lexical_rank: int | None = Field(description="lexical leg: rank among the candidates that hold a term")
    confidence: float
    recency_boost: float
    scope: str
    scope_weight: float
    consolidated_boost: float
    path_boost: float = Field(
        default=1.0,
        description=f"{ANCHOR_PATH_BOOST:g} when the memory is anchored on one of the search's `paths`, else 1",
    )
    score: float
    matched_by: list[str] = Field(
        description=(
            "vector, text, path and/or neighbour: the legs that fetched it (path: anchored on the search's "
            "`paths`), or a better hit it was recorded next to"
        )
    )
    own_relevance: float = Field(description="this memory's relevance before the neighbour stage, 0 to 1")
    neighbour: str | None = Field(
        description="the best-matching memory recorded next to this one in its place (the neighbour stage), if any"
    )
    neighbour_relevance: float = Field(
        description=(
            "that neighbour's own relevance (0: none, or the stage is off); relevance = own_relevance + 0.5 × "
            "this, divided by the query's best such sum"
        )
    )
    query: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "deep search with a rewritten question only: the query (the question or one of the LLM's) whose legs "
            "scored this hit; every figure above is that query's but `relevance` (and so `score`), the fusion over "
            "the queries"
        ),
    )
    found_by: list[str] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,
        description="deep search with a rewritten question only: every query that found this hit, `query` first",
    )
    code_changed_factor: float = Field(
        default=1.0,
        description="SEARCH_CODE_CHANGED_FACTOR when an anchor's code changed since the memory was written (see "
        "`code_changed`), else 1: the score's last factor",
    )

    @classmethod
    def of(cls, hit: SearchHit, found_by: tuple[str, ...] = ()) -> SearchExplanation:
        b = hit.breakdown
        return cls(
            relevance=rounded(b.relevance), fused=rounded(b.relevance if b.fused is None else b.fused),
            time_expression=b.time_expression, time_period=b.time_period,
            similarity=rounded(b.similarity), vector_rank=b.vector_rank,
            lexical=rounded(b.lexical), lexical_rank=b.lexical_rank, confidence=rounded(b.confidence),
            recency_boost=rounded(b.recency_boost), scope=b.scope, scope_weight=rounded(b.scope_weight),
            consolidated_boost=rounded(b.consolidated_boost), path_boost=rounded(b.path_boost), score=rounded(b.score),
            matched_by=list(hit.matched_by),
            query=found_by[0] if found_by else None, found_by=list(found_by),
            own_relevance=rounded(b.relevance if b.own_relevance is None else b.own_relevance), neighbour=b.neighbour,
            neighbour_relevance=rounded(b.neighbour_relevance), code_changed_factor=rounded(b.code_changed_factor),
        )


class CodeChangedOut(Contract):
    """The flag of a memory whose anchored code changed (docs/code-memory.md#staleness)."""

    commit: str = Field(description="the commit that changed it (the oldest, when several did)")
    path: str = Field(description="the anchored file")
    symbol: str = Field(description="the anchored function or class, empty for lines or a whole file")
    changed_at: datetime | None = Field(description="that commit's committer date")

    @classmethod
    def of(cls, flag: CodeChanged) -> CodeChangedOut:
        return cls(commit=flag.commit, path=flag.path, symbol=flag.symbol, changed_at=flag.changed_at)


class SearchHitOut(Contract):
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
    code_changed: CodeChangedOut | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="only when the code an anchor of this memory is about changed since it was written: verify "
        "it before relying on it (it ranks lower until a session that works in that code succeeds with it)",
    )
    explain: SearchExplanation | None = Field(default=None, exclude_if=lambda value: value is None)
    source: SourceOut = Field(description="who wrote it, how, through which client, when; and whether it is trusted")
    anchors: list[AnchorOut] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,
        description="where in the code it is about (docs/code-memory.md#anchors); absent when nowhere in particular",
    )


class SummaryHitOut(SummaryOut):
    relevance: float = Field(description="cosine similarity of the summary to the query")


class QueryRewriteOut(Contract):
    """What a deep search made of its question (docs/search.md#deep-search-rewriting-the-question):
    rewritten by the configured LLM into focused queries, each searched and the results fused; or
    skipped, and why — the question was then searched as asked."""

    status: Literal["rewritten", "skipped"]
    queries: list[str] = Field(description="every query searched: the question first, then the LLM's")
    cached: bool = Field(description="the LLM's queries came from this organization's cache: no LLM call this time")
    reason: SkipReason | None = Field(
        description=(
            "why it was skipped: off (SEARCH_DEEP_REWRITE is off), no_llm (none configured), over_budget (the "
            "organization's monthly LLM tokens are spent), llm_unavailable (no answer in time), llm_error (the "
            "provider refused), reply_unreadable (no list of queries in the reply); null when rewritten"
        )
    )
    detail: str | None = Field(description="the reason in a sentence; null when rewritten")

    @classmethod
    def of(cls, question: str, rewrite: QueryRewrite) -> QueryRewriteOut:
        return cls(
            status=rewrite.status,  # type: ignore[arg-type]
            queries=[question, *rewrite.queries], cached=rewrite.cached,
            reason=rewrite.reason, detail=rewrite.detail,  # type: ignore[arg-type]
        )


class SearchOutput(Contract):
    memories: list[SearchHitOut]
    total_found: int
    tokens_used: int
    summaries: list[SummaryHitOut] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,
        description="with include_summaries: the closest consolidated summaries (at most limit / 2); absent when none",
    )
    query_rewrite: QueryRewriteOut | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="mode deep only: whether the configured LLM rewrote the question into focused queries, or why not",
    )
    injection_block: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description=(
            "with inject only: the `<reasoningbank_memories>` block to put in the agent's context as it is — "
            "the results framed as reference material, each in a `<memory>` element with its source label; "
            "empty when nothing qualifies"
        ),
    )


def summary_tokens(hit: SummaryHit) -> int:
    summary = hit.summary
    facts = [*summary.key_facts, *(d.get("decision", "") for d in summary.decisions)]
    return estimate_tokens("\n".join([summary.summary, *map(str, facts)]))


@traced("memory.search")
def memory_search_run(principal: Principal, args: SearchInput) -> SearchOutput:
    session_key_clean(args.session_id)  # before any work: a session id holding a secret is refused
    if args.inject and args.token_budget is not None and args.token_budget < INJECT_BUDGET_MIN:
        raise Rejected(
            f"with inject, token_budget covers the block's framing too: give at least {INJECT_BUDGET_MIN}",
            field="token_budget",
            code="rejected_budget_too_small",
        )
    if args.paths_only and not args.paths:
        raise Rejected(
            "paths_only keeps the memories anchored on paths: name the files or directories in paths",
            field="paths_only",
            code="rejected_needs_paths",
        )
    if args.exclude_seen and not args.session_id:
        # a rule between two fields the schema cannot state: the body had the right shape, so a 422
        raise Rejected(
            "exclude_seen needs the session_id whose memories to leave out",
            field="exclude_seen",
            code="rejected_needs_session",
        )
    if args.repository:  # the project tied to the agent's repository, unless one is named
        args = args.model_copy(update={"project": project_slug_resolve(principal, args.project, args.repository)})
    started = time.perf_counter()
    current_set(  # the span's attributes (docs/observability.md#traces): the query's length, never its text
        query_length=len(args.query), mode=args.mode, limit=args.limit, scope=args.scope, outcome=args.outcome,
        include_summaries=args.include_summaries, org_id=principal.organization.id,
    )
    injection = injection_policy_of(principal.organization) if args.inject else ""
    result = memory_search_use(principal=principal, search=args.to_query(injection=injection))
    current_set(project_id=result.project.id if result.project else None, result_count=len(result.hits),
                total_found=result.total_found, tokens_used=result.tokens_used)
    summaries = (
        replica_read(  # like the memories, from the read replica when there is one
            summaries_search,
            principal, query_vector=result.query_vector, project=result.project, scope=args.scope,
            limit=args.limit // 2, min_similarity=max(settings.SEARCH_MIN_SIMILARITY, args.min_similarity or 0.0),
            min_confidence=float(args.min_confidence), injection=args.inject,
        )
        if args.include_summaries
        else []
    )
    if summaries and args.exclude_seen:  # a summary stands for its consolidated memory, in the ledger too
        seen = session_seen_memory_ids(principal, args.session_id, [hit.summary.memory_id for hit in summaries])
        summaries = [hit for hit in summaries if hit.summary.memory_id not in seen]
    if summaries and args.token_budget is not None:  # what the memories left of the budget
        summaries = _summaries_within(summaries, args, result.tokens_used, len(result.hits))
    # the memories whose anchored code changed since they were written (docs/code-memory.md#staleness): the
    # ranking read it for the hits; the summaries' memories are read here
    changed = {hit.memory.id: hit.code_changed for hit in result.hits if hit.code_changed is not None}
    unread = [hit.summary.memory_id for hit in summaries if hit.summary.memory_id not in changed]
    if unread:
        changed.update(replica_read(code_changed_of, principal.organization.id, unread))
    block = None
    if args.inject:  # only what the block holds is returned, noted in the ledger and activated
        block = _injection_block(principal, result.hits, summaries, args.token_budget, changed)
        result.hits = [hit for hit in result.hits if hit.memory.id in block.ids]
        shown = {hit.memory.id for hit in result.hits}
        summaries = [hit for hit in summaries if hit.summary.memory_id in set(block.ids) - shown]
        result.tokens_used = sum(hit_tokens(hit) for hit in result.hits)
        # shown without being asked for: impressions, no confidence moved (docs/confidence.md#impressions-and-use)
        memories_mark_shown(
            organization_id=principal.organization.id,
            memory_ids=[hit.memory.id for hit in result.hits] + [hit.summary.memory_id for hit in summaries],
        )
    summaries_activate([hit.summary.id for hit in summaries], write_behind=True)
    if args.session_id:
        session_uses_record(
            principal=principal, session_key=args.session_id, via="search",
            memory_ids=[hit.memory.id for hit in result.hits if hit.memory.state == Memory.STATE_ACTIVE]
            + [hit.summary.memory_id for hit in summaries],
        )
    sources = replica_read(memory_sources, [hit.memory for hit in result.hits])  # one query for every hit
    anchors = replica_read(anchor_dicts_by_memory, [hit.memory for hit in result.hits])  # and one for their anchors
    hits = [
        SearchHitOut(
            id=hit.memory.id, title=hit.memory.title, description=hit.memory.description,
            content=hit.memory.content, outcome=hit.memory.outcome, confidence=rounded(hit.memory.confidence),
            usage_count=hit.memory.usage_count, relevance=rounded(hit.breakdown.score), scope=hit.memory.scope,
            state=hit.memory.state,  # type: ignore[arg-type]
            duplicates=list(hit.duplicates),
            code_changed=CodeChangedOut.of(changed[hit.memory.id]) if hit.memory.id in changed else None,
            explain=SearchExplanation.of(hit, result.found_by.get(hit.memory.id, ())) if args.explain else None,
            source=SourceOut.of(sources[hit.memory.id]),
            anchors=[AnchorOut(**anchor) for anchor in anchors[hit.memory.id]],
        )
        for hit in result.hits
    ]
    search_observe(mode=args.mode, seconds=time.perf_counter() - started, found=bool(hits))
    return SearchOutput(
        memories=hits, total_found=result.total_found, tokens_used=result.tokens_used,
        summaries=[SummaryHitOut(**SummaryOut.of(h.summary).model_dump(), relevance=h.similarity) for h in summaries],
        query_rewrite=QueryRewriteOut.of(args.query, result.rewrite) if result.rewrite else None,
        injection_block=block.text if block is not None else None,
    )


def _summaries_within(summaries: list[SummaryHit], args: SearchInput, used: int, hits: int) -> list[SummaryHit]:
    """The summaries that fit in what the memories left of the budget (with inject, each note's framing
    and the block's own lines counted too)."""
    assert args.token_budget is not None
    if not args.inject:
        return within_budget(summaries, args.token_budget - used, cost=summary_tokens)
    left = args.token_budget - PROMPT_FIXED_TOKENS - used - hits * PROMPT_NOTE_OVERHEAD_TOKENS
    return within_budget(summaries, left, cost=lambda hit: summary_tokens(hit) + PROMPT_NOTE_OVERHEAD_TOKENS)


def _injection_block(
    principal: Principal,
    hits: list[SearchHit],
    summaries: list[SummaryHit],
    token_budget: int | None,
    changed: dict[str, CodeChanged],
) -> PromptBlock:
    """The framed block of an injection: the memories, then the summaries of memories not among them,
    each with its source label, within the budget (the search chose within it, so nothing is expected to
    be left out here; the block is measured again all the same)."""
    shown = {hit.memory.id for hit in hits}
    summaries = [hit for hit in summaries if hit.summary.memory_id not in shown]
    labels = injection_labels(principal, [*shown, *(hit.summary.memory_id for hit in summaries)])
    notes = [
        PromptNote(
            id=hit.memory.id, title=hit.memory.title, confidence=hit.memory.confidence,
            text=f"{hit.memory.description.strip()}\n{hit.memory.content.strip()}",
            label=labels.get(hit.memory.id, ""),
            code_changed=changed[hit.memory.id].commit if hit.memory.id in changed else "",
        )
        for hit in hits
    ] + [
        PromptNote(
            id=hit.summary.memory_id, title=getattr(hit.summary, "memory_title", "") or "Consolidated summary",
            confidence=float(getattr(hit.summary, "memory_confidence", 0.0) or 0.0),
            text="\n".join([hit.summary.summary.strip(), *(f"- {fact}" for fact in hit.summary.key_facts)]),
            label=labels.get(hit.summary.memory_id, ""),
            code_changed=changed[hit.summary.memory_id].commit if hit.summary.memory_id in changed else "",
        )
        for hit in summaries
    ]
    return prompt_block_format(notes, token_budget=token_budget if token_budget is not None else TOKEN_BUDGET_MAX * 10)
