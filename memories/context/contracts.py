"""The ``memory_context`` operation's contract (docs/session-context.md#memory_context): an agent's
session starts with a ``<memory_consolidated_summaries>`` block of the project's best knowledge,
replacing any earlier block in the context it passes (idempotent). One input model, one output model and
``memory_context_run``, shared by the MCP tool (``memories/mcp_tools.py``), ``POST
/api/v1/memories/context`` (``memories/context/api.py``) and the Claude Code plugin's SessionStart
hook (docs/claude-code.md).

Entries are the project's consolidated summaries (``MemorySummary``, written by consolidation's
summarize phase), then — in the places they leave, and alone until the project's first consolidation —
its highest-confidence procedural memories: only those the organization's injection policy lets be
injected, each framed as a note with its source (docs/security/memory-poisoning.md#framing)."""

from __future__ import annotations

from typing import Annotated, Literal

from django.conf import settings
from django.utils import timezone
from pydantic import Field, StringConstraints

from accounts.access import Principal
from accounts.models import Project as ProjectModel
from memories.code.contracts import Repository
from memories.code.selectors import project_slug_resolve
from memories.code.selectors_staleness import code_changed_of
from memories.confidence.services_impressions import memories_mark_shown
from memories.context.block import ContextEntry, Decision, block_format, context_inject
from memories.context.selectors import context_memories, summaries_for_context
from memories.context.services import summaries_activate
from memories.core.contracts import Project, SessionRef, rounded
from memories.core.selectors import project_target
from memories.embedding import query_embed
from memories.models import Memory, MemorySummary
from memories.sessions.services_ledger import session_uses_record
from memories.trust.provenance_contracts import SourceOut
from memories.trust.provenance_selectors import memory_sources_of
from memories.trust.selectors_injection import injection_labels
from memories.validation import QUERY_MAX, session_key_clean
from reasoningbank.contracts import NUL_FREE, Contract
from reasoningbank.db_replica import replica_read
from reasoningbank.metrics import injection_observe
from reasoningbank.tracing import current_set, traced

CONTEXT_MAX = 400_000  # characters of existing context accepted (a long session's preamble)


# --- consolidated summaries, as search and GET /api/v1/summaries answer them -------------------------


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
            # a search row carries the slug and the live confidence itself (memories/context/selectors.py)
            project=getattr(summary, "project_slug", None) or summary.project.slug,
            summary=summary.summary, key_facts=list(summary.key_facts),
            decisions=[SummaryDecisionOut(**d) for d in summary.decisions],
            superseded_facts=[SupersededFactOut(**f) for f in summary.superseded_facts],
            confidence=rounded(getattr(summary, "memory_confidence", None) or summary.memory.confidence),
            temporal_range=(summary.temporal_start.isoformat(), summary.temporal_end.isoformat()),
            created_at=summary.created_at.isoformat(), consolidation_run_id=summary.consolidation_run_id,
            activation_count=summary.activation_count, status=summary.status,  # type: ignore[arg-type]
            error=summary.error,
        )


# --- memory_context ----------------------------------------------------------------------------------


