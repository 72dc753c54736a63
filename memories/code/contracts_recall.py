"""The ``memory_recall`` operation's contract (docs/code-memory.md#recall-at-the-moment-of-action): the
memories anchored to a file an agent is about to read or change, or to the error a command it ran just
failed with, framed for injection. One input model, one output model and ``memory_recall_run``, shared
by the MCP tool (``memories/mcp_tools.py``), ``POST /api/v1/memories/recall``
(``memories/code/api_recall.py``) and the agent hooks (PreToolUse, PostToolUse).

It is an automatic injection like the hooks' per-prompt recall (``memory_search`` with ``inject``), held
to the same rules by the same functions: only what the organization's injection policy lets be injected,
the ``<reasoningbank_memories>`` block framed as data with each note's source
(``memories/trust/framing.py``), within ``token_budget`` (framing included), and the session's injection
ledger: what it was given before — by a search, ``memory_context`` or an earlier recall — never comes
back, and what it is given now is noted."""

from __future__ import annotations

from typing import Annotated

from django.conf import settings
from pydantic import Field

from accounts.access import Principal
from memories.code.anchors import PATH_MAX, path_normalise, repository_normalise
from memories.code.selectors_recall import RecallAnchor, RecallHit, RecallQuery, code_recall_select, recall_project
from memories.code.signatures import OUTPUT_TAIL, ErrorSignature, error_signature
from memories.confidence.services_impressions import memories_mark_shown
from memories.core.contracts import SEARCH_PROJECT_DESCRIPTION, SessionRef, optional_text, rounded
from memories.core.selectors import project_resolve
from memories.models import SessionMemoryUse
from memories.search.contracts import INJECT_BUDGET_MIN, TOKEN_BUDGET_MAX
from memories.sessions.services_ledger import session_uses_record
from memories.trust.framing import PromptBlock, PromptNote, prompt_block_format
from memories.trust.provenance_contracts import SourceOut
from memories.trust.provenance_selectors import memory_sources_annotated
from memories.validation import session_key_clean
from reasoningbank.contracts import Contract
from reasoningbank.errors import Rejected
from reasoningbank.tracing import current_set, traced

REPOSITORY_INPUT_MAX = 500  # a remote as git prints it (scheme, user, port, .git): normalised to ≤ 300
RECALL_DEFAULT_LIMIT = 3


class RecallInput(Contract):
    session_id: SessionRef = ""
    repository: Annotated[
        str,
        optional_text(REPOSITORY_INPUT_MAX),
        Field(
            description=(
                "The working tree's git remote, in any spelling (git@github.com:acme/api.git, "
                "https://github.com/acme/api): the service normalises it (github.com/acme/api) and looks in "
                "that repository's anchors. Also picks the project tied to it when `project` is left out"
            )
        ),
    ] = ""
    path: Annotated[
        str,
        optional_text(PATH_MAX * 2),
        Field(
            description=(
                "The file about to be read, edited or written: relative to the working tree's top, or absolute "
                "with `root`. Its memories come first, then those of its directory (the module)"
            )
        ),
    ] = ""
    root: Annotated[
        str,
        optional_text(PATH_MAX),
        Field(description="The working tree's top (absolute): what an absolute `path` is made relative to"),
    ] = ""
    error: Annotated[
        str,
        optional_text(OUTPUT_TAIL),
        Field(
            description=(
                f"A failing command's output (its last {OUTPUT_TAIL} characters are enough): the service reads "
                "the last error in it (exception type, message and innermost frames, with what varies between "
                "two runs left out) and returns the memories anchored to the same error signature"
            )
        ),
    ] = ""
    project: Annotated[str | None, optional_text(200), Field(description=SEARCH_PROJECT_DESCRIPTION)] = None
    limit: Annotated[int, Field(description="Maximum memories returned", ge=1, le=settings.SEARCH_MAX_LIMIT)] = (
        RECALL_DEFAULT_LIMIT
    )
    token_budget: Annotated[
        int | None,
        Field(
            description=(
                "The whole `injection_block`, its framing included, stays within this many tokens (four "
                "characters a token); a memory too big for what is left is skipped and a smaller one after it "
                "may still fit"
            ),
            ge=INJECT_BUDGET_MIN,
            le=TOKEN_BUDGET_MAX,
        ),
    ] = None


