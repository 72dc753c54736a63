"""Import of a memory bank, and the audit row of an export (issue 18 item 4; the format is
``memories.export_format``, the export ``memories.selectors_transfer``, README "Export and import").

``bank_import`` validates everything before it writes anything: a ReasoningBank file is read twice,
first to check every line (each problem reported with its line and field; an invalid file writes
nothing) and plan the import (new ids for every memory and summary, the projects and teams to
create, the plan's limits), then again to write it in **one** transaction — all of it or nothing.
Reading twice keeps memory use flat for large files (only the ids are held between the passes).
Memories and ready summaries are embedded with the configured embedder in batches while they are
written; a file exported with embeddings of that same embedder (``embedding_model``) keeps them.

CLAUDE.md and mem0 files (``memories.import_sources``) become memories of one project. Those go
through the write gate's content rules (empty, placeholder, repeated, restated prompt: such entries
are skipped and listed; the minimum length does not apply, short rules and facts are what these
files hold), and an entry identical to an active memory of the project, or to an earlier entry, is
skipped, so importing the same file twice adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.models import Membership, Project, Team
from accounts.plans import FEATURE_TEAMS, minimum_plan_for
from accounts.services import audit_record, project_create, team_create
from memories import export_format as ef
from memories import gate
from memories.events import memories_added
from memories.fingerprint import memory_content_hash
from memories.import_sources import SOURCE_FORMATS, source_records, unique_ids
from memories.models import (
    Memory,
    MemoryLink,
    MemorySignal,
    MemorySignalAggregate,
    MemorySummary,
    ProjectSignalWeights,
    SessionMemoryUse,
    new_memory_id,
    new_summary_id,
)
from memories.selectors import project_target
from memories.selectors_transfer import transfer_admin_require
from memories.services import _embed, memory_embedding_text, memory_limit_check, text_scrub
from memories.services_summaries import summary_embedding_text
from reasoningbank.ai.embedders import embedder_from_settings
from reasoningbank.errors import InvalidInput, LimitExceeded, PlanRequired, TooLarge

FORMATS = ("reasoningbank", *SOURCE_FORMATS)
MEMORY_BATCH = 256  # memories embedded and inserted at once
ROW_BATCH = 1000
CHECK_PROGRESS_EVERY = 5000  # lines

Progress = Callable[[str, int, int | None], None]
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


@dataclass
class ImportResult:
    format: str
    dry_run: bool
    project: str | None
    created: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ef.COUNTED_TYPES, 0))
    projects_created: list[str] = field(default_factory=list)
    teams_created: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    memory_ids: dict[str, str] = field(default_factory=dict)  # the file's ids → the new ones


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
        for number, line in ef.lines_split(source):
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
) -> ImportResult:
    """Import ``source`` (the text, or a callable returning its lines afresh, e.g. opening a file) into
    the principal's organization — or, with ``project``, into that one project. ``dry_run`` checks
    everything and writes nothing. ``ImportInvalid`` lists the problems of an invalid file."""
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)} (got {fmt!r})", field="format")
    target = transfer_admin_require(principal, project, action="import")
    if max_bytes is not None and isinstance(source, str) and len(source.encode("utf-8")) > max_bytes:
        raise TooLarge(
            f"the text is {len(source.encode('utf-8'))} bytes; this endpoint imports at most {max_bytes} "
            "(IMPORT_MAX_BYTES): import larger files with manage.py import_memories",
            field="text",
        )
    now = timezone.now()
    vocab = vocabulary()
    ids = ef.IdMap(new_memory_id=new_memory_id, new_summary_id=new_summary_id)
    if fmt == "reasoningbank":
        return _import_bank(principal, source, target, vocab, ids, now, dry_run=dry_run, progress=progress)
    target = target or project_target(principal, None)
    return _import_source(
        principal, _text(source), fmt, target, vocab, ids, now, dry_run=dry_run, progress=progress,
        source_name=source_name,
    )  # fmt: skip


def _check(
    source: LineSource, vocab: ef.Vocabulary, ids: ef.IdMap, now: datetime, *, into_project: bool, progress: Any
) -> ef.ImportChecker:
    checker = ef.ImportChecker(vocab=vocab, now=now, ids=ids, into_project=into_project)
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


@dataclass
class _Places:
    """Where the file's places land in the organization: projects and teams by slug (the ones to
    create have no row yet), or everything in one ``into`` project."""

    into: Project | None = None
    projects: dict[str, Project | None] = field(default_factory=dict)
    teams: dict[str, Team | None] = field(default_factory=dict)
    project_plans: dict[str, dict[str, Any]] = field(default_factory=dict)  # slug → name, team
    team_names: dict[str, str] = field(default_factory=dict)

    def project(self, slug: str | None) -> Project | None:
        if self.into is not None:
            return self.into if slug else None
        return self.projects[slug] if slug else None


def _places_plan(
    principal: Principal, checker: ef.ImportChecker, into: Project | None, result: ImportResult
) -> _Places:
    if into is not None:
        return _Places(into=into)
    org = principal.organization
    header = checker.header or {}
    listed_projects = {entry["slug"]: entry for entry in header.get("projects", [])}
    listed_teams = {entry["slug"]: entry for entry in header.get("teams", [])}
    places = _Places(team_names={slug: entry.get("name") or slug for slug, entry in listed_teams.items()})
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
            raise PlanRequired(
                f"the file holds memories of team {slug!r}, and teams need the {minimum_plan_for(FEATURE_TEAMS)} "
                f"plan or above (this organization is on {org.plan}): import it into one project with project",
                field="project",
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


def _places_create(principal: Principal, places: _Places, result: ImportResult) -> None:
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
    ids: ef.IdMap,
    now: datetime,
    *,
    dry_run: bool,
    progress: Progress | None,
) -> ImportResult:
    checker = _check(source, vocab, ids, now, into_project=into is not None, progress=progress)
    result = ImportResult(format="reasoningbank", dry_run=dry_run, project=into.slug if into else None)
    places = _places_plan(principal, checker, into, result)
    memory_limit_check(principal.organization, adding=checker.active_memories)
    if dry_run:
        result.created = dict(checker.counts)
        return result
    with transaction.atomic():
        _places_create(principal, places, result)
        writer = _Writer(principal, places, ids, checker.counts["memory"], progress, result)
        for where, text in _lines(source):
            try:
                record = ef.line_parse(where, text, vocab, now=now)
            except ef.LineErrorRaised as exc:  # the file changed between the two readings
                raise ImportInvalid([exc.error]) from None
            writer.add(record, memory_projects=checker.memory_projects)
        writer.flush()
        result.memory_ids = dict(ids.memories)
        _import_audit(principal, result)
    return result


def _import_source(
    principal: Principal,
    text: str,
    fmt: str,
    into: Project,
    vocab: ef.Vocabulary,
    ids: ef.IdMap,
    now: datetime,
    *,
    dry_run: bool,
    progress: Progress | None,
    source_name: str,
) -> ImportResult:
    converted = source_records(fmt, text, source_name=source_name)
    errors = list(converted.errors)
    records: list[tuple[str, dict[str, Any]]] = []
    for source in unique_ids(converted.records):
        try:
            records.append((source.where, ef.record_parse(source.record, vocab, now=now)))
        except ef.Bad as exc:
            errors.append(ef.LineError(source.where, exc.field, exc.message))
    if errors:
        raise ImportInvalid(errors[: ef.MAX_ERRORS], truncated=len(errors) > ef.MAX_ERRORS)
    result = ImportResult(format=fmt, dry_run=dry_run, project=into.slug)
    kept = _source_filter(principal, into, records, result)
    memory_limit_check(principal.organization, adding=len(kept))
    if dry_run:
        result.created["memory"] = len(kept)
        return result
    with transaction.atomic():
        writer = _Writer(principal, _Places(into=into), ids, len(kept), progress, result)
        for _, record in kept:
            ids.memory_add(record["id"])
            writer.add(record, memory_projects={})
        writer.flush()
        result.memory_ids = dict(ids.memories)
        _import_audit(principal, result)
    if kept:
        memories_added.send(sender=Memory, project=into, count=len(kept))  # on-demand consolidation
    return result


def _source_filter(
    principal: Principal, into: Project, records: list[tuple[str, dict[str, Any]]], result: ImportResult
) -> list[tuple[str, dict[str, Any]]]:
    """The entries worth importing: past the write gate's content rules, and not already in the project."""
    hashes = {}
    for where, record in records:
        texts = _scrubbed_texts(record)
        hashes[where] = memory_content_hash(texts["title"], texts["description"], texts["content"])
    existing = dict(
        access_filter(Memory, principal)
        .filter(project=into, team=None, state=Memory.STATE_ACTIVE, content_hash__in=set(hashes.values()))
        .values_list("content_hash", "id")
    )
    seen: dict[str, str] = {}
    kept = []
    for where, record in records:
        texts = _scrubbed_texts(record)
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


