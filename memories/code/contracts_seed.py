"""The history-seeding operations' contracts (docs/code-memory.md#seeding-from-history): ``history_seed``
(a batch of commits the client read from git, handed in for distillation — or, as a dry run, only
estimated) and ``history_seed_progress`` (how far a repository's seeding got). One input and one output
model each, shared by ``POST``/``GET /api/v1/code/history``, the SDKs and ``manage.py
memories_seed_from_git``."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from accounts.access import Principal
from memories.code.selectors_seed import history_seed_progress
from memories.code.services_seed import SeedResult, history_seed_submit
from memories.core.contracts import Project, iso_or_none, required_text
from reasoningbank.contracts import NUL_FREE, Contract

COMMITS_MAX = 500  # per request: a client sends a long history in several
Sha = Annotated[
    str,
    StringConstraints(strip_whitespace=True, to_lower=True, pattern="^[0-9a-fA-F]{7,64}$"),
    Field(description="a commit's sha (7 to 64 hexadecimal digits)"),
]
Text = Annotated[str, StringConstraints(max_length=100_000, pattern=NUL_FREE)]


class HistoryFile(Contract):
    path: Annotated[str, required_text(1000), Field(description="the path after the commit, repository-relative")]
    status: Annotated[
        Literal["A", "M", "D", "R", "C", "T", "U"],
        Field(description="A added, M modified, D deleted, R renamed, C copied, T type changed"),
    ] = "M"
    old_path: Annotated[
        str, StringConstraints(max_length=1000, pattern=NUL_FREE), Field(description="a rename's or copy's source")
    ] = ""
    symbols: Annotated[
        list[Annotated[str, required_text(300)]],
        Field(max_length=50, description="the functions and classes the commit's hunks touch in this file"),
    ] = []


class PullRequest(Contract):
    number: Annotated[int, Field(ge=1)]
    title: Annotated[str, StringConstraints(max_length=1000, pattern=NUL_FREE)] = ""
    body: Text = ""


class HistoryCommit(Contract):
    sha: Sha
    parents: Annotated[list[Sha], Field(max_length=64)] = []
    date: Annotated[
        str, StringConstraints(max_length=40, pattern=NUL_FREE), Field(description="the author date, ISO 8601")
    ] = ""
    author: Annotated[str, StringConstraints(max_length=200, pattern=NUL_FREE)] = ""
    subject: Annotated[str, StringConstraints(max_length=2000, pattern=NUL_FREE)] = ""
    body: Text = ""
    files: Annotated[list[HistoryFile], Field(max_length=5000, description="the paths it changed")] = []
    reverts: Annotated[
        str,
        StringConstraints(strip_whitespace=True, to_lower=True, pattern="^([0-9a-fA-F]{7,64})?$"),
        Field(description="the commit it reverts"),
    ] = ""
    fixes: Annotated[list[Sha], Field(max_length=20, description="the earlier commits it fixes")] = []
    pr: Annotated[PullRequest | None, Field(description="the pull request it merged")] = None


class HistorySeedInput(Contract):
    repository: Annotated[
        str, required_text(500), Field(description="the repository's git remote, any spelling (normalised)")
    ]
    commits: Annotated[
        list[HistoryCommit],
        Field(
            min_length=1,
            max_length=COMMITS_MAX,
            description=(
                "commits oldest first, as `git log --reverse` reads them (docs/code-memory.md#seeding-from-history); "
                "those the project already has from this repository are skipped"
            ),
        ),
    ]
    project: Project = None
    batch_size: Annotated[int, Field(ge=1, le=100, description="commits per distillation batch (one session each)")] = (
        20
    )
    dry_run: Annotated[
        bool, Field(description="true: submit nothing, answer how many batches it would make and their LLM estimate")
    ] = False


class HistoryEstimate(Contract):
    batches: int
    input_tokens: int = Field(description="the prompts' likely tokens, estimated as the LLM budget check does")
    output_tokens: int = Field(description="the replies' likely tokens: the organization's recent distillations")
    tokens: int
    provider: str = Field(description="the LLM that would distil them; `none`: they wait for one")
    model: str
    estimated_cost: str | None = Field(description="at the operator's price for the model; null when it has none")
    currency: str


class HistoryBatch(Contract):
    id: str = Field(description="the session's id (`ses_…`): poll it with `GET /api/v1/sessions/{id}`")
    session_id: str
    commits: int
    status: str


class HistorySeedOutput(Contract):
    project: str
    repository: str = Field(description="the repository, normalised")
    dry_run: bool
    received: int = Field(description="commits in the request")
    skipped: int = Field(description="commits the project already had from this repository")
    submitted: int = Field(description="commits handed in for distillation (0 on a dry run)")
    batches: list[HistoryBatch]
    estimate: HistoryEstimate
    episodic_memories: int = Field(
        description="without an LLM: commit messages kept as episodic memories, anchored to their files"
    )
    gated: int = Field(description="without an LLM: commit messages the write gate kept out")
    quarantined: int = Field(description="of the episodic memories, those held for review (instruction smell)")
    waiting_for_llm: bool = Field(description="no LLM is configured: the batches wait for one")
    last_commit: str = Field(description="the newest commit the seeding has read (a re-run reads after it)")
    message: str


def history_estimate_out(result: SeedResult) -> HistoryEstimate:
    e = result.estimate
    return HistoryEstimate(
        batches=e.batches,
        input_tokens=e.input_tokens,
        output_tokens=e.output_tokens,
        tokens=e.tokens,
        provider=e.provider,
        model=e.model,
        estimated_cost=None if e.cost is None else str(e.cost),
        currency=e.currency,
    )


def history_seed_run(principal: Principal, args: HistorySeedInput) -> HistorySeedOutput:
    result = history_seed_submit(
        principal=principal,
        project=args.project,
        repository=args.repository,
        commits=[commit.model_dump() for commit in args.commits],
        batch_size=args.batch_size,
        dry_run=args.dry_run,
    )
    submitted = sum(batch.commits for batch in result.batches)
    if args.dry_run:
        message = f"Dry run: {result.received - result.skipped} new commit(s) in {result.estimate.batches} batch(es)"
    else:
        message = f"{submitted} commit(s) submitted in {len(result.batches)} batch(es)"
    if result.waiting_for_llm and not args.dry_run and result.batches:
        message += (
            f"; no LLM is configured: the batches wait for one, and {len(result.episodic)} commit message(s) were "
            "kept as episodic memories meanwhile"
        )
    return HistorySeedOutput(
        project=result.project.slug,
        repository=result.repository,
        dry_run=args.dry_run,
        received=result.received,
        skipped=result.skipped,
        submitted=submitted,
        batches=[
            HistoryBatch(id=b.session.id, session_id=b.session.external_id, commits=b.commits, status=b.session.status)
            for b in result.batches
        ],
        estimate=history_estimate_out(result),
        episodic_memories=len(result.episodic),
        gated=result.gated,
        quarantined=sum(1 for m in result.episodic if m.state == m.STATE_QUARANTINED),
        waiting_for_llm=result.waiting_for_llm,
        last_commit=result.seed.last_commit if result.seed is not None else "",
        message=message,
    )


class HistoryProgressInput(Contract):
    repository: Annotated[str, required_text(500), Field(description="the repository's git remote, any spelling")]
    project: Project = None


class HistoryProgressOutput(Contract):
    project: str
    repository: str
    last_commit: str = Field(description="the newest commit read: a re-run reads the commits after it")
    commits: int = Field(description="commits handed in so far")
    batches: int = Field(description="batches (sessions) submitted so far")
    batches_distilled: int = Field(description="batches whose distillation is over (done or held)")
    batches_by_status: dict[str, int] = Field(description="batches by their session's status")
    episodic_memories: int = Field(description="commit messages kept as memories while no LLM was configured")
    distilled_memories: int = Field(description="memories distilled from the batches")
    updated_at: str | None
    message: str


def history_progress_run(principal: Principal, args: HistoryProgressInput) -> HistoryProgressOutput:
    progress = history_seed_progress(principal, project=args.project, repository=args.repository)
    seed = progress.seed
    waiting = progress.statuses.get("waiting_for_llm", 0)
    message = f"{progress.batches_distilled} of {seed.batches} batch(es) distilled"
    if waiting:
        message += f"; {waiting} wait for an LLM to be configured"
    return HistoryProgressOutput(
        project=seed.project.slug,
        repository=seed.repository,
        last_commit=seed.last_commit,
        commits=seed.commits,
        batches=seed.batches,
        batches_distilled=progress.batches_distilled,
        batches_by_status=progress.statuses,
        episodic_memories=seed.episodic,
        distilled_memories=progress.distilled_memories,
        updated_at=iso_or_none(seed.updated_at),
        message=message,
    )
