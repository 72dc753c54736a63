"""The ``code_changes_report`` operation's contract (docs/code-memory.md#staleness): what one commit
changed — each file's status, its hunks in the old file's numbering and the symbols they touch — applied
to the anchors of the repository's memories. One input model, one output model and
``code_changes_report_run``, shared by the MCP tool (``memories/mcp_tools.py``),
``POST /api/v1/code/changes`` (``memories/code/api_staleness.py``), the SDKs and
``scripts/git-code-report`` (whose files come from the plugin's ``reasoningbank_hooks/code_changes.py``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints

from accounts.access import Principal
from memories.code.anchors import path_normalise, repository_normalise
from memories.code.services_staleness import code_changes_report
from memories.code.staleness import FileChange, Hunk
from reasoningbank.contracts import NOT_BLANK, NUL_FREE, Contract
from reasoningbank.errors import Rejected

FILES_MAX = 1000  # a larger commit is sent in several reports (scripts/git-code-report does)
HUNKS_MAX = 500
SYMBOLS_MAX = 500
PATH_MAX = 1000


def _repository(value: str) -> str:
    """The remote normalised (github.com/acme/api); idempotent: the MCP tool validates its arguments twice
    (the SDK, then the contract). A string of the right shape that names no remote is refused by
    ``code_changes_report_run`` with a 422, like the other operations that take a repository: the schema
    cannot say which strings are remotes."""
    return repository_normalise(value) or repository_normalise(f"https://{value}") or value


Path = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=PATH_MAX, pattern=NOT_BLANK)]
Symbol = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=300, pattern=NOT_BLANK)]


class HunkIn(Contract):
    start: int = Field(ge=0, description="git's old-side start (`@@ -start,lines`): the first line replaced or removed")
    lines: int = Field(ge=0, description="old lines replaced or removed; 0: lines were inserted after line `start`")


class ChangedFileIn(Contract):
    status: Literal["added", "modified", "deleted", "renamed"] = Field(
        description="what the commit did to the file (git's rename detection: `git diff -M --name-status`)"
    )
    path: Path = Field(description="the file's repository-relative path after the commit (a deletion: its path)")
    old_path: Annotated[str, StringConstraints(strip_whitespace=True, max_length=PATH_MAX, pattern=NUL_FREE)] = Field(
        default="", description="a rename's path before the commit (required for renamed)"
    )
    hunks: list[HunkIn] = Field(
        default_factory=list,
        max_length=HUNKS_MAX,
        description="the changed line ranges in the OLD file's numbering (`git diff -U0`), which anchors were "
        "written against; for modified and renamed files",
    )
    symbols: list[Symbol] | None = (
        Field(
            default=None,
            max_length=SYMBOLS_MAX,
            description="the functions and classes, dotted (`Parser.parse`), whose bodies the hunks touch, in the "
            "old or the new file; omitted (null) when the reporter could not read the file's language, and then "
            "an anchor's lines decide",
        )
    )


class CodeChangesInput(Contract):
    repository: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=500, pattern=NOT_BLANK),
        AfterValidator(_repository),
    ] = Field(description="the repository's git remote, in any spelling (normalised: github.com/acme/api)")
    commit: Annotated[
        str, StringConstraints(strip_whitespace=True, to_lower=True, pattern="^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$")
    ] = Field(description="the commit's full git sha (40 or 64 hexadecimal digits)")
    committed_at: Annotated[datetime, Field(strict=False)] = Field(
        description="the commit's committer date (ISO 8601; without a zone, UTC): only anchors older than it are "
        "flagged, so reports may come in any order"
    )
    files: list[ChangedFileIn] = Field(
        max_length=FILES_MAX,
        description=f"the files the commit changed against its first parent (at most {FILES_MAX}: send a larger "
        "commit in several reports)",
    )


class CodeChangesOutput(Contract):
    repository: str = Field(description="the repository, normalised")
    commit: str
    code_changed: list[str] = Field(description="memories with an anchor flagged code_changed by this report")
    deleted: list[str] = Field(description="memories with an anchor whose file this commit deleted")
    moved: list[str] = Field(description="memories with an anchor moved to a renamed file's new path")
    already_reported: bool = Field(description="this commit's files had been reported before: nothing changed")
    message: str


def code_changes_report_run(principal: Principal, args: CodeChangesInput) -> CodeChangesOutput:
    # what the schema cannot say (which strings are remotes and relative paths) is a 422 naming the field
    if not repository_normalise(f"https://{args.repository}"):
        raise Rejected(
            "repository must be the repository's git remote (e.g. git@github.com:acme/api.git or github.com/acme/api)",
            field="repository",
            code="rejected_not_a_remote",
        )
    for n, f in enumerate(args.files):
        if f.status == "renamed" and not f.old_path:
            raise Rejected(
                "old_path is required for a rename: the path before it",
                field=f"files.{n}.old_path",
                code="rejected_rename",
            )
        for name in ("path", "old_path"):
            value = getattr(f, name)
            if value and not path_normalise(value):
                raise Rejected(
                    f"files.{n}.{name}: must be a path relative to the repository's top (no leading /, no ..)",
                    field=f"files.{n}.{name}",
                    code="rejected_path",
                )
    at = args.committed_at if args.committed_at.tzinfo else args.committed_at.replace(tzinfo=UTC)
    files = [
        FileChange(
            status=f.status,
            path=path_normalise(f.path),
            old_path=path_normalise(f.old_path) if f.old_path else "",
            hunks=tuple(Hunk(h.start, h.lines) for h in f.hunks),
            symbols=tuple(f.symbols) if f.symbols is not None else None,
        )
        for f in args.files
    ]
    result = code_changes_report(
        principal=principal, repository=args.repository, commit=args.commit, committed_at=at, files=files
    )
    flagged, deleted, moved = (sorted(set(ids)) for ids in (result.flagged, result.deleted, result.moved))
    if result.already_reported:
        message = f"Commit {args.commit[:12]} was reported before: nothing changed"
    else:
        message = (
            f"Commit {args.commit[:12]} of {result.repository}: {len(flagged)} memories flagged code_changed, "
            f"{len(deleted)} with a deleted file, {len(moved)} followed a rename"
        )
    return CodeChangesOutput(
        repository=result.repository,
        commit=args.commit,
        code_changed=flagged,
        deleted=deleted,
        moved=moved,
        already_reported=result.already_reported,
        message=message,
    )
