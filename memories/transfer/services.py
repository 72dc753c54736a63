"""Import of a memory bank, and the audit row of an export (docs/export-import.md; the format is
``memories.transfer.export_format``, the export ``memories.transfer.selectors``, the writing of an
import ``memories.transfer.writer``).

``bank_import`` validates everything before it writes anything: a ReasoningBank file is read twice,
first to check every line (each problem reported with its line and field; an invalid file writes
nothing) and plan the import (new ids for every memory and summary, the projects and teams to
create, the plan's limits), then again to write it in **one** transaction — all of it or nothing.
Reading twice keeps memory use flat for large files (only the ids are held between the passes).
Memories and ready summaries are embedded with the configured embedder in batches while they are
written; a file exported with embeddings of that same embedder (``embedding_model``) keeps them.

CLAUDE.md and mem0 files (``memories.transfer.import_sources``) become memories of one project. Those go
through the write gate's content rules (empty, placeholder, repeated, restated prompt: such entries
are skipped and listed; the minimum length does not apply, short rules and facts are what these
files hold), and an entry identical to an active memory of the project, or to an earlier entry, is
skipped, so importing the same file twice adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.models import Project, Team
from accounts.plans.catalogue import FEATURE_TEAMS, plan_required
from accounts.services import audit_record, flagged_write_note, project_create, team_create
from memories.core import gate
from memories.core.fingerprint import memory_content_hash
from memories.core.selectors import project_target
from memories.core.services import memory_limit_check
from memories.events import memories_added
from memories.models import (
    Memory,
    MemoryLink,
    MemorySignal,
    MemorySummary,
    SessionMemoryUse,
    new_memory_id,
    new_summary_id,
)
from memories.transfer import export_format as ef
from memories.transfer import import_checks as checks
from memories.transfer import lines
from memories.transfer.import_sources import SOURCE_FORMATS, source_records, unique_ids
from memories.transfer.selectors import transfer_admin_require
from memories.transfer.writer import ImportOrigin, ImportPlaces, ImportResult, ImportWriter, Progress, texts_scrubbed
from memories.trust.provenance import HOW_IMPORTED, memory_trust_decide
from reasoningbank.errors import InvalidInput, LimitExceeded, TooLarge

FORMATS = ("reasoningbank", *SOURCE_FORMATS)
CHECK_PROGRESS_EVERY = 5000  # lines

LineSource = str | Callable[[], Iterable[str]]


class ImportInvalid(InvalidInput):
    """An import file with problems: every one (at most ``export_format.MAX_ERRORS``) with where it is."""

    def __init__(self, errors: list[ef.LineError], *, truncated: bool = False) -> None:
        first = errors[0]
        more = len(errors) - 1
        tail = f" (and {more}{' or more' if truncated else ''} more problem{'s' * (more > 1)})" if more else ""
        super().__init__(f"Invalid import: {first}{tail}. Nothing was imported.", field=first.where)
        self.errors = errors
        self.truncated = truncated

    def by_place(self) -> dict[str, list[str]]:
        """``{"line 12": ["field outcome: …"], …}``: the REST answer's ``errors``."""
        out: dict[str, list[str]] = {}
        for error in self.errors:
            out.setdefault(error.where, []).append(
                f"field {error.field}: {error.message}" if error.field else error.message
            )
        return out


_NOUNS = {
    "memory": ("memory", "memories"),
    "link": ("link", "links"),
    "signal": ("signal", "signals"),
    "summary": ("summary", "summaries"),
    "session_use": ("session ledger row", "session ledger rows"),
    "weights": ("set of signal weights", "sets of signal weights"),
}


def counts_text(counts: dict[str, int]) -> str:
    """``3 memories, 1 link`` (the line types that have a count), or ``nothing``."""
    parts = [f"{counts[kind]} {_NOUNS[kind][counts[kind] != 1]}" for kind in _NOUNS if counts.get(kind)]
    return ", ".join(parts) or "nothing"


