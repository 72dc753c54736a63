"""Memories by the code they are anchored to, as query parts other reads add to theirs: the memories
list's ``path`` and ``symbol`` filters (an ORM ``Exists``) and search's ``paths`` (SQL over the search's
alias ``m``), both matching files exactly and directories with everything under them
(docs/code-memory.md#browse-by-code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Exists, OuterRef, Q

from accounts.models import Organization
from memories.code.paths import PathSelection
from memories.models_code import MemoryAnchor


def anchors_q(selection: PathSelection, symbol: str = "") -> Q:
    """Anchors on one of the selection's files or under one of its directories; with ``symbol``, only
    those of that symbol or one of its members (``Parser`` finds ``Parser`` and ``Parser.parse``)."""
    q = Q()
    if selection:
        q = Q(path__in=selection.files)
        for directory in selection.directories:
            q |= Q(path__startswith=directory)
    if symbol:
        q &= Q(symbol=symbol) | Q(symbol__startswith=symbol + ".")
    return q


def memory_anchored_exists(organization: Organization, selection: PathSelection, symbol: str = "") -> Exists:
    """``Exists`` for a Memory queryset: the memory has an anchor ``anchors_q`` matches (one anchor for
    path and symbol both, so ``symbol`` narrows within the path)."""
    anchors = MemoryAnchor.objects.filter(organization=organization, memory=OuterRef("pk"))
    return Exists(anchors.filter(anchors_q(selection, symbol)))


# The memory ids anchored on the search's paths: one index range per file and directory
# (memoryanchor_org_path, varchar_pattern_ops: equality and prefix LIKE).
ANCHORED_IDS_SQL = (
    "SELECT a.memory_id FROM memories_memoryanchor a WHERE a.organization_id = %(org)s "
    "AND (a.path = ANY(%(anchor_files)s::varchar[]) OR a.path LIKE ANY(%(anchor_dirs)s::varchar[]))"
)


def anchored_sql(alias: str = "m") -> str:
    """SQL true when the memory ``alias`` is anchored on the search's paths (``anchored_params``)."""
    return f"{alias}.id IN ({ANCHORED_IDS_SQL})"


def anchored_params(selection: PathSelection) -> dict[str, Any]:
    return {"anchor_files": list(selection.files), "anchor_dirs": selection.like_patterns()}


def memory_ids_anchored(
    ids: list[str], selection: PathSelection, organization_id: int, *, rows: Callable[..., list[tuple[Any, ...]]]
) -> set[str]:
    """Which of ``ids`` are anchored on the selection, in one query (``rows`` runs it: the search's
    ``sql_rows``, so it reads where the search reads, the replica when there is one)."""
    if not ids or not selection:
        return set()
    sql = f"/* search:paths */ SELECT m.id FROM unnest(%(ids)s::varchar[]) AS m(id) WHERE {anchored_sql('m')}"
    return {row[0] for row in rows(sql, {"ids": ids, "org": organization_id, **anchored_params(selection)})}
