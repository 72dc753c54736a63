"""The core memory operations' contracts (docs/agent-api.md): record and get — each one input model
(validation and defaults), one output model, and one ``*_run`` function (principal + input → output) —
and the field types every memories contract shares (the features' contracts: ``memories/<feature>/
contracts.py``). The MCP tools (``memories/mcp_tools.py``) and the REST views (``memories/<feature>/
api.py``) only parse, call ``*_run`` and render, so both answer the same body for the same input
(``tests/test_contract_parity.py``).

Names are the MCP tools' published ones; where REST spelled something else first, the old spelling is noted.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from accounts.access import Principal
from memories.code.contracts import AnchorOut, Anchors, anchors_raw
from memories.code.selectors import anchor_dicts_by_memory
from memories.confidence.services import memories_mark_used
from memories.core.selectors import memory_get
from memories.core.services import memory_record_or_duplicate
from memories.models import Memory, SessionMemoryUse
from memories.sessions.services_ledger import session_uses_record
from memories.trust.provenance_contracts import SourceOut
from memories.trust.provenance_selectors import memory_source
from memories.trust.screening import findings_shown, quarantine_message
from memories.validation import CONTENT_MAX, DESCRIPTION_MAX, TAG_MAX, TAGS_MAX, TITLE_MAX, session_key_clean
from reasoningbank.contracts import NOT_BLANK, NUL_FREE, Contract

# --- shared field types ----------------------------------------------------------------------------

def required_text(maximum: int) -> object:
    """A required text: trimmed, not blank, no NUL, at most ``maximum`` characters."""
    return StringConstraints(strip_whitespace=True, min_length=1, max_length=maximum, pattern=NOT_BLANK)


def id_text() -> object:
    """An id: not blank, no NUL; any length (an unknown id is a 404, however long)."""
    return StringConstraints(strip_whitespace=True, min_length=1, pattern=NOT_BLANK)


def optional_text(maximum: int) -> object:
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
Project = Annotated[str | None, optional_text(200), Field(description=PROJECT_DESCRIPTION)]
MemoryId = Annotated[str, id_text(), Field(description="ID of the memory")]
# search and memory_context: the memories they return are noted as given to this session (the injection ledger)
SessionRef = Annotated[
    str,
    optional_text(200),
    Field(
        description=(
            "Your session's id: the memories returned are noted as given to that session, and its outcome "
            "(memory_outcome or session_submit with the same id) then reaches each of them"
        )
    ),
]
Outcome = Literal["success", "failure", "mixed"]
Kind = Literal["procedural", "semantic", "episodic", "working"]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, max_length=TAG_MAX, pattern=NUL_FREE)]


def rounded(value: float) -> float:
    """Agent-facing scores: four decimals are enough and cost fewer tokens."""
    return round(float(value), 4)


def iso_or_none(value: object) -> str | None:
    return value.isoformat() if value is not None else None  # type: ignore[attr-defined]


# --- what the instruction-smell detector found (docs/security/memory-poisoning.md#quarantine) ------


class Finding(Contract):
    """One finding of the instruction-smell detector: the rule that fired, why, and what it read."""

    rule: str = Field(description="the detector's rule, e.g. `override_instructions`, `remote_script`")
    reason: str = Field(description="why the rule holds such text for review, in one sentence")
    field: str = Field(description="the field the text is in (`title`, `description`, `content`, `tags`)")
    excerpt: str = Field(description="the text that fired the rule (invisible characters shown as escapes)")


def findings_out(flags: list[dict[str, object]]) -> list[Finding]:
    return [Finding(**shown) for shown in findings_shown(flags)]


class QuarantineNote(Contract):
    """Why a memory was held for review, and what happens next."""

    rules: list[Finding] = Field(description="what the detector found")
    message: str = Field(
        description="what happens next: an admin reviews it in the review queue; until then it is not searched "
        "or injected"
    )

    @classmethod
    def of(cls, memory: Memory) -> QuarantineNote:
        return cls(rules=findings_out(memory.flags), message=quarantine_message(memory.flags))


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
    state: Literal["active", "archived", "proposed", "quarantined"] = Field(
        description="proposed: a promotion proposal awaiting review in the review queue (never searched); "
        "quarantined: held for an admin's review because the instruction-smell detector flagged it (never "
        "searched or injected)"
    )
    flags: list[Finding] = Field(
        description="what the instruction-smell detector found in it when it was written (empty when nothing)"
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
    impression_count: int = Field(
        description="times put in an agent's context unasked (hooks, session start): moves no confidence"
    )
    last_shown_at: str | None
    origin: str
    source_session: str | None
    promoted_from: str = Field(description="the kind consolidation's promotion ladder raised it from; empty if never")
    promoted_at: str | None
    promotion_reason: str = Field(description="which ladder criterion, with its figures")
    last_signal_at: str | None = Field(description="the last feedback, outcome or usage")
    created_at: str
    updated_at: str
    source: SourceOut = Field(description="who wrote it, how, through which client, when; and whether it is trusted")
    anchors: list[AnchorOut] = Field(description="where in the code it is about (docs/code-memory.md#anchors)")

    @classmethod
    def of(
        cls, memory: Memory, source: dict[str, Any] | None = None, anchors: list[dict[str, Any]] | None = None
    ) -> MemoryOut:
        """``source`` and ``anchors``: the memory's compact provenance and anchors when the caller read them
        with others (one query each for a page of memories); read here otherwise."""
        return cls(
            id=memory.id, title=memory.title, description=memory.description, content=memory.content,
            outcome=memory.outcome, tags=list(memory.tags), kind=memory.kind, scope=memory.scope,  # type: ignore[arg-type]
            project=memory.project.slug if memory.project is not None else None,
            team=memory.team.slug if memory.team is not None else None,
            state=memory.state, flags=findings_out(memory.flags),  # type: ignore[arg-type]
            archived_reason=memory.archived_reason,
            consolidated_into=memory.consolidated_into_id, tier=memory.tier, retention=memory.retention,
            importance=memory.importance, confidence=memory.confidence, alpha=memory.alpha, beta=memory.beta,
            usage_count=memory.usage_count, last_used_at=iso_or_none(memory.last_used_at), origin=memory.origin,
            impression_count=memory.impression_count, last_shown_at=iso_or_none(memory.last_shown_at),
            source_session=memory.source_session_id, promoted_from=memory.promoted_from,
            promoted_at=iso_or_none(memory.promoted_at), promotion_reason=memory.promotion_reason,
            last_signal_at=iso_or_none(memory.last_signal_at), created_at=memory.created_at.isoformat(),
            updated_at=memory.updated_at.isoformat(),
            source=SourceOut.of(source if source is not None else memory_source(memory)),
            anchors=[AnchorOut(**a) for a in (anchors_read(memory) if anchors is None else anchors)],
        )


def anchors_read(memory: Memory) -> list[dict[str, Any]]:
    """One memory's anchors, as results carry them."""
    return anchor_dicts_by_memory([memory])[memory.id]