def vocabulary() -> ef.Vocabulary:
    """The format's enumerated values, from the models' choices."""

    def values(choices: Iterable[tuple[str, Any]]) -> tuple[str, ...]:
        return tuple(value for value, _ in choices)

    return ef.Vocabulary(
        kinds=values(Memory.KIND_CHOICES),
        outcomes=values(Memory.OUTCOME_CHOICES),
        states=values(Memory.STATE_CHOICES),
        archived_reasons=values(Memory._meta.get_field("archived_reason").choices or ()),
        tiers=values(Memory.TIER_CHOICES),
        origins=values(Memory.ORIGIN_CHOICES),
        link_kinds=values(MemoryLink.KIND_CHOICES),
        signal_types=values(MemorySignal.TYPE_CHOICES),
        summary_statuses=values(MemorySummary.STATUS_CHOICES),
        session_vias=values(SessionMemoryUse.VIA_CHOICES),
        active_state=Memory.STATE_ACTIVE,
    )


def bank_export_record(*, principal: Principal, project: Project | None, embeddings: bool) -> None:
    """The audit row of an export (written when it starts: who took the bank out, and which part)."""
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="bank.export",
        target=project,
        data={"project": project.slug if project else None, "embeddings": embeddings},
    )


# --- import ---------------------------------------------------------------------------------------------


def _lines(source: LineSource) -> Iterator[tuple[str, str]]:
    if isinstance(source, str):
        for number, line in lines.lines_split(source):
            yield f"line {number}", line
        return
    for number, line in enumerate(source(), start=1):
        line = line.rstrip("\r\n")
        if line.strip():
            yield f"line {number}", line


def _text(source: LineSource) -> str:
    return source if isinstance(source, str) else "".join(source())


def bank_import(
    *,
    principal: Principal,
    source: LineSource,
    fmt: str = "reasoningbank",
    project: str | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    max_bytes: int | None = None,
    source_name: str = "CLAUDE.md",
    file_name: str = "",
    reviewed: bool = False,
) -> ImportResult:
    """Import ``source`` (the text, or a callable returning its lines afresh, e.g. opening a file) into
    the principal's organization — or, with ``project``, into that one project. ``dry_run`` checks
    everything and writes nothing. ``ImportInvalid`` lists the problems of an invalid file.

    Every memory's provenance says it was imported by the principal from ``file_name`` (the file's own
    claims about it kept inside); it waits for review before automatic injection (trust ``pending``) unless
    ``reviewed``: the importing admin states that they read the file (audited with the import)."""
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)} (got {fmt!r})", field="format")
    if not isinstance(reviewed, bool):
        raise InvalidInput("reviewed must be true or false", field="reviewed")
    target = transfer_admin_require(principal, project, action="import")
    if max_bytes is not None and isinstance(source, str) and len(source.encode("utf-8")) > max_bytes:
        raise TooLarge(
            f"the text is {len(source.encode('utf-8'))} bytes; this endpoint imports at most {max_bytes} "
            "(IMPORT_MAX_BYTES): import larger files with manage.py import_memories",
            field="text",
        )
    now = timezone.now()
    vocab = vocabulary()
    ids = checks.IdMap(new_memory_id=new_memory_id, new_summary_id=new_summary_id)
    origin = ImportOrigin(file=file_name or (source_name if fmt != "reasoningbank" else ""), fmt=fmt, reviewed=reviewed)
    if fmt == "reasoningbank":
        return _import_bank(
            principal, source, target, vocab, ids, now, dry_run=dry_run, progress=progress, origin=origin
        )
    target = target or project_target(principal, None)
    return _import_source(
        principal, _text(source), fmt, target, vocab, ids, now, dry_run=dry_run, progress=progress,
        source_name=source_name, origin=origin,
    )  # fmt: skip


def _check(
    source: LineSource, vocab: ef.Vocabulary, ids: checks.IdMap, now: datetime, *, into_project: bool, progress: Any
) -> checks.ImportChecker:
    checker = checks.ImportChecker(vocab=vocab, now=now, ids=ids, into_project=into_project)
    seen = 0
    for where, text in _lines(source):
        checker.feed(where, text)
        seen += 1
        if progress and seen % CHECK_PROGRESS_EVERY == 0:
            progress("checked", seen, None)
    errors = checker.finish()
    if errors:
        raise ImportInvalid(errors, truncated=checker.truncated)
    if progress:
        progress("checked", seen, seen)
    return checker


