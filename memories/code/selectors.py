"""Anchor reads (docs/code-memory.md#anchors): the anchors of a page of memories in one query (every result
that shows a memory shows its anchors), the memories anchored to a file — then to its directory — or to an
error signature, and the project a repository's remote resolves to. Every read is org-scoped through the
access layer and, for memories, kept to what the principal reaches (project → its team → org).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.selectors import project_by_repository
from memories.code.anchors import path_normalise, path_parents
from memories.core.selectors import reach_for
from memories.models import Memory, MemoryAnchor
from reasoningbank.db_replica import read_rows
from reasoningbank.repositories import repository_normalise

MATCH_FILE = "file"  # anchored to the file itself
MATCH_DIRECTORY = "directory"  # anchored to the file's directory, or to another file in it
MATCH_ERROR = "error"  # anchored to the same error signature

ANCHOR_FIELDS = (
    "repository", "path", "symbol", "line_start", "line_end", "commit", "error_signature", "error_text", "state",
    "changed_commit",
)  # fmt: skip


_ANCHOR_COLUMNS = ", ".join(f'a."{name}"' for name in ANCHOR_FIELDS)  # quoted: "commit" is a keyword
_ANCHORS_SQL = (
    f"SELECT a.memory_id, {_ANCHOR_COLUMNS} FROM {MemoryAnchor._meta.db_table} a "
    "WHERE a.organization_id = %s AND a.memory_id = ANY(%s) ORDER BY a.path, a.line_start, a.id"
)


def anchor_dicts_by_memory(memories: Iterable[Any]) -> dict[str, list[dict[str, Any]]]:
    """Each memory's anchors as the dicts results carry (ordered by path, lines), by memory id, in one
    statement per organization (one in every request): for serialising a page of results without a query
    per memory. The memories were loaded through the access layer; their anchors are read in their own
    organization only. Written out, not built by the ORM: every search and recall reads it."""
    by_org: dict[int, list[str]] = {}
    for memory in memories:
        by_org.setdefault(memory.organization_id, []).append(memory.id)
    found: dict[str, list[dict[str, Any]]] = {memory_id: [] for ids in by_org.values() for memory_id in ids}
    for org_id, ids in by_org.items():
        for memory_id, *values in read_rows(_ANCHORS_SQL, [org_id, ids]):
            found[memory_id].append(dict(zip(ANCHOR_FIELDS, values, strict=True)))
    return found


@dataclass(frozen=True)
class AnchoredMemory:
    """A memory found by one of its anchors, and how near the anchor is to what was asked."""

    memory: Memory
    anchor: MemoryAnchor
    match: str  # MATCH_FILE, MATCH_DIRECTORY or MATCH_ERROR


def _anchors_readable(
    principal: Principal, *, repository: str, project: Any, states: Sequence[str]
) -> QuerySet[MemoryAnchor]:
    """Anchors of memories the principal reaches (in ``project``'s cascade when given), in those states.
    An anchor that names no repository matches any: the project already says where it is."""
    readable = access_filter(Memory, principal).filter(reach_for(principal, project=project).memory_q())
    qs = access_filter(MemoryAnchor, principal).filter(
        memory__in=readable.filter(state__in=list(states)).exclude(expires_at__lte=timezone.now())
    )
    repo = repository_normalise(repository) if repository else ""
    if repo:
        qs = qs.filter(repository__in=[repo, ""])
    return qs.select_related("memory", "memory__project", "memory__team")


def _ranked(anchors: Iterable[MemoryAnchor], match: str, limit: int, seen: set[str]) -> list[AnchoredMemory]:
    """One result per memory (its first anchor in this order), most confident first."""
    best: dict[str, MemoryAnchor] = {}
    for anchor in anchors:
        if anchor.memory_id not in seen:
            best.setdefault(anchor.memory_id, anchor)
    ordered = sorted(best.values(), key=lambda a: (-a.memory.confidence, a.memory_id))
    return [AnchoredMemory(memory=a.memory, anchor=a, match=match) for a in ordered[:limit]]


def memories_anchored_to_path(
    principal: Principal,
    path: str,
    *,
    repository: str = "",
    project: Any = None,
    limit: int = 20,
    directory: bool = True,
    states: Sequence[str] = (Memory.STATE_ACTIVE,),
) -> list[AnchoredMemory]:
    """Memories anchored to ``path`` (repository-relative; normalised here), most confident first; when
    ``directory`` and there are fewer than ``limit``, then those anchored to its directory or to another
    file directly in it (its module), after them. ``repository`` (any spelling) narrows to anchors of that
    repository or of none; ``project`` to that project's cascade. Two queries at most, on the
    ``(organization, repository, path)`` index."""
    path = path_normalise(path)
    if not path or limit <= 0:
        return []
    qs = _anchors_readable(principal, repository=repository, project=project, states=states)
    found = _ranked(qs.filter(path=path).order_by("line_start", "id"), MATCH_FILE, limit, set())
    parents = path_parents(path)
    if not directory or len(found) >= limit or not parents:
        return found
    folder = parents[0]
    near = (
        qs.filter(Q(path=folder) | Q(path__startswith=f"{folder}/"))
        .exclude(path=path)
        .exclude(path__regex=rf"^{_regex_literal(folder)}/[^/]+/")  # not deeper than the directory itself
        .order_by("path", "line_start", "id")
    )
    return found + _ranked(near, MATCH_DIRECTORY, limit - len(found), {f.memory.id for f in found})


def _regex_literal(text: str) -> str:
    """``text`` matched literally in a PostgreSQL regular expression."""
    return "".join(f"\\{c}" if not c.isalnum() and c != "/" else c for c in text)


def memories_anchored_to_error(
    principal: Principal,
    signature: str,
    *,
    repository: str = "",
    project: Any = None,
    limit: int = 20,
    states: Sequence[str] = (Memory.STATE_ACTIVE,),
) -> list[AnchoredMemory]:
    """Memories anchored to the error whose signature digest is ``signature``
    (``memories.code.signatures.error_signature(output).digest``), most confident first; on the
    ``(organization, error_signature)`` index."""
    if not signature or limit <= 0:
        return []
    qs = _anchors_readable(principal, repository=repository, project=project, states=states)
    return _ranked(qs.filter(error_signature=signature).order_by("id"), MATCH_ERROR, limit, set())


def project_slug_resolve(principal: Principal, project: str | None, repository: str | None) -> str | None:
    """The project slug a call is about (docs/code-memory.md#projects-by-repository): ``project`` when
    named; else the reachable project tied to ``repository`` (any spelling of its remote); else None, and
    the usual rules apply (the token's only project, …). A remote tied to no project, or to one the token
    does not reach, is not an error: the agent works in a repository nobody tied yet."""
    if project:
        return project
    if not repository:
        return None
    tied = project_by_repository(principal, repository)
    return tied.slug if tied is not None else None
