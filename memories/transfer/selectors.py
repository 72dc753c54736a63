"""The export of a memory bank (docs/export-import.md): every memory of an organization, or of one of
its projects, with its links, lineage, signals, summaries and session ledger, as the lines of the
ReasoningBank format (``memories.transfer.export_format``; docs/export-import.md#the-format-version-2).

``export_scope`` checks the request at once (scope, project); ``export_lines`` generates the lines. The
generator reads in keyset batches (constant memory whatever the bank's size) inside one read-only
REPEATABLE READ transaction when it is not inside one already, so the file is one consistent
snapshot even while agents keep writing: every link, signal and summary it holds refers to a memory
it holds. A project's export holds the memories placed in that project; a reference from one of them
to a memory outside it (merged into a team-wide memory, a summary source elsewhere) is left out and
counted in the ``end`` line's ``dropped``. So are the promotion proposals awaiting review (``proposals``),
with their links: no memory yet, and their review item (consolidation's) is not in the file, so imported
they could never be decided; the importing organization's own promotion pass proposes them again.
Memories held in quarantine are exported as they are, ``quarantined`` with their ``flags``: imported, they
wait for review again (docs/security/memory-poisoning.md#quarantine).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.models import SCOPE_ADMIN, Project, Team
from memories.core.selectors import project_resolve
from memories.models import (
    Memory,
    MemoryLink,
    MemorySignal,
    MemorySummary,
    ProjectSignalWeights,
    SessionMemoryUse,
)
from memories.transfer import export_format as ef
from memories.transfer import lines
from reasoningbank.ai.embedders import embedder_from_settings
from reasoningbank.errors import Forbidden, InvalidInput

BATCH = 500
# memories proper, and those held in quarantine *as* quarantined (their state and flags exported), so that an
# export → import round trip keeps them waiting for review instead of making them active
EXPORTED_STATES = (*Memory.SETTLED_STATES, Memory.STATE_QUARANTINED)

MEMORY_COLUMNS = (
    "id", "project_id", "team_id", "title", "description", "content", "outcome", "tags", "kind", "state",
    "archived_reason", "archived_at", "consolidated_into_id", "consolidated_into__project_id", "tier", "retention",
    "importance", "expires_at", "prior_alpha", "prior_beta", "alpha", "beta", "confidence", "usage_count",
    "last_used_at", "last_signal_at", "origin", "promoted_from", "promoted_at", "promotion_reason", "flags",
    "created_by_user__email", "created_at", "updated_at", "embedding_model",
    "provenance", "trust", "reviewed_by__email", "reviewed_at",
    "signal_aggregate__memory_id", "signal_aggregate__last_rollup", "signal_aggregate__decayed_at",
    *(f"signal_aggregate__{name}" for name in (*ef.AGGREGATE_COUNTS, *ef.AGGREGATE_KEPT)),
)  # fmt: skip


@dataclass(frozen=True)
class ExportScope:
    """What an export covers: the whole organization, or one project (``project`` set)."""

    principal: Principal
    project: Project | None
    embeddings: bool

    def memories(self) -> QuerySet[Memory]:
        qs = access_filter(Memory, self.principal).filter(state__in=EXPORTED_STATES)
        return qs.filter(project=self.project) if self.project is not None else qs

    def of_memories(self, model: Any, *names: str) -> QuerySet[Any]:
        """Rows of ``model`` whose memory fields (``names``) all point into the export."""
        qs = access_filter(model, self.principal).filter(Q(**{f"{name}__state__in": EXPORTED_STATES for name in names}))
        if self.project is None:
            return qs
        return qs.filter(Q(**{f"{name}__project": self.project for name in names}))


def transfer_admin_require(principal: Principal, project: str | None, *, action: str) -> Project | None:
    """Export and import are for org admins (the ``admin`` scope); a token restricted to some
    projects handles one project it reaches at a time. The project named, or None (the whole org)."""
    if not principal.has_scope(SCOPE_ADMIN):
        raise Forbidden(f"{action} needs the '{SCOPE_ADMIN}' scope (organization admins)")
    resolved = project_resolve(principal, project) if project else None
    if resolved is None and principal.is_restricted:
        raise InvalidInput(
            f"this token is restricted to some projects: name one with project to {action} it", field="project"
        )
    return resolved


def export_scope(principal: Principal, *, project: str | None = None, embeddings: bool = False) -> ExportScope:
    """What an export by ``principal`` covers; raises at once for a bad request (scope, project)."""
    return ExportScope(principal, transfer_admin_require(principal, project, action="export"), embeddings)


def export_lines(scope: ExportScope) -> Iterator[str]:
    """The lines of the export, each ending with a newline (a generator: nothing is read before the
    first line is asked for)."""
    return _export_lines(scope)


def _export_lines(scope: ExportScope) -> Iterator[str]:
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield from _export_snapshot(scope)


def _export_snapshot(scope: ExportScope) -> Iterator[str]:
    org = scope.principal.organization
    projects = access_filter(Project, org).select_related("team").order_by("slug")
    teams = access_filter(Team, org).order_by("slug")
    if scope.project is not None:
        projects = projects.filter(pk=scope.project.pk)
        teams = teams.filter(pk=scope.project.team_id) if scope.project.team_id else teams.none()
    project_slugs = {p.id: p.slug for p in access_filter(Project, org)}
    team_slugs = {t.id: t.slug for t in access_filter(Team, org)}
    counts = dict.fromkeys(ef.COUNTED_TYPES, 0)
    dropped = {"consolidated_into": 0, "summary_sources": 0, "signal_projects": 0, "proposals": 0}
    if scope.project is None:  # a proposal is a team or org memory: never in a project's export
        dropped["proposals"] = access_filter(Memory, org).filter(state=Memory.STATE_PROPOSED).count()
    yield lines.line_dump(
        lines.header_record(
            exported_at=timezone.now(),
            organization=org.slug,
            project=scope.project.slug if scope.project else None,
            embedder=embedder_from_settings().name,
            embeddings=scope.embeddings,
            teams=[{"slug": t.slug, "name": t.name} for t in teams],
            projects=[{"slug": p.slug, "name": p.name, "team": p.team.slug if p.team else None} for p in projects],
        )
    )

    weights = access_filter(ProjectSignalWeights, org)
    weights = weights.filter(project=scope.project) if scope.project else weights
    for weights_row in weights.order_by("project__slug", "pk").values():
        counts["weights"] += 1
        yield lines.line_dump(
            {
                "type": "weights",
                "project": project_slugs.get(weights_row["project_id"]) if weights_row["project_id"] else None,
                **{name: weights_row[name] for name in ef.WEIGHT_PARAMETERS},  # type: ignore[literal-required]
                "updated_at": ef.when_dump(weights_row["updated_at"]),
            }
        )

    columns = (*MEMORY_COLUMNS, "embedding") if scope.embeddings else MEMORY_COLUMNS
    for row in _batches(scope.memories().values(*columns), "id"):
        inside = scope.project is None or row["consolidated_into__project_id"] == scope.project.id
        if row["consolidated_into_id"] and not inside:
            dropped["consolidated_into"] += 1
        counts["memory"] += 1
        yield lines.line_dump(_memory_line(row, project_slugs, team_slugs, inside, embeddings=scope.embeddings))

    for row in _batches(scope.of_memories(MemoryLink, "source", "target").values(), "id"):
        counts["link"] += 1
        yield lines.line_dump(
            {
                "type": "link",
                "source": row["source_id"],
                "target": row["target_id"],
                "kind": row["kind"],
                "weight": row["weight"],
                "reason": row["reason"],
                "resolved_at": ef.when_dump(row["resolved_at"]),
                "created_at": ef.when_dump(row["created_at"]),
            }
        )

    for row in _batches(scope.of_memories(MemorySignal, "memory").values(), "id"):
        counts["signal"] += 1
        signal_project = project_slugs.get(row["project_id"]) if row["project_id"] else None
        if scope.project is not None and row["project_id"] not in (None, scope.project.id):
            dropped["signal_projects"] += 1  # a signal given in another project: its place is left out
            signal_project = None
        yield lines.line_dump(
            {
                "type": "signal",
                "memory": row["memory_id"],
                "project": signal_project,
                "signal": row["type"],
                "positive": row["positive"],
                "session_id": row["session_id"],
                "comment": row["comment"],
                "actor": row["actor"],
                "confidence_after": row["confidence_after"],
                "created_at": ef.when_dump(row["created_at"]),
            }
        )

    summaries = scope.of_memories(MemorySummary, "memory").values(*_SUMMARY_COLUMNS)
    for batch in _batch_lists(summaries, "id"):
        sources = {old for row in batch for old in row["source_memory_ids"]}
        known = set(scope.memories().filter(id__in=sources).values_list("id", flat=True)) if sources else set()
        for row in batch:
            kept = [old for old in row["source_memory_ids"] if old in known]
            dropped["summary_sources"] += len(row["source_memory_ids"]) - len(kept)
            counts["summary"] += 1
            yield lines.line_dump(_summary_line(row, kept))

    for row in _batches(scope.of_memories(SessionMemoryUse, "memory").values(), "id"):
        counts["session_use"] += 1
        yield lines.line_dump(
            {
                "type": "session_use",
                "memory": row["memory_id"],
                "session_key": row["session_key"],
                "via": row["via"],
                "created_at": ef.when_dump(row["created_at"]),
                "outcome": row["outcome"],
                "outcome_at": ef.when_dump(row["outcome_at"]),
                "stability": row["stability"],
                "stability_at": ef.when_dump(row["stability_at"]),
            }
        )

    yield lines.line_dump(lines.end_record(counts, {name: n for name, n in dropped.items() if n}))


_SUMMARY_COLUMNS = (
    "id", "memory_id", "source_memory_ids", "status", "summary", "key_facts", "decisions", "superseded_facts",
    "confidence", "temporal_start", "temporal_end", "error", "raw_reply", "activation_count", "last_activated_at",
    "flags", "created_at",
)  # fmt: skip


def _batch_lists(qs: QuerySet[Any], key: str) -> Iterator[list[dict[str, Any]]]:
    """Rows of ``qs`` in batches ordered by ``key`` (keyset pagination: constant memory, no cursor)."""
    last: Any = None
    while True:
        page = qs.order_by(key)
        if last is not None:
            page = page.filter(**{f"{key}__gt": last})
        rows = list(page[:BATCH])
        if not rows:
            return
        yield rows
        last = rows[-1][key]


def _batches(qs: QuerySet[Any], key: str) -> Iterator[dict[str, Any]]:
    for rows in _batch_lists(qs, key):
        yield from rows


def _memory_line(
    row: dict[str, Any], projects: dict[int, str], teams: dict[int, str], inside: bool, *, embeddings: bool
) -> dict[str, Any]:
    import numpy as np  # here: loading the URLs (manage.py check) imports this module (docs/commands.md#start-up)

    aggregate = None
    if row["signal_aggregate__memory_id"] is not None:
        aggregate = {name: row[f"signal_aggregate__{name}"] for name in ef.AGGREGATE_COUNTS}
        aggregate["last_rollup"] = ef.when_dump(row["signal_aggregate__last_rollup"])
        aggregate.update({name: row[f"signal_aggregate__{name}"] for name in ef.AGGREGATE_KEPT})
        aggregate["decayed_at"] = ef.when_dump(row["signal_aggregate__decayed_at"])
    scope = "project" if row["project_id"] else "team" if row["team_id"] else "org"
    line = {
        "type": "memory",
        "id": row["id"],
        "scope": scope,
        "project": projects[row["project_id"]] if row["project_id"] else None,
        "team": teams[row["team_id"]] if row["team_id"] else None,
        "title": row["title"],
        "description": row["description"],
        "content": row["content"],
        "outcome": row["outcome"],
        "tags": list(row["tags"]),
        "kind": row["kind"],
        "state": row["state"],
        "archived_reason": row["archived_reason"],
        "archived_at": ef.when_dump(row["archived_at"]),
        "consolidated_into": row["consolidated_into_id"] if inside else None,
        "tier": row["tier"],
        "retention": row["retention"],
        "importance": row["importance"],
        "expires_at": ef.when_dump(row["expires_at"]),
        "prior_alpha": row["prior_alpha"],
        "prior_beta": row["prior_beta"],
        "alpha": row["alpha"],
        "beta": row["beta"],
        "confidence": row["confidence"],
        "usage_count": row["usage_count"],
        "last_used_at": ef.when_dump(row["last_used_at"]),
        "last_signal_at": ef.when_dump(row["last_signal_at"]),
        "origin": row["origin"],
        "promoted_from": row["promoted_from"],
        "promoted_at": ef.when_dump(row["promoted_at"]),
        "promotion_reason": row["promotion_reason"],
        "flags": row["flags"],
        "created_by_user": row["created_by_user__email"] or None,
        "provenance": row["provenance"] or {},  # {}: older than provenance; an import describes it from the above
        "trust": row["trust"],
        "reviewed_by": row["reviewed_by__email"] or None,
        "reviewed_at": ef.when_dump(row["reviewed_at"]),
        "created_at": ef.when_dump(row["created_at"]),
        "updated_at": ef.when_dump(row["updated_at"]),
        "signal_aggregate": aggregate,
        "embedding_model": row["embedding_model"],
    }
    if embeddings:
        vector = row["embedding"]
        # float32 in the database: each value's shortest text that reads back as the same float32
        line["embedding"] = (
            [float(str(x)) for x in np.asarray(vector, dtype=np.float32)] if vector is not None else None
        )
    return line


def _summary_line(row: dict[str, Any], sources: list[str]) -> dict[str, Any]:
    return {
        "type": "summary",
        "id": row["id"],
        "memory": row["memory_id"],
        "source_memory_ids": sources,
        "status": row["status"],
        "summary": row["summary"],
        "key_facts": row["key_facts"],
        "decisions": row["decisions"],
        "superseded_facts": row["superseded_facts"],
        "confidence": row["confidence"],
        "temporal_start": ef.when_dump(row["temporal_start"]),
        "temporal_end": ef.when_dump(row["temporal_end"]),
        "error": row["error"],
        "raw_reply": row["raw_reply"],
        "activation_count": row["activation_count"],
        "last_activated_at": ef.when_dump(row["last_activated_at"]),
        "flags": row["flags"],
        "created_at": ef.when_dump(row["created_at"]),
    }
