"""How an import writes (``memories/transfer/services.py`` decides what): the records of one checked
file in batches, inside the import's one transaction — memories embedded by the configured embedder in
batches (a file's own vectors kept when that embedder made them), every text scrubbed of secrets on
its way in, learned weights brought along only where the organization has none — counted in the
import's ``ImportResult``. Every memory's provenance says it was imported, by whom, from which file; what the
file said about it (its provenance, trust, review) is kept inside as a claim, never as this organization's
record, and its trust is pending unless the importing admin stated they reviewed the file
(docs/export-import.md#provenance).

Every memory and summary text passes the instruction-smell detector on its way in, as a recorded one does
(``memories.trust.services``; the file's own ``flags`` are never trusted): under the ``quarantine`` policy a
flagged active memory lands ``quarantined`` and a flagged ready summary ``held``; a memory or summary the
file says is held stays held, whatever the detector says now (an export → import round trip keeps the
queue); an archived one keeps its state with its findings (restoring it screens it again)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from accounts.access import Principal, access_filter
from accounts.models import Membership, Project, Team
from memories.context.services import summary_parts_stored
from memories.context.summary_parts import SummaryParts
from memories.core.fingerprint import memory_content_hash
from memories.embedding import embed_texts, memory_embedding_text, summary_embedding_text
from memories.models import (
    Memory,
    MemoryLink,
    MemorySignal,
    MemorySignalAggregate,
    MemorySummary,
    ProjectSignalWeights,
    SessionMemoryUse,
)
from memories.transfer import export_format as ef
from memories.transfer import import_checks as checks
from memories.trust import provenance as p
from memories.trust.provenance_facts import writer_by, writer_client
from memories.trust.screening import memory_texts, summary_texts
from memories.trust.services import Screening, texts_screen
from memories.validation import text_scrub
from reasoningbank.ai.embedders import embedder_from_settings

MEMORY_BATCH = 256  # memories embedded and inserted at once
ROW_BATCH = 1000

Progress = Callable[[str, int, int | None], None]


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
    # what the instruction-smell detector held for review (memories quarantined, summaries held) and what
    # it only flagged (stored active with their flags), docs/security/memory-poisoning.md#quarantine
    quarantined: int = 0
    held_summaries: int = 0
    flagged: int = 0

    # the imported memories' trust: pending (they wait for review before automatic injection) unless the
    # importing admin stated they reviewed the file
    trust: str = p.PENDING


@dataclass(frozen=True)
class ImportOrigin:
    """Where an import's memories come from, for their provenance: the file's name and format, the
    organization and time its header names, and whether the importing admin stated they reviewed it."""

    file: str = ""
    fmt: str = "reasoningbank"
    organization: str = ""
    exported_at: datetime | None = None
    reviewed: bool = False


@dataclass
class ImportPlaces:
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


# --- scrubbing ------------------------------------------------------------------------------------------------


def _scrub(text: str) -> str:
    """Every text of an imported file, as every text that enters the bank: secrets redacted, our own
    tokens revoked (docs/security/secret-scrubbing.md)."""
    return text_scrub(text, seen_in="bank.import")


def texts_scrubbed(record: dict[str, Any]) -> dict[str, Any]:
    """Every text that enters the bank has its secrets redacted (docs/security/secret-scrubbing.md): the
    same as recording does (``MemoryDraft``), so an export of this server reads back unchanged."""
    return {
        "title": _scrub(record["title"])[: ef.TITLE_MAX],
        "description": _scrub(record["description"]),
        "content": _scrub(record["content"]),
        "tags": [_scrub(tag)[: ef.TAG_MAX] for tag in record["tags"]],
    }


class ImportWriter:
    """Writes the records of one import in batches, inside the caller's transaction (foreign keys
    are checked at commit, so a record may name a memory written later in the file)."""

    def __init__(
        self,
        principal: Principal,
        places: ImportPlaces,
        ids: checks.IdMap,
        total_memories: int,
        progress: Progress | None,
        result: ImportResult,
        origin: ImportOrigin | None = None,
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
        self.origin = origin or ImportOrigin()
        self.at = timezone.now()
        self.by = writer_by(principal)
        self.client = writer_client(principal)
        self.trust = p.memory_trust_decide(how=p.HOW_IMPORTED, by=self.by, reviewed_import=self.origin.reviewed)
        result.trust = self.trust
        # "reviewed": a person vouched for the file; the reviewer is the importing user, or the token's creator
        token = principal.token
        self.reviewer = principal.user or (token.created_by if token is not None and token.created_by_id else None)
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
            self.memories.append(checks.memory_remap(record, self.ids))
            if len(self.memories) >= MEMORY_BATCH:
                self._memories_flush()
        elif kind == "summary":
            project = self.places.into or self.places.project(memory_projects[record["memory"]])
            self.summaries.append((checks.summary_remap(record, self.ids), project))
            if len(self.summaries) >= MEMORY_BATCH:
                self._summaries_flush()
        elif kind == "link":
            self._row(MemoryLink, self._link(checks.link_remap(record, self.ids)))
        elif kind == "signal":
            self._row(MemorySignal, self._signal(checks.memory_ref_remap(record, self.ids)))
        elif kind == "session_use":
            self._row(SessionMemoryUse, self._use(checks.memory_ref_remap(record, self.ids)))
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
        texts = [texts_scrubbed(record) for record in batch]
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
        vectors: Iterator[list[float]] = iter(embed_texts(to_embed)[0] if to_embed else [])
        screenings = texts_screen(
            self.org,
            [
                memory_texts(title=t["title"], description=t["description"], content=t["content"], tags=t["tags"])
                for t in texts
            ],
        )
        memories = []
        aggregates = []
        for record, text, reused, screening in zip(batch, texts, reuse, screenings, strict=True):
            memory = self._memory(record, text, record["embedding"] if reused else next(vectors))
            self._screening_apply(memory, record, screening)
            memories.append(memory)
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
            provenance=self._provenance(record),
            trust=self.trust,
            reviewed_by=self.reviewer if self.origin.reviewed else None,
            reviewed_at=self.at if self.origin.reviewed else None,
            created_at=record["created_at"],
            updated_at=record["updated_at"],
        )

    def _screening_apply(self, memory: Memory, record: dict[str, Any], screening: Screening) -> None:
        """The detector's verdict on an imported memory: an active one flagged under ``quarantine`` lands
        quarantined; a quarantined one stays so, with the file's findings when the detector has none now
        (an exception of the exporting organization)."""
        if memory.state == Memory.STATE_ACTIVE and screening.quarantined:
            memory.state = Memory.STATE_QUARANTINED
        memory.flags = screening.flags or (record["flags"] if memory.state == Memory.STATE_QUARANTINED else [])
        if memory.state == Memory.STATE_QUARANTINED:
            self.result.quarantined += 1
        elif memory.state == Memory.STATE_ACTIVE and memory.flags:
            self.result.flagged += 1

    def _provenance(self, record: dict[str, Any]) -> dict[str, Any]:
        """Imported by this principal now; what the file said about the memory kept as its claim. A file
        without a provenance for it (version 1, or a memory older than provenance) claims what its origin
        and creator say; the sources a claim lists are renamed to their new ids when the file held them."""
        claimed = dict(record.get("provenance") or {})
        if not claimed and self.origin.fmt == "reasoningbank":
            claimed = p.provenance_described(
                origin=record["origin"], at=record["created_at"], user_email=record["created_by_user"] or "",
                promoted_from=record["promoted_from"],
            )  # fmt: skip
        if claimed.get("sources"):
            claimed["sources"] = [
                {**source, "id": self.ids.memories.get(source.get("id", ""), source.get("id", ""))}
                for source in claimed["sources"]
            ]
        review = {"by": record.get("reviewed_by") or "", "at": p.text_capped(ef.when_dump(record.get("reviewed_at")))}
        imported = p.import_facts(
            file=self.origin.file,
            fmt=self.origin.fmt,
            organization=self.origin.organization,
            exported_at=ef.when_dump(self.origin.exported_at) or "",
            claimed=claimed,
            claimed_trust=record.get("trust"),
            claimed_review=review,
            claimed_flags=record.get("flags") or (),
        )
        return p.provenance_build(how=p.HOW_IMPORTED, at=self.at, by=self.by, client=self.client, imported=imported)

    # summaries

    def _summaries_flush(self) -> None:
        if not self.summaries:
            return
        batch, self.summaries = self.summaries, []
        # scrubbed, then cut back to the contract's limits, as summary_store stores consolidation's parts
        texts = [
            summary_parts_stored(
                SummaryParts(r["summary"], r["key_facts"], r["decisions"], r["superseded_facts"]),
                source_ids=r["source_memory_ids"],
                scrub=_scrub,
            )
            for r, _ in batch
        ]
        screenings = texts_screen(
            self.org,
            [
                summary_texts(
                    summary=t.summary, key_facts=t.key_facts, decisions=t.decisions, superseded_facts=t.superseded_facts
                )
                for t in texts
            ],
        )
        statuses = [self._summary_status(r, s) for (r, _), s in zip(batch, screenings, strict=True)]
        ready = [
            bool(status in (MemorySummary.STATUS_READY, MemorySummary.STATUS_HELD) and t.summary)
            for status, t in zip(statuses, texts, strict=True)
        ]
        to_embed = [summary_embedding_text(t.summary, t.key_facts) for t, ok in zip(texts, ready, strict=True) if ok]
        vectors = iter(embed_texts(to_embed)[0] if to_embed else [])
        MemorySummary.objects.bulk_create(
            [
                MemorySummary(
                    id=record["id"],
                    organization=self.org,
                    project=project,
                    memory_id=record["memory"],
                    source_memory_ids=record["source_memory_ids"],
                    consolidation_run_id="",  # runs are not exported
                    status=status,
                    flags=screening.flags or (record["flags"] if status == MemorySummary.STATUS_HELD else []),
                    summary=text.summary,
                    key_facts=text.key_facts,
                    decisions=text.decisions,
                    superseded_facts=text.superseded_facts,
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
                for (record, project), text, ok, status, screening in zip(
                    batch, texts, ready, statuses, screenings, strict=True
                )
            ]
        )

    def _summary_status(self, record: dict[str, Any], screening: Screening) -> str:
        status = str(record["status"])
        if status == MemorySummary.STATUS_READY and screening.quarantined:
            status = MemorySummary.STATUS_HELD
        if status == MemorySummary.STATUS_HELD:
            self.result.held_summaries += 1
        return status

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