class RecallAnchorOut(Contract):
    """The anchor that brought a memory back: where in the code it is about, and whether that code changed."""

    repository: str
    path: str = Field(description="repository-relative; empty for an error-signature anchor")
    symbol: str
    line_start: int | None
    line_end: int | None
    commit: str = Field(description="the commit the memory was true at, if known")
    error_text: str = Field(description="an error-signature anchor's readable signature")
    state: str = Field(description="current, or code_changed: a later commit changed the anchored code")
    changed_commit: str = Field(description="the commit that changed it (code_changed only)")

    @classmethod
    def of(cls, anchor: RecallAnchor) -> RecallAnchorOut:
        return cls(
            repository=anchor.repository, path=anchor.path, symbol=anchor.symbol, line_start=anchor.line_start,
            line_end=anchor.line_end, commit=anchor.commit, error_text=anchor.error_text, state=anchor.state,
            changed_commit=anchor.changed_commit,
        )  # fmt: skip


class RecallHitOut(Contract):
    id: str
    title: str
    description: str
    content: str
    outcome: str
    confidence: float
    scope: str
    matched_by: str = Field(
        description=(
            "error (anchored to the same error signature), file (to the file itself) or directory (to its "
            "directory, a file beside it, or a directory above it)"
        )
    )
    code_changed: bool = Field(
        description="the anchored code changed after the memory was written: verify before relying on it"
    )
    anchor: RecallAnchorOut
    source: SourceOut = Field(description="who wrote it, how, through which client, when; and whether it is trusted")


class ErrorSignatureOut(Contract):
    type: str = Field(description="the exception's type without its module")
    message: str = Field(description="its message without numbers, addresses, ids and directories")
    frames: list[str] = Field(description="the innermost frames, innermost first, as file:function")
    text: str = Field(description="all of it in one line")
    digest: str = Field(description="SHA-256 of type, message and frames: two failures match when it is equal")

    @classmethod
    def of(cls, signature: ErrorSignature) -> ErrorSignatureOut:
        return cls(
            type=signature.type,
            message=signature.message,
            frames=list(signature.frames),
            text=signature.text,
            digest=signature.digest,
        )


class RecallOutput(Contract):
    memories: list[RecallHitOut] = Field(description="what `injection_block` holds, in its order")
    injection_block: str = Field(
        description=(
            "The `<reasoningbank_memories>` block to put in the agent's context as it is (the memories framed "
            "as reference material, each in a `<memory>` element with its source label), the same framing "
            "as per-prompt recall's; empty when nothing qualifies"
        )
    )
    tokens_used: int = Field(description="the block's size, four characters a token")
    repository: str = Field(description="the repository as normalised; empty when none was given")
    path: str = Field(description="the path as looked up (repository-relative); empty when none was given")
    error_signature: ErrorSignatureOut | None = Field(
        description="the signature read from `error`; null when no error was given or none was found in it"
    )


def _inputs_checked(args: RecallInput) -> tuple[str, str]:
    """The normalised repository and path, or a 422 naming the fix. Rules between fields (and what only
    normalising can tell) the schema cannot state: the body had the right shape."""
    if not args.path and not args.error:
        raise Rejected(
            "give the path of a file about to be read or changed, or a failing command's error output",
            field="path",
            code="rejected_needs_path_or_error",
        )
    repository = _repository(args.repository) if args.repository else ""
    if args.repository and not repository:
        raise Rejected(
            "repository must be a git remote (git@host:owner/name.git or https://host/owner/name), not a local path",
            field="repository",
            code="rejected_repository",
        )
    path = ""
    if args.path:
        absolute = args.path.replace("\\", "/").startswith("/") or args.path[1:3] in (":/", ":\\")
        if absolute and not args.root:
            raise Rejected(
                "an absolute path needs root, the working tree's top, to be made relative to it",
                field="root",
                code="rejected_needs_root",
            )
        path = path_normalise(args.path, args.root)
        if not path:
            raise Rejected(
                "path must be a file inside the working tree (root), not the tree itself or outside it",
                field="path",
                code="rejected_path",
            )
    return repository, path


