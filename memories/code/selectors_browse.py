"""Reads of the dashboard's Code page (docs/code-memory.md#browse-by-code): the anchored paths of the
memories a member can read as a tree, one directory at a time, counted in SQL (GROUP BY the path's next
segment under the directory), and a file's anchors with their memories."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import BooleanField, CharField, Count, ExpressionWrapper, F, Func, Q, QuerySet, Value
from django.db.models.functions import StrIndex, Substr

from accounts.access import Principal, access_filter
from memories.code.paths import TreeEntry
from memories.core.selectors import MemoryFilters, memory_list
from memories.models import Memory
from memories.models_code import MemoryAnchor

STALE_STATES = (MemoryAnchor.STATE_CODE_CHANGED, MemoryAnchor.STATE_DELETED)


def code_anchors(principal: Principal, *, project: str | None = None) -> QuerySet[MemoryAnchor]:
    """The anchors on a path of the active memories the principal reads (in ``project``, its team's and
    the organization's when one is named): what the Code page shows. Error-signature anchors have no path."""
    memories = memory_list(principal, MemoryFilters(project=project, state=Memory.STATE_ACTIVE)).values("id")
    return access_filter(MemoryAnchor, principal).exclude(path="").filter(memory__in=memories)


@dataclass(frozen=True)
class TreePage:
    """One page of a directory's children: directories first, then files, each by name."""

    directory: str  # "" for the top, else ending with "/"
    entries: list[TreeEntry]
    has_more: bool


def code_tree(
    principal: Principal, *, directory: str = "", project: str | None = None, offset: int = 0, limit: int = 100
) -> TreePage:
    """The children of ``directory`` (``""``: the top; else ending with ``/``) with, under each, the active
    memories anchored there (distinct) and the anchors marked ``code_changed`` or ``deleted``. One query:
    the rows under the directory grouped by their next path segment, so a directory of ten thousand files
    costs the database a scan of its index range, not Python a loop over every row."""
    rest = Substr("path", len(directory) + 1)
    rows = (
        code_anchors(principal, project=project)
        .filter(path__startswith=directory)
        .alias(slash=StrIndex(rest, Value("/")))
        .annotate(
            child=Func(rest, Value("/"), Value(1), function="split_part", output_field=CharField()),
            is_directory=ExpressionWrapper(Q(slash__gt=0), output_field=BooleanField()),
        )
        .values("child", "is_directory")
        .annotate(memories=Count("memory_id", distinct=True), stale=Count("id", filter=Q(state__in=STALE_STATES)))
        .order_by("-is_directory", "child")[offset : offset + limit + 1]
    )
    entries = [
        TreeEntry(
            name=row["child"],
            path=f"{directory}{row['child']}" + ("/" if row["is_directory"] else ""),
            is_directory=row["is_directory"],
            memories=row["memories"],
            stale=row["stale"],
        )
        for row in rows
    ]
    return TreePage(directory=directory, entries=entries[:limit], has_more=len(entries) > limit)


@dataclass(frozen=True)
class CodeTotals:
    paths: int
    memories: int
    stale: int


def code_totals(principal: Principal, *, project: str | None = None) -> CodeTotals:
    """The page's headline: anchored files, memories anchored to one, anchors whose code changed since."""
    found = code_anchors(principal, project=project).aggregate(
        paths=Count("path", distinct=True),
        memories=Count("memory_id", distinct=True),
        stale=Count("id", filter=Q(state__in=STALE_STATES)),
    )
    return CodeTotals(paths=found["paths"], memories=found["memories"], stale=found["stale"])


def code_file_anchors(principal: Principal, *, path: str, project: str | None = None) -> QuerySet[MemoryAnchor]:
    """The anchors on one file with their memories, in the order of the file (symbol-less ones first)."""
    return (
        code_anchors(principal, project=project)
        .filter(path=path)
        .select_related("memory")
        .defer("memory__embedding", "memory__search_vector")
        .order_by(F("line_start").asc(nulls_first=True), "symbol", "memory_id", "id")
    )