class ContextInput(Contract):
    project: Project = None
    repository: Repository = None
    context: Annotated[
        str,
        StringConstraints(max_length=CONTEXT_MAX, pattern=NUL_FREE),
        Field(description="The session's existing context; an earlier block in it is replaced, not repeated"),
    ] = ""
    task: Annotated[
        str,
        StringConstraints(strip_whitespace=True, max_length=QUERY_MAX, pattern=NUL_FREE),
        Field(description="What the session is about to do: with prioritize=relevance, memories for it come first"),
    ] = ""
    max: Annotated[int, Field(description="At most this many entries", ge=1, le=50)] = (
        settings.HOOK_SESSION_START_SUMMARIES_MAX
    )
    min_confidence: Annotated[
        float,
        Field(
            description=(
                "Only entries at least this trusted. Never below the injection floor ("
                f"CONFIDENCE_MIN_FOR_INJECTION, here {settings.CONFIDENCE_MIN_FOR_INJECTION:g}): a lower value is "
                "raised to it"
            ),
            ge=0.0,
            le=1.0,
        ),
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
    source: Literal["summaries", "procedural_memories", "mixed"] = Field(
        description=(
            "what the entries are: consolidated summaries, procedural memories (a project without summaries "
            "yet), or summaries followed by procedural memories filling the remaining places"
        )
    )
    memory_ids: list[str] = Field(
        description="the memories behind the entries, in order (for a summary, its consolidated memory)"
    )
    summary_ids: list[str] = Field(description="the summaries among the entries, in order")
    memory_sources: list[SourceOut] = Field(
        description="the source of each memory of memory_ids, in the same order: who wrote it, how, when, its trust"
    )
    min_confidence: float = Field(
        description="the confidence floor applied: the asked min_confidence, raised to the injection floor"
    )
    project: str


@traced(
    "session.inject_summaries",  # lengths only, never the context or the task (docs/observability.md#traces)
    result=lambda out: {
        "existing_replaced": out.replaced_existing, "summaries_count": len(out.summary_ids),
        "entries_count": out.summaries_injected, "tokens_used": out.tokens_used, "source": out.source,
    },
)
def memory_context_run(principal: Principal, args: ContextInput) -> ContextOutput:
    session_key_clean(args.session_id)  # before any work: a session id holding a secret is refused
    project = project_target(principal, project_slug_resolve(principal, args.project, args.repository))
    current_set(
        org_id=principal.organization.id, project_id=project.id, context_length=len(args.context),
        task_length=len(args.task), max=args.max, token_budget=args.token_budget, prioritize=args.prioritize,
    )
    # the injection floor: nothing less trusted ever enters a session's context, whatever was asked
    # (docs/confidence.md#floors)
    min_confidence = max(args.min_confidence, settings.CONFIDENCE_MIN_FOR_INJECTION)
    # the reads, from the read replica when there is one (docs/operations.md#a-read-replica); the writes
    # below (activations, the session's ledger) go to the primary
    summaries, memories, labels = replica_read(_context_candidates, principal, args, project, min_confidence)
    # what each note says of code that changed since it was written (docs/code-memory.md#staleness)
    changed = replica_read(
        code_changed_of, principal.organization.id, [*(s.memory_id for s in summaries), *(m.id for m in memories)]
    )
    entries = [
        _summary_entry(s, labels.get(s.memory_id, ""), changed[s.memory_id].commit if s.memory_id in changed else "")
        for s in summaries
    ] + [
        ContextEntry(
            id=m.id,
            title=m.title,
            body=f"{m.description.strip()}\n\n{m.content.strip()}",
            start=m.created_at,
            end=m.updated_at,
            label=labels.get(m.id, ""),
            code_changed=changed[m.id].commit if m.id in changed else "",
        )
        for m in memories
    ]
    block = block_format(entries, token_budget=args.token_budget, generated_at=timezone.now())
    behind = {s.id: s.memory_id for s in summaries}  # an entry's id → the memory it stands for
    memory_ids = [behind.get(entry, entry) for entry in block.entries]
    summary_ids = [entry for entry in block.entries if entry in behind]
    summaries_activate(summary_ids)
    sources = memory_sources_of(principal.organization.pk, memory_ids)
    # put in the agent's context unasked: impressions, no confidence moved (docs/confidence.md#impressions-and-use)
    memories_mark_shown(organization_id=principal.organization.pk, memory_ids=memory_ids)
    if args.session_id:
        session_uses_record(
            principal=principal, session_key=args.session_id, memory_ids=memory_ids, via="context"
        )
    context, replaced = context_inject(args.context, block)
    kinds = {entry in behind for entry in block.entries}
    source = "mixed" if len(kinds) == 2 else "summaries" if kinds == {True} else "procedural_memories"
    injection_observe(
        source=source if block.entries else "none", summaries=len(summary_ids),
        memories=len(memory_ids) - len(summary_ids), tokens=block.tokens, replaced=replaced,
    )
    return ContextOutput(
        context=context,
        context_block=block.text,
        summaries_injected=len(block.entries),
        tokens_used=block.tokens,
        replaced_existing=replaced,
        source=source,  # type: ignore[arg-type]
        memory_ids=memory_ids,
        summary_ids=summary_ids,
        memory_sources=[SourceOut.of(sources[memory_id]) for memory_id in memory_ids if memory_id in sources],
        min_confidence=min_confidence,
        project=project.slug,
    )


def _context_candidates(
    principal: Principal, args: ContextInput, project: ProjectModel, min_confidence: float
) -> tuple[list[MemorySummary], list[Memory], dict[str, str]]:
    """The summaries and procedural memories a session-start context may hold, best first (those the
    org's injection policy lets be injected: the selectors apply it), and the source label of each
    memory behind them."""
    summaries: list[MemorySummary] = []
    memories: list[Memory] = []
    if settings.HOOK_SESSION_START_SUMMARIES_ENABLED:
        vector = query_embed(args.task) if args.task and args.prioritize == "relevance" else None
        choice = {"limit": args.max, "min_confidence": min_confidence, "prioritize": args.prioritize}
        summaries = summaries_for_context(principal, project, task_vector=vector, **choice)  # type: ignore[arg-type]
        if len(summaries) < args.max:
            # the project's best procedural memories fill the places summaries leave (all of them
            # until its first consolidation); a summarised memory is not shown twice
            shown = {s.memory_id for s in summaries}
            memories = [
                m
                for m in context_memories(principal, project, task=args.task, task_vector=vector, **choice)  # type: ignore[arg-type]
                if m.id not in shown
            ][: args.max - len(summaries)]
    labels = injection_labels(principal, [s.memory_id for s in summaries] + [m.id for m in memories])
    return summaries, memories, labels


def _summary_entry(summary: MemorySummary, label: str, code_changed: str = "") -> ContextEntry:
    return ContextEntry(
        label=label,
        code_changed=code_changed,
        id=summary.id,
        title=summary.memory.title,
        body=summary.summary,
        start=summary.temporal_start,
        end=summary.temporal_end,
        key_facts=tuple(summary.key_facts),
        decisions=tuple(Decision(d.get("decision", ""), d.get("rationale", "")) for d in summary.decisions),
        superseded=tuple((f.get("original_fact", ""), f.get("superseded_by", "")) for f in summary.superseded_facts),
    )