def _repository(remote: str) -> str:
    """A remote in any spelling, or already normalised (``github.com/acme/api``: a host with a dot, then a
    path), as ``host/owner/name``; "" for anything else (a local path)."""
    normalised = repository_normalise(remote)
    if normalised:
        return normalised
    host, _, rest = remote.strip().strip("/").partition("/")
    if "." in host and rest and ":" not in host and not remote.startswith(("/", ".")):
        return repository_normalise(f"https://{host}/{rest}")
    return ""


@traced("memory.recall")
def memory_recall_run(principal: Principal, args: RecallInput) -> RecallOutput:
    session_key_clean(args.session_id)  # before any work: a session id holding a secret is refused
    repository, path = _inputs_checked(args)
    signature = error_signature(args.error) if args.error else None
    project = project_resolve(principal, args.project) or recall_project(principal, repository)
    current_set(org_id=principal.organization.id, has_path=bool(path), has_error=signature is not None)
    hits = code_recall_select(
        principal,
        RecallQuery(
            repository=repository,
            path=path,
            digest=signature.digest if signature else "",
            project=project,
            exclude_session=args.session_id,
        ),
    )
    sources = memory_sources_annotated([hit.memory for hit in hits])  # read with them: no statement
    block = _block(hits, sources, args)
    kept = [hit for hit in hits if hit.memory.id in set(block.ids)]
    kept.sort(key=lambda hit: block.ids.index(hit.memory.id))
    # put in the agent's context unasked: impressions, no confidence moved (docs/confidence.md#impressions-and-use)
    memories_mark_shown(organization_id=principal.organization.id, memory_ids=[hit.memory.id for hit in kept])
    if args.session_id and kept:
        session_uses_record(
            principal=principal,
            session_key=args.session_id,
            via=SessionMemoryUse.VIA_RECALL,
            memory_ids=[hit.memory.id for hit in kept],
        )
    current_set(result_count=len(kept), tokens_used=block.tokens)
    return RecallOutput(
        memories=[_hit_out(hit, sources[hit.memory.id]) for hit in kept],
        injection_block=block.text,
        tokens_used=block.tokens,
        repository=repository,
        path=path,
        error_signature=ErrorSignatureOut.of(signature) if signature else None,
    )


def _note(hit: RecallHit, label: str) -> PromptNote:
    memory = hit.memory
    return PromptNote(
        id=memory.id,
        title=memory.title,
        confidence=memory.confidence,
        label=label,
        text=f"{memory.description.strip()}\n{memory.content.strip()}",
        # the note says "the code changed since <commit> — verify" (docs/code-memory.md#staleness)
        code_changed=hit.anchor.changed_commit if hit.anchor.code_changed else "",
    )


def _block(hits: list[RecallHit], sources: dict[str, dict[str, object]], args: RecallInput) -> PromptBlock:
    """The framed block of the first ``limit`` memories that fit in the budget, framing included (the
    per-prompt block's format: a note too big for what is left is skipped, a smaller one may fit)."""
    budget = args.token_budget if args.token_budget is not None else TOKEN_BUDGET_MAX * 10
    notes = [_note(hit, str(sources[hit.memory.id]["label"])) for hit in hits]
    block = prompt_block_format(notes, token_budget=budget)
    if len(block.ids) > args.limit:  # the first `limit` that fit, framed again on their own
        keep = set(block.ids[: args.limit])
        block = prompt_block_format([note for note in notes if note.id in keep], token_budget=budget)
    return block


def _hit_out(hit: RecallHit, source: dict[str, object]) -> RecallHitOut:
    memory = hit.memory
    return RecallHitOut(
        id=memory.id,
        title=memory.title,
        description=memory.description,
        content=memory.content,
        outcome=memory.outcome,
        confidence=rounded(memory.confidence),
        scope=memory.scope,
        matched_by=hit.tier,
        code_changed=hit.anchor.code_changed,
        anchor=RecallAnchorOut.of(hit.anchor),
        source=SourceOut.of(source),
    )