def _import_audit(principal: Principal, result: ImportResult) -> None:
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="bank.import",
        data={
            "format": result.format,
            "project": result.project,
            "created": result.created,
            "projects_created": result.projects_created,
            "teams_created": result.teams_created,
            "skipped": len(result.skipped),
        },
    )


# --- writing ------------------------------------------------------------------------------------------------


def _scrub(text: str) -> str:
    """Every text of an imported file, as every text that enters the bank: secrets redacted, our own
    tokens revoked (docs/security/secret-scrubbing.md)."""
    return text_scrub(text, seen_in="bank.import")


def _scrubbed_texts(record: dict[str, Any]) -> dict[str, Any]:
    """Every text that enters the bank has its secrets redacted (README "Secrets"): the same as
    recording does (``MemoryDraft``), so an export of this server reads back unchanged."""
    return {
        "title": _scrub(record["title"])[: ef.TITLE_MAX],
        "description": _scrub(record["description"]),
        "content": _scrub(record["content"]),
        "tags": [_scrub(tag)[: ef.TAG_MAX] for tag in record["tags"]],
    }


def _scrubbed_json(value: Any) -> Any:
    if isinstance(value, str):
        return _scrub(value)
    if isinstance(value, list):
        return [_scrubbed_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _scrubbed_json(item) for key, item in value.items()}
    return value