def _places_plan(
    principal: Principal, checker: checks.ImportChecker, into: Project | None, result: ImportResult
) -> ImportPlaces:
    if into is not None:
        return ImportPlaces(into=into)
    org = principal.organization
    header = checker.header or {}
    listed_projects = {entry["slug"]: entry for entry in header.get("projects", [])}
    listed_teams = {entry["slug"]: entry for entry in header.get("teams", [])}
    places = ImportPlaces(team_names={slug: entry.get("name") or slug for slug, entry in listed_teams.items()})
    # the places the memories use, and every project and team the header lists (an organization's export
    # lists all of them: the import brings the same structure, empty projects included)
    project_slugs = checker.project_slugs | set(listed_projects)
    existing_projects = {p.slug: p for p in access_filter(Project, org).filter(slug__in=project_slugs)}
    wanted_teams = checker.team_slugs | set(listed_teams)
    for slug in sorted(project_slugs):
        places.projects[slug] = existing_projects.get(slug)
        if slug not in existing_projects:
            entry = listed_projects.get(slug, {})
            places.project_plans[slug] = {"name": entry.get("name") or slug, "team": entry.get("team")}
            if entry.get("team"):
                wanted_teams.add(entry["team"])
    existing_teams = {t.slug: t for t in access_filter(Team, org).filter(slug__in=wanted_teams)}
    teams_allowed = org.has_feature(FEATURE_TEAMS)
    for slug in sorted(wanted_teams):
        places.teams[slug] = existing_teams.get(slug)
        if slug in existing_teams:
            continue
        if teams_allowed:
            result.teams_created.append(slug)
            continue
        if slug in checker.team_slugs:
            raise plan_required(
                org, FEATURE_TEAMS, f"the file's team {slug!r}", field="project", instead="import it into one project"
            )
        del places.teams[slug]
        for plan in places.project_plans.values():
            if plan["team"] == slug:
                plan["team"] = None
        result.warnings.append(
            f"team {slug!r} is not created (the {org.plan} plan has no teams): its projects are created without it"
        )
    result.projects_created = sorted(places.project_plans)
    limit = org.limit("projects")
    if limit is not None and places.project_plans:
        count = access_filter(Project, org).count()
        if count + len(places.project_plans) > limit:
            raise LimitExceeded(
                f"the import needs {len(places.project_plans)} new project(s) ({', '.join(result.projects_created)}) "
                f"and the {org.plan} plan allows {limit} projects: create fewer, or import into one with project",
                field="project",
            )
    return places


def _places_create(principal: Principal, places: ImportPlaces, result: ImportResult) -> None:
    org = principal.organization
    for slug in result.teams_created:
        name = places.team_names.get(slug, slug)
        places.teams[slug] = team_create(organization=org, slug=slug, name=name, actor=principal)
    for slug, plan in sorted(places.project_plans.items()):
        team = places.teams.get(plan["team"]) if plan["team"] else None
        places.projects[slug] = project_create(
            organization=org, slug=slug, name=plan["name"], team=team, actor=principal
        )


def _import_bank(
    principal: Principal,
    source: LineSource,
    into: Project | None,
    vocab: ef.Vocabulary,
    ids: checks.IdMap,
    now: datetime,
    *,
    dry_run: bool,
    progress: Progress | None,
    origin: ImportOrigin,
) -> ImportResult:
    checker = _check(source, vocab, ids, now, into_project=into is not None, progress=progress)
    result = ImportResult(
        format="reasoningbank", dry_run=dry_run, project=into.slug if into else None, trust=_trust(origin)
    )
    places = _places_plan(principal, checker, into, result)
    memory_limit_check(principal.organization, adding=checker.active_memories)
    if dry_run:
        result.created = dict(checker.counts)
        return result
    with transaction.atomic():
        _places_create(principal, places, result)
        header = checker.header or {}
        origin = replace(origin, organization=header.get("organization") or "", exported_at=header.get("exported_at"))
        writer = ImportWriter(principal, places, ids, checker.counts["memory"], progress, result, origin)
        for where, text in _lines(source):
            try:
                record = lines.line_parse(where, text, vocab, now=now)
            except ef.LineErrorRaised as exc:  # the file changed between the two readings
                raise ImportInvalid([exc.error]) from None
            writer.add(record, memory_projects=checker.memory_projects)
        writer.flush()
        result.memory_ids = dict(ids.memories)
        _import_audit(principal, result, origin)
    return result


