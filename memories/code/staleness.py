"""What a commit's changes mean for one anchor (docs/code-memory.md#staleness), pure (no Django).

A commit's report names each file it changed: its status, its hunks in the OLD file's numbering (git's
``@@ -start,lines``) and the symbols whose bodies the hunks touch (innermost first: ``Parser.parse``),
or no symbols when the reporter could not read the file's language. An anchor is:

* **deleted** when its file was deleted;
* **followed** to the new path when its file was renamed (its state otherwise as a modification says);
* **code_changed** when its deleted file was added again, or when a modification touched it: its symbol,
  or a symbol inside it, is among the changed symbols; without a symbol (or when the reporter read no
  symbols), a hunk overlaps its lines;
  an anchor with neither symbol nor lines is about the whole file, which a modification alone does not
  make stale (only its deletion does);
* otherwise unchanged.

Which commits count (the anchor's own commit and older ones do not) is the service's business: here
is only the geometry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

ADDED, MODIFIED, DELETED, RENAMED = "added", "modified", "deleted", "renamed"
FILE_STATUSES = (ADDED, MODIFIED, DELETED, RENAMED)
UNCHANGED, CODE_CHANGED = "unchanged", "code_changed"


@dataclass(frozen=True)
class Hunk:
    start: int  # the first old line replaced or removed; with ``lines`` 0, lines were inserted after it
    lines: int

    def touches(self, first: int, last: int) -> bool:
        """Whether this hunk changes something within lines ``first``..``last`` (inclusive): a line of
        them replaced or removed, or lines inserted between two of them."""
        if self.lines == 0:
            return first <= self.start < last
        return self.start <= last and self.start + self.lines - 1 >= first


@dataclass(frozen=True)
class FileChange:
    status: str
    path: str  # after the commit (a deletion: the deleted path)
    old_path: str = ""  # a rename's path before the commit
    hunks: Sequence[Hunk] = ()
    symbols: Sequence[str] | None = None  # None: the reporter did not read them

    @property
    def before(self) -> str:
        """The path the file had before the commit, which anchors name."""
        return self.old_path if self.status == RENAMED and self.old_path else self.path


@dataclass(frozen=True)
class Place:
    """An anchor's place in the code."""

    path: str
    symbol: str = ""
    line_start: int | None = None
    line_end: int | None = None


@dataclass(frozen=True)
class Verdict:
    state: str  # UNCHANGED, CODE_CHANGED or DELETED
    path: str  # where the anchor is after the commit (a rename's new path)


def symbol_touched(symbol: str, changed: Sequence[str]) -> bool:
    """Whether the anchored ``symbol`` changed: itself, or anything in its body (``Parser`` holds
    ``Parser.parse``). ``Parser`` is not changed by ``ParserError``."""
    return any(name == symbol or name.startswith(symbol + ".") for name in changed)


def lines_touched(first: int, last: int, hunks: Sequence[Hunk]) -> bool:
    return any(hunk.touches(first, last) for hunk in hunks)


def anchor_verdict(place: Place, change: FileChange, *, deleted: bool = False) -> Verdict:
    """What ``change`` (a change of the anchor's file, ``change.before == place.path``) does to the anchor,
    ``deleted`` when an earlier commit deleted its file."""
    if change.status == DELETED:
        return Verdict(DELETED, place.path)
    path = change.path if change.status == RENAMED else place.path
    if change.status == ADDED:
        # a deleted file came back: what the memory said of it was not checked against the new one. An
        # anchor on a file still there (written before the file's first commit) is as true as it was
        return Verdict(CODE_CHANGED if deleted else UNCHANGED, path)
    lines = place.line_start is not None
    first = place.line_start or 0
    last = place.line_end if place.line_end is not None else first
    if place.symbol and change.symbols is not None:
        touched = symbol_touched(place.symbol, change.symbols)
    elif lines:
        touched = lines_touched(first, last, change.hunks)
    else:  # a symbol the reporter could not read, or the whole file: a modification says nothing certain
        touched = False
    return Verdict(CODE_CHANGED if touched else UNCHANGED, path)