GET_SESSION_DESCRIPTION = (
    "Your session's id, when you read the memory to use it in your task: the read counts as a use (a usage "
    "signal, which moves its confidence) and the memory is noted as given to that session, so its outcome "
    "reaches it. Without it the read changes nothing."
)


class MemoryGetInput(Contract):
    memory_id: MemoryId
    session_id: Annotated[str, optional_text(200), Field(description=GET_SESSION_DESCRIPTION)] = ""


def memory_get_run(principal: Principal, args: MemoryGetInput) -> MemoryOut:
    """One memory; read by an agent session for its task (``session_id``), a use of it
    (docs/confidence.md#impressions-and-use). A plain read stays a read: looking at a memory must not move it."""
    session_key = session_key_clean(args.session_id)  # before any work: a session id holding a secret is refused
    memory = memory_get(principal, args.memory_id)
    if session_key and memory.state == Memory.STATE_ACTIVE:
        memories_mark_used(principal=principal, memories=[memory], project=None, write_behind=True)
        session_uses_record(
            principal=principal, session_key=session_key, memory_ids=[memory.id], via=SessionMemoryUse.VIA_GET
        )
    return MemoryOut.of(memory)


# --- memory_record -----------------------------------------------------------------------------------


class RecordInput(Contract):
    title: Annotated[str, required_text(TITLE_MAX), Field(description="Short, descriptive title")]
    description: Annotated[str, required_text(DESCRIPTION_MAX), Field(description="When/why to apply this strategy")]
    content: Annotated[str, required_text(CONTENT_MAX), Field(description="Detailed steps or approach")]
    outcome: Annotated[
        Outcome,
        Field(description="Whether this is a pattern to follow (success) or avoid (failure), or mixed"),
    ]
    tags: Annotated[
        list[Tag], Field(description="Categorization tags", max_length=TAGS_MAX, default_factory=list)
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
    anchors: Anchors


class RecordOutput(Contract):
    id: str
    status: Literal["recorded", "flagged", "quarantined", "duplicate"] = Field(
        description=(
            "`recorded`; `quarantined`: stored, but held for an admin's review because the instruction-smell "
            "detector found text addressed to the AI that would read it (`quarantine` says what and what "
            "happens next); `flagged`: stored active with the detector's `flags` (the organization flags "
            "instead of quarantining); `duplicate`: nothing was recorded (`duplicate_of`)"
        )
    )
    message: str
    initial_confidence: float
    memory: MemoryOut
    quarantine: QuarantineNote | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Only when `status` is `quarantined`: the rules that fired and what happens next",
    )
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
    result = memory_record_or_duplicate(
        principal=principal, **args.model_dump(exclude={"anchors"}), anchors=anchors_raw(args.anchors)
    )
    memory = result.memory
    output = RecordOutput(
        id=memory.id, status=result.status, message=result.message,  # type: ignore[arg-type]
        initial_confidence=rounded(memory.confidence),
        memory=MemoryOut.of(memory),
        quarantine=QuarantineNote.of(memory) if result.status == "quarantined" else None,
        duplicate_of=memory.id if result.duplicate else None,
        duplicate_reason=result.reason if result.duplicate else None,  # type: ignore[arg-type]
        similarity=rounded(result.similarity) if result.similarity is not None else None,
    )
    return output, not result.duplicate


