"""Recall at the moment of action (docs/code-memory.md#recall-at-the-moment-of-action): the memories
anchored to a file an agent is about to read or change, or to the error a command just failed with.

A path is looked up in three tiers, nearest first: anchors on the file itself, then on its directory (an
anchor on the directory, or on another file directly in it: the same module), then on a directory
further up (an anchor on that directory only: a lesson meant for everything under it). An error is looked
up by its signature's digest. Only memories in the caller's reach that the organization's injection
policy lets be injected automatically come back, each once, with the anchor that brought it — whose
state says whether the code changed since.

Two small indexed reads instead of one join: the anchors first (the (organization, path) and
(organization, error_signature) indexes), then their memories by primary key inside the reach and the
policy, leaving out in the same statement what the session's ledger holds and bringing each one's source
(its provenance label) with it. A join would let PostgreSQL read every injectable memory of a 100K bank to
meet a handful of anchors."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from django.db.models import Case, Exists, OuterRef, Q, When

from accounts.access import Principal, access_filter, reachable_projects
from accounts.models import Project
from memories.code.anchors import path_parents
from memories.core.selectors import reach_for
from memories.models import Memory, MemoryAnchor, SessionMemoryUse
from memories.trust.provenance_selectors import SOURCE_FIELDS, source_annotations
from memories.trust.selectors_injection import injection_q

TIER_ERROR, TIER_FILE, TIER_DIRECTORY = "error", "file", "directory"
# the order hits are given in: a failure now is the most pressing, then the file, then its module
TIER_ORDER = {TIER_ERROR: 0, TIER_FILE: 1, TIER_DIRECTORY: 2}
# the most anchors read per lookup: a directory with more anchored files than this is cut (by path), and
# what is returned is at most a few memories anyway
ANCHORS_READ_MAX = 200

_ANCHOR_COLUMNS = (
    "memory_id", "repository", "path", "symbol", "line_start", "line_end", "commit", "error_text", "state",
    "changed_commit",
)  # fmt: skip
_MEMORY_COLUMNS = (
    "id", "organization_id", "project_id", "team_id", "title", "description", "content", "outcome", "confidence",
    "created_at",
)  # fmt: skip


@dataclass(frozen=True)
class RecallAnchor:
    repository: str
    path: str
    symbol: str
    line_start: int | None
    line_end: int | None
    commit: str
    error_text: str
    state: str
    changed_commit: str

    @property
    def code_changed(self) -> bool:
        return self.state == MemoryAnchor.STATE_CODE_CHANGED


@dataclass(frozen=True)
class RecallHit:
    memory: Memory  # loaded with _MEMORY_COLUMNS and its source's (memory_sources_annotated reads them)
    tier: str  # error, file or directory
    anchor: RecallAnchor  # the anchor that brought it (its nearest one)


@dataclass(frozen=True)
class RecallQuery:
    repository: str = ""  # normalised; "" when unknown
    path: str = ""  # repository-relative, normalised; "" for none
    digest: str = ""  # an error signature's digest; "" for none
    project: Project | None = None
    exclude_session: str = ""  # leave out what this session's ledger says it was given


def recall_project(principal: Principal, repository: str) -> Project | None:
    """The project tied to ``repository`` (``Project.repository``) among those the principal reaches."""
    if not repository:
        return None
    return reachable_projects(principal).filter(repository=repository).first()


def code_recall_select(principal: Principal, query: RecallQuery) -> list[RecallHit]:
    """Every injectable memory in reach anchored to the query's error or path, best tier first (then
    the most confident), each once, none the session was given before."""
    anchors = _error_anchors(principal, query) + _path_anchors(principal, query)
    if not anchors:
        return []
    best: dict[str, tuple[str, RecallAnchor]] = {}
    for tier, memory_id, anchor in anchors:
        known = best.get(memory_id)
        if known is None or TIER_ORDER[tier] < TIER_ORDER[known[0]]:
            best[memory_id] = (tier, anchor)
    reach = reach_for(principal, project=query.project)
    memories = (
        access_filter(Memory, principal)
        .filter(pk__in=list(best))
        .filter(reach.memory_q())
        .filter(injection_q(principal.organization))
        .only(*_MEMORY_COLUMNS, *SOURCE_FIELDS)
        # each memory's source (who wrote it, how, when) in the same statement: the block labels every note
        .annotate(**source_annotations())
    )
    if query.exclude_session:  # in the same statement: the ledger's unique index answers it per memory
        given = SessionMemoryUse.objects.filter(
            organization_id=principal.organization.id, session_key=query.exclude_session, memory_id=OuterRef("pk")
        )
        memories = memories.exclude(Exists(given))
    hits = [RecallHit(memory, *best[memory.id]) for memory in memories]
    hits.sort(key=lambda hit: (TIER_ORDER[hit.tier], -hit.memory.confidence, hit.memory.id))
    return hits


def _anchor(row: dict[str, object]) -> RecallAnchor:
    return RecallAnchor(**{name: row[name] for name in _ANCHOR_COLUMNS if name != "memory_id"})  # type: ignore[arg-type]


def _error_anchors(principal: Principal, query: RecallQuery) -> list[tuple[str, str, RecallAnchor]]:
    if not query.digest:
        return []
    rows = (
        access_filter(MemoryAnchor, principal)
        .filter(error_signature=query.digest)
        .order_by("-created_at")
        .values(*_ANCHOR_COLUMNS)[:ANCHORS_READ_MAX]
    )
    return [(TIER_ERROR, str(row["memory_id"]), _anchor(row)) for row in rows]


def _path_anchors(principal: Principal, query: RecallQuery) -> list[tuple[str, str, RecallAnchor]]:
    """Anchors on the file, on its directory or a file directly in it, or on a directory further up —
    the file's own first, so that a busy directory never crowds them out of the rows read."""
    if not query.path:
        return []
    directory = posixpath.dirname(query.path)
    parents = path_parents(query.path)
    place = Q(path=query.path) | Q(path__in=parents)
    if directory:
        # a file directly in the directory: the prefix uses the pattern index, the expression keeps out
        # the deeper ones (another module's) in the same statement
        prefix = directory + "/"
        place |= Q(path__startswith=prefix, path__regex=rf"^{re.escape(prefix)}[^/]+$")
    rows = (
        access_filter(MemoryAnchor, principal)
        # a deleted file's anchors are not about the file of that name now (recreated, or another one)
        .exclude(state=MemoryAnchor.STATE_DELETED)
        .filter(_repository_q(query))
        .filter(place)
        .order_by(Case(When(path=query.path, then=0), default=1), "path", "id")
        .values(*_ANCHOR_COLUMNS)[:ANCHORS_READ_MAX]
    )
    return [
        (TIER_FILE if row["path"] == query.path else TIER_DIRECTORY, str(row["memory_id"]), _anchor(row))
        for row in rows
    ]


def _repository_q(query: RecallQuery) -> Q:
    """Anchors in the query's repository; an anchor that names none counts only inside the project the
    call is about (a path like ``src/app.py`` means nothing across repositories)."""
    if not query.repository:
        return Q()
    q = Q(repository=query.repository)
    if query.project is not None:
        # an EXISTS the anchors without a repository alone run, not a join: a join looks every anchor's
        # memory up, the repository's own included (a directory's hundreds of anchors, at 100K memories)
        in_project = Memory.objects.filter(pk=OuterRef("memory_id"), project=query.project)
        q |= Q(repository="") & Q(Exists(in_project))
    return q
