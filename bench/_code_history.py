"""A repository's history for bench/code_memory.py, and what really happened in it (no Django): the
commits in the export's format (one commit a JSON line, oldest first: ``sha``, ``parents``, ``date``,
``subject``, ``body`` and ``files``, each with ``path``, ``status`` A/M/D/R, ``old_path`` for a rename
and ``hunks`` — ``old_start``, ``old_lines``, ``new_start``, ``new_lines`` and the ``context`` git names
in the hunk header, a function or class of a Python file, or null), files followed through renames,
the fix commits, which earlier commits touched the symbols a fix touches (recall's ground truth) and
which anchors a later commit really changed (staleness's ground truth)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

# A fix: what the export's README counts ("subjects start with fix, bug or revert"), and a subject saying
# it fixes something further in ("Handle … (fixes #123)", "Correctly fix …").
FIX = re.compile(r"^\s*(fix|bug|revert)|\bfix(e[sd])?\b", re.IGNORECASE)
# a hunk's context as the export gives it: a bare name (``invoke``) or the line defining it
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
DEFINES = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    symbol: str  # the function or class named in the hunk header, "" when git named none


@dataclass(frozen=True)
class FileChange:
    status: str  # A, M, D, R
    path: str
    old_path: str
    hunks: tuple[Hunk, ...]

    @property
    def before(self) -> str:
        return self.old_path if self.status == "R" and self.old_path else self.path

    @property
    def symbols(self) -> list[str]:
        return list(dict.fromkeys(h.symbol for h in self.hunks if h.symbol))


@dataclass(frozen=True)
class Commit:
    index: int
    sha: str
    date: datetime
    subject: str
    body: str
    files: tuple[FileChange, ...]
    raw: dict = field(repr=False, compare=False, hash=False)

    @property
    def is_fix(self) -> bool:
        return bool(self.files) and bool(FIX.search(self.subject))


def symbol_name(context: str | None) -> str:
    text = (context or "").strip()
    if NAME.fullmatch(text):
        return text
    match = DEFINES.search(text)
    return match.group(1) if match else ""


def history_read(path: Path) -> list[Commit]:
    """The export, oldest first, as the bench's values (the raw lines kept for the seeding service)."""
    commits = []
    with path.open() as lines:
        for line in lines:
            if not line.strip():
                continue
            raw = json.loads(line)
            files = tuple(
                FileChange(
                    status=f.get("status") or "M",
                    path=f["path"],
                    old_path=f.get("old_path") or "",
                    hunks=tuple(
                        Hunk(
                            int(h.get("old_start") or 0),
                            int(h.get("old_lines") or 0),
                            int(h.get("new_start") or 0),
                            int(h.get("new_lines") or 0),
                            symbol_name(h.get("context")),
                        )
                        for h in f.get("hunks") or []
                    ),
                )
                for f in raw.get("files") or []
            )
            commits.append(
                Commit(
                    index=len(commits),
                    sha=raw["sha"],
                    date=datetime.fromisoformat(raw["date"]),
                    subject=raw.get("subject") or "",
                    body=raw.get("body") or "",
                    files=files,
                    raw=raw,
                )
            )
    return commits


class FileIdentities:
    """Each file's identity through renames: ``src/click/core.py`` and the ``click/core.py`` it was
    renamed from are one file. Fed commit by commit, in order."""

    def __init__(self) -> None:
        self._by_path: dict[str, int] = {}
        self._next = 0

    def of(self, path: str) -> int:
        if path not in self._by_path:
            self._by_path[path] = self._next
            self._next += 1
        return self._by_path[path]

    def apply(self, commit: Commit) -> dict[str, int]:
        """The identity of each file ``commit`` changed (by its path before the commit), then the
        commit's renames and deletions applied."""
        seen = {change.before: self.of(change.before) for change in commit.files}
        for change in commit.files:
            if change.status == "R" and change.old_path:
                self._by_path[change.path] = self._by_path.pop(change.old_path, seen[change.before])
            elif change.status == "D":
                self._by_path.pop(change.path, None)  # a file added there later is another file
        return seen