class _Writer:
    """Writes the records of one import in batches, inside the caller's transaction (foreign keys
    are checked at commit, so a record may name a memory written later in the file)."""

    def __init__(
        self,
        principal: Principal,
        places: _Places,
        ids: ef.IdMap,
        total_memories: int,
        progress: Progress | None,
        result: ImportResult,
    ) -> None:
        self.principal = principal
        self.org = principal.organization
        self.places = places
        self.ids = ids
        self.total = total_memories
        self.progress = progress
        self.result = result
        self.embedder = embedder_from_settings()
        self.users = {
            m.user.email.lower(): m.user
            for m in access_filter(Membership, self.org).select_related("user")
            if m.user.email
        }
        self.existing_weights: set[int | None] = {
            project_id
            for project_id in access_filter(ProjectSignalWeights, self.org).values_list("project_id", flat=True)
        }
        self.memories: list[dict[str, Any]] = []
        self.summaries: list[tuple[dict[str, Any], Project | None]] = []
        self.rows: dict[type, list[Any]] = {MemoryLink: [], MemorySignal: [], SessionMemoryUse: []}
        self.written = 0

    def add(self, record: dict[str, Any], *, memory_projects: dict[str, str]) -> None:
        kind = record["type"]
        if kind in ("header", "end"):
            return
        self.result.created[kind] += 1
        if kind == "memory":
            self.memories.append(ef.memory_remap(record, self.ids))
            if len(self.memories) >= MEMORY_BATCH:
                self._memories_flush()
        elif kind == "summary":
            project = self.places.into or self.places.project(memory_projects[record["memory"]])
            self.summaries.append((ef.summary_remap(record, self.ids), project))
            if len(self.summaries) >= MEMORY_BATCH:
                self._summaries_flush()
        elif kind == "link":
            self._row(MemoryLink, self._link(ef.link_remap(record, self.ids)))
        elif kind == "signal":
            self._row(MemorySignal, self._signal(ef.memory_ref_remap(record, self.ids)))
        elif kind == "session_use":
            self._row(SessionMemoryUse, self._use(ef.memory_ref_remap(record, self.ids)))
        elif kind == "weights":
            self._weights(record)

    def flush(self) -> None:
        self._memories_flush()
        self._summaries_flush()
        for model in self.rows:
            self._rows_flush(model)

    # memories

    def _memories_flush(self) -> None:
        if not self.memories:
            return
        batch, self.memories = self.memories, []
        texts = [_scrubbed_texts(record) for record in batch]
        reuse = [
            record["embedding"] is not None
            and record["embedding_model"] == self.embedder.name
            and len(record["embedding"]) == self.embedder.dimensions
            for record in batch
        ]
        to_embed = [
            memory_embedding_text(t["title"], t["description"], t["content"])
            for t, r in zip(texts, reuse, strict=True)
            if not r
        ]
        vectors: Iterator[list[float]] = iter(_embed(to_embed)[0] if to_embed else [])
        memories = []
        aggregates = []
        for record, text, reused in zip(batch, texts, reuse, strict=True):
            memories.append(self._memory(record, text, record["embedding"] if reused else next(vectors)))
            aggregate = record["signal_aggregate"]
            if aggregate is not None:
                aggregates.append(MemorySignalAggregate(memory_id=record["id"], organization=self.org, **aggregate))
        Memory.objects.bulk_create(memories)
        MemorySignalAggregate.objects.bulk_create(aggregates)
        self.written += len(memories)
        if self.progress:
            self.progress("memories", self.written, self.total)

    def _memory(self, record: dict[str, Any], text: dict[str, Any], vector: list[float]) -> Memory:
        project = self.places.project(record["project"])
        team = None
        if self.places.into is None and record["team"]:
            team = self.places.teams[record["team"]]
        elif self.places.into is not None:
            project = self.places.into  # every memory of the file lands in the one project
        email = (record["created_by_user"] or "").lower()
        return Memory(
            id=record["id"],
            organization=self.org,
            project=project,
            team=team,
            title=text["title"],
            description=text["description"],
            content=text["content"],
            content_hash=memory_content_hash(text["title"], text["description"], text["content"]),
            outcome=record["outcome"],
            tags=text["tags"],
            kind=record["kind"],
            state=record["state"],
            archived_reason=record["archived_reason"],
            archived_at=record["archived_at"],
            consolidated_into_id=record["consolidated_into"],
            tier=record["tier"],
            retention=record["retention"],
            importance=record["importance"],
            expires_at=record["expires_at"],
            prior_alpha=record["prior_alpha"],
            prior_beta=record["prior_beta"],
            alpha=record["alpha"],
            beta=record["beta"],
            confidence=record["confidence"],
            usage_count=record["usage_count"],
            last_used_at=record["last_used_at"],
            last_signal_at=record["last_signal_at"],
            embedding=vector,
            embedding_model=self.embedder.name,
            origin=record["origin"],
            promoted_from=record["promoted_from"],
            promoted_at=record["promoted_at"],
            promotion_reason=_scrub(record["promotion_reason"])[: ef.PROMOTION_REASON_MAX],
            created_by_user=self.users.get(email) if email else None,
            created_at=record["created_at"],
            updated_at=record["updated_at"],
        )

    # summaries

    def _summaries_flush(self) -> None:
        if not self.summaries:
            return
        batch, self.summaries = self.summaries, []
        texts: list[dict[str, Any]] = [
            {"summary": _scrub(r["summary"]), "key_facts": [_scrub(f) for f in r["key_facts"]]} for r, _ in batch
        ]
        ready = [
            bool(r["status"] == MemorySummary.STATUS_READY and t["summary"])
            for (r, _), t in zip(batch, texts, strict=True)
        ]
        to_embed = [
            summary_embedding_text(t["summary"], t["key_facts"]) for t, ok in zip(texts, ready, strict=True) if ok
        ]
        vectors = iter(_embed(to_embed)[0] if to_embed else [])
        MemorySummary.objects.bulk_create(
            [
                MemorySummary(
                    id=record["id"],
                    organization=self.org,
                    project=project,
                    memory_id=record["memory"],
                    source_memory_ids=record["source_memory_ids"],
                    consolidation_run_id="",  # runs are not exported
                    status=record["status"],
                    summary=text["summary"],
                    key_facts=text["key_facts"],
                    decisions=_scrubbed_json(record["decisions"]),
                    superseded_facts=_scrubbed_json(record["superseded_facts"]),
                    confidence=record["confidence"],
                    temporal_start=record["temporal_start"],
                    temporal_end=record["temporal_end"],
                    error=_scrub(record["error"]),
                    raw_reply=_scrub(record["raw_reply"]),
                    embedding=next(vectors) if ok else None,
                    embedding_model=self.embedder.name if ok else "",
                    activation_count=record["activation_count"],
                    last_activated_at=record["last_activated_at"],
                    created_at=record["created_at"],
                )
                for (record, project), text, ok in zip(batch, texts, ready, strict=True)
            ]
        )

    # the rest

    def _row(self, model: type, row: Any) -> None:
        self.rows[model].append(row)
        if len(self.rows[model]) >= ROW_BATCH:
            self._rows_flush(model)

    def _rows_flush(self, model: Any) -> None:
        rows, self.rows[model] = self.rows[model], []
        if rows:
            model.objects.bulk_create(rows)

    def _link(self, record: dict[str, Any]) -> MemoryLink:
        return MemoryLink(
            organization=self.org,
            source_id=record["source"],
            target_id=record["target"],
            kind=record["kind"],
            weight=record["weight"],
            reason=_scrub(record["reason"]),
            resolved_at=record["resolved_at"],
            created_at=record["created_at"],
        )

    def _signal(self, record: dict[str, Any]) -> MemorySignal:
        return MemorySignal(
            organization=self.org,
            memory_id=record["memory"],
            project=self.places.project(record["project"]),
            type=record["signal"],
            positive=record["positive"],
            session_id=record["session_id"],
            comment=_scrub(record["comment"]),
            actor=_scrub(record["actor"])[: ef.ACTOR_MAX],
            confidence_after=record["confidence_after"],
            created_at=record["created_at"],
        )

    def _use(self, record: dict[str, Any]) -> SessionMemoryUse:
        return SessionMemoryUse(
            organization=self.org,
            session_key=record["session_key"],
            memory_id=record["memory"],
            via=record["via"],
            created_at=record["created_at"],
            outcome=record["outcome"],
            outcome_at=record["outcome_at"],
            stability=record["stability"],
            stability_at=record["stability_at"],
        )

    def _weights(self, record: dict[str, Any]) -> None:
        """Learned weights come along only where the organization has none yet (a project's own
        learning is never overwritten)."""
        project = self.places.project(record["project"])
        key = project.id if project is not None else None
        if key in self.existing_weights:
            self.result.created["weights"] -= 1
            self.result.warnings.append(
                f"the learned signal weights of {project.slug if project else 'the organization'} are kept "
                "(they exist already); the file's are not imported"
            )
            return
        self.existing_weights.add(key)
        ProjectSignalWeights.objects.create(
            organization=self.org,
            project=project,
            **{name: record[name] for name in ef.WEIGHT_PARAMETERS},
            updated_at=record["updated_at"],
        )