def _import_source(
    principal: Principal,
    text: str,
    fmt: str,
    into: Project,
    vocab: ef.Vocabulary,
    ids: checks.IdMap,
    now: datetime,
    *,
    dry_run: bool,
    progress: Progress | None,
    source_name: str,
    origin: ImportOrigin,
) -> ImportResult:
    converted = source_records(fmt, text, source_name=source_name)
    errors = list(converted.errors)
    records: list[tuple[str, dict[str, Any]]] = []
    for source in unique_ids(converted.records):
        try:
            records.append((source.where, lines.record_parse(source.record, vocab, now=now)))
        except ef.Bad as exc:
            errors.append(ef.LineError(source.where, exc.field, exc.message))
    if errors:
        raise ImportInvalid(errors[: ef.MAX_ERRORS], truncated=len(errors) > ef.MAX_ERRORS)
    result = ImportResult(format=fmt, dry_run=dry_run, project=into.slug, trust=_trust(origin))
    kept = _source_filter(principal, into, records, result)
    memory_limit_check(principal.organization, adding=len(kept))
    if dry_run:
        result.created["memory"] = len(kept)
        return result
    with transaction.atomic():
        writer = ImportWriter(principal, ImportPlaces(into=into), ids, len(kept), progress, result, origin)
        for _, record in kept:
            ids.memory_add(record["id"])
            writer.add(record, memory_projects={})
        writer.flush()
        result.memory_ids = dict(ids.memories)
        _import_audit(principal, result, origin)
    if kept:
        memories_added.send(sender=Memory, project=into, count=len(kept))  # on-demand consolidation
    return result


def _source_filter(
    principal: Principal, into: Project, records: list[tuple[str, dict[str, Any]]], result: ImportResult
) -> list[tuple[str, dict[str, Any]]]:
    """The entries worth importing: past the write gate's content rules, and not already in the project."""
    hashes = {}
    for where, record in records:
        texts = texts_scrubbed(record)
        hashes[where] = memory_content_hash(texts["title"], texts["description"], texts["content"])
    existing = dict(
        access_filter(Memory, principal)
        .filter(project=into, team=None, state=Memory.STATE_ACTIVE, content_hash__in=set(hashes.values()))
        .values_list("content_hash", "id")
    )
    seen: dict[str, str] = {}
    kept = []
    for where, record in records:
        texts = texts_scrubbed(record)
        rejection = gate.gate_check(
            title=texts["title"], description=texts["description"], content=texts["content"],
            min_content_chars=0, title_is_content=True,
        )  # fmt: skip
        content_hash = hashes[where]
        if rejection is not None:
            result.skipped.append({"where": where, "reason": rejection.reason, "message": rejection.message})
        elif content_hash in existing:
            result.skipped.append(
                {
                    "where": where,
                    "reason": "duplicate",
                    "message": f"already in the project as {existing[content_hash]}",
                }
            )
        elif content_hash in seen:
            result.skipped.append(
                {"where": where, "reason": "duplicate", "message": f"the same as {seen[content_hash]}"}
            )
        else:
            seen[content_hash] = where
            kept.append((where, record))
    return kept


def _trust(origin: ImportOrigin) -> str:
    return memory_trust_decide(how=HOW_IMPORTED, by=None, reviewed_import=origin.reviewed)


def _import_audit(principal: Principal, result: ImportResult, origin: ImportOrigin) -> None:
    held = result.quarantined + result.held_summaries
    if held:
        result.warnings.append(
            f"{result.quarantined} memories and {result.held_summaries} summaries wait in quarantine: the "
            "instruction-smell detector flagged them (or the file held them so); an admin reviews them in the "
            "review queue, until then they are not searched or injected"
        )
    if held or result.flagged:
        flagged_write_note(principal)  # an import is one write of its admin, however many it flagged
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="bank.import",
        data={
            "file": origin.file,
            # the admin stated they read the file: its memories are trusted for injection at once
            "reviewed": origin.reviewed,
            "format": result.format,
            "project": result.project,
            "created": result.created,
            "projects_created": result.projects_created,
            "teams_created": result.teams_created,
            "skipped": len(result.skipped),
            "quarantined": result.quarantined,
            "held_summaries": result.held_summaries,
            "flagged": result.flagged,
        },
    )