@dataclass
class Touches:
    """Who touched what: (file identity, symbol) → the commits whose hunks named the symbol there, and
    file identity → the commits that changed the file at all, in order."""

    by_symbol: dict[tuple[int, str], list[str]] = field(default_factory=lambda: defaultdict(list))
    by_file: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, commit: Commit, identities: dict[str, int]) -> None:
        for change in commit.files:
            file = identities[change.before]
            self.by_file[file].append(commit.sha)
            for symbol in change.symbols:
                self.by_symbol[(file, symbol)].append(commit.sha)


@dataclass(frozen=True)
class RecallCase:
    """One file a fix commit opens (by its path before the commit), with the earlier seeded commits that
    touched one of the symbols the fix changes there, and those that touched the file at all."""

    commit: Commit
    path: str
    symbols: tuple[str, ...]
    related_by_symbol: frozenset[str]
    related_by_file: frozenset[str]


def replay(seeded: list[Commit], replayed: list[Commit]) -> Iterator[tuple[Commit, list[RecallCase]]]:
    """The replayed commits in order, each with its recall cases when it is a fix (the files it changed
    that existed before it: a file it adds cannot be opened first). What the seeded commits touched is
    the ground truth; files are followed through every rename, seeded or replayed."""
    identities, touches = FileIdentities(), Touches()
    seeded_shas = {c.sha for c in seeded}
    for commit in seeded:
        touches.add(commit, identities.apply(commit))
    for commit in replayed:
        files = identities.apply(commit)
        cases = []
        if commit.is_fix:
            for change in commit.files:
                if change.status == "A":
                    continue
                file = files[change.before]
                by_symbol = {sha for symbol in change.symbols for sha in touches.by_symbol.get((file, symbol), ())}
                cases.append(
                    RecallCase(
                        commit=commit,
                        path=change.before,
                        symbols=tuple(change.symbols),
                        related_by_symbol=frozenset(by_symbol & seeded_shas),
                        related_by_file=frozenset(set(touches.by_file.get(file, ())) & seeded_shas),
                    )
                )
        yield commit, cases


@dataclass(frozen=True)
class AnchorFact:
    """A seeded anchor as the bench reads it back: on ``path`` (at ``commit``), of ``symbol`` or the file."""

    id: int
    path: str
    symbol: str
    commit: str


def stale_truth(anchors: Iterable[AnchorFact], commits: list[Commit]) -> dict[int, str]:
    """What really happened to each anchor after its commit, over ``commits`` (the whole history, in order):
    ``deleted`` (its file deleted, and not added again after), ``code_changed`` (a later commit's hunk named
    its symbol, or a member of it, in its file — followed through renames), else ``current``. An anchor on
    the whole file (no symbol) is judged by deletion only: a modification does not make a file's lesson
    wrong, and the export has nothing finer to say what it was about."""
    by_commit: dict[str, list[AnchorFact]] = defaultdict(list)
    for anchor in anchors:
        by_commit[anchor.commit].append(anchor)
    watching: dict[str, list[tuple[AnchorFact, str]]] = defaultdict(list)  # current path → (anchor, state)
    verdict: dict[int, str] = {}
    for commit in commits:
        for change in commit.files:
            for index, (anchor, state) in enumerate(watching.get(change.before, [])):
                if change.status == "D":
                    state = "deleted"
                elif change.status == "A" and state == "deleted":
                    state = "code_changed"
                elif (
                    state == "current"
                    and anchor.symbol
                    and any(name == anchor.symbol or name.startswith(anchor.symbol + ".") for name in change.symbols)
                ):
                    state = "code_changed"
                watching[change.before][index] = (anchor, state)
            if change.status == "R" and change.old_path and change.old_path in watching:
                watching[change.path].extend(watching.pop(change.old_path))
        for anchor in by_commit.get(commit.sha, ()):  # from now on, later commits count for it
            watching[anchor.path].append((anchor, "current"))
    for entries in watching.values():
        for anchor, state in entries:
            verdict[anchor.id] = state
    return verdict
