"""The core writes of memories: record (behind the write gate and the duplicate checks), update,
re-embed, and ``memories_create``, the one insert every path that makes memories goes through
(recording, distillation, consolidation, promotion). Archive and restore are moderation's
(``memories/moderation/services.py``), the confidence signals ``memories/confidence/services.py``'s.

Every function takes the acting ``Principal`` (tenant + rights) explicitly, validates its input
into a clear ``ServiceError`` before touching the database, and runs in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from pgvector.django import CosineDistance

from accounts.access import Principal
from accounts.models import Project
from accounts.services import audit_record
from memories.code.services import AnchorDraft, anchors_clean, anchors_create, anchors_replace, memory_repository
from memories.confidence import bayes as conf
from memories.core import gate
from memories.core.fingerprint import memory_content_hash
from memories.core.kinds import DEFAULT_IMPORTANCE, KIND_IMPORTANCE
from memories.core.selectors import memory_is_writable, project_resolve, project_target
from memories.embedding import embed_texts, memory_embedding_text
from memories.events import memories_added, memory_quarantined_announce
from memories.models import Memory
from memories.trust.provenance import HOW_DISTILLED
from memories.trust.provenance_facts import ProvenanceInput, memory_provenance
from memories.trust.screening import flag_message, quarantine_message, rules_named
from memories.trust.services import Screening, drafts_screen, flagged_writes_note, memories_flagged_audit
from memories.validation import (
    CONTENT_MAX,
    DESCRIPTION_MAX,
    KINDS,
    RECORD_OUTCOMES,
    TAG_MAX,
    TITLE_MAX,
    WRITE_SCOPES,
    choice_check,
    tags_clean,
    text_clean,
    text_scrub,
    write_scope_require,
)
from reasoningbank.ai.embedders import embedder_from_settings
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, LimitExceeded, Rejected
from reasoningbank.tracing import traced

logger = logging.getLogger(__name__)

# --- record / update / archive ---------------------------------------------------------------------


def place_resolve(principal: Principal, *, project: str | None, scope: str | None) -> tuple[Project | None, Any]:
    """Where a new memory goes: (project, team). Project-restricted tokens write to their project;
    team and org scope need a token that reaches that team / the whole org."""
    scope = choice_check(scope or "project", "scope", WRITE_SCOPES)
    if scope == "project":
        return project_target(principal, project), None
    resolved = project_resolve(principal, project)
    if scope == "team":
        resolved = resolved or project_target(principal, None)  # the only project, as for scope project
        if resolved.team_id is None:
            # a well-formed request that the project's current setup forbids: a 409, not a 400
            raise Conflict(
                f"team scope needs a project that belongs to a team, and project {resolved.slug!r} is in none: "
                "use scope project or org, or put the project in a team",
                field="scope",
            )
        if principal.is_restricted and resolved.team_id not in (principal.team_ids or ()):
            raise Forbidden("this token may not write team-wide memories")
        return None, resolved.team
    if principal.is_restricted:
        raise Forbidden("this token is restricted to some projects/teams and may not write org-wide memories")
    return None, None


@dataclass(frozen=True)
class MemoryDraft:
    """Validated content of a new memory (shared by record, update, distillation and consolidation).

    Every text is scrubbed of secrets here, on construction, so that no path into the bank can skip it:
    a memory is served to every token of its org (docs/security/secret-scrubbing.md#what-is-scrubbed).
    Scrubbing comes before the embedding, which is computed from these fields.
    """

    title: str
    description: str
    content: str
    outcome: str
    tags: list[str]
    kind: str = Memory.KIND_PROCEDURAL

    def __post_init__(self) -> None:
        # a redaction marker can be longer than what it replaced: the title column has a limit
        object.__setattr__(self, "title", text_scrub(self.title, seen_in="memory")[:TITLE_MAX])
        object.__setattr__(self, "description", text_scrub(self.description, seen_in="memory"))
        object.__setattr__(self, "content", text_scrub(self.content, seen_in="memory"))
        object.__setattr__(self, "tags", [text_scrub(tag, seen_in="memory")[:TAG_MAX] for tag in self.tags])


# --- the write gate (the rules are memories/core/gate.py) ---------------------------------------

REJECTED_VERB = "memory.rejected"


def memory_gate(
    draft: MemoryDraft, *, prompts: Sequence[str] = (), title_is_content: bool = False
) -> gate.Rejection | None:
    """Why this (scrubbed) draft may not enter the bank, or None: every write path asks."""
    return gate.gate_check(
        title=draft.title,
        description=draft.description,
        content=draft.content,
        min_content_chars=settings.WRITE_GATE_MIN_CONTENT_CHARS,
        prompts=prompts,
        title_is_content=title_is_content,
    )


def memory_rejection_record(
    *,
    organization: Any,
    actor: Principal | None,
    project: Project | None,
    source: str,
    reason: str,
    field: str,
    message: str,
    title: str,
    data: dict[str, Any] | None = None,
) -> None:
    """One ``memory.rejected`` audit row: what the gate kept out, where and why (the quality report
    counts them per project). Written outside the refused write's transaction."""
    audit_record(
        organization=organization,
        actor=actor,
        verb=REJECTED_VERB,
        data={
            "project": project.id if project is not None else None,
            "source": source,
            "reason": reason,
            "field": field,
            "message": message,
            "title": title[:200],
            **(data or {}),
        },
    )


def _gate_refuse(principal: Principal, project: Project | None, draft: MemoryDraft, source: str, **data: Any) -> None:
    """Raise the gate's refusal (a 422 naming the field), after writing the rejection's audit row."""
    rejection = memory_gate(draft)
    if rejection is None:
        return
    memory_rejection_record(
        organization=principal.organization,
        actor=principal,
        project=project,
        source=source,
        reason=rejection.reason,
        field=rejection.field,
        message=rejection.message,
        title=draft.title,
        data=data,
    )
    raise Rejected(rejection.message, field=rejection.field, code=f"rejected_{rejection.reason}")


def memory_draft(
    *, title: Any, description: Any, content: Any, outcome: Any, tags: Any = None, kind: Any = None
) -> MemoryDraft:
    return MemoryDraft(
        title=text_clean(title, "title", TITLE_MAX),
        description=text_clean(description, "description", DESCRIPTION_MAX),
        content=text_clean(content, "content", CONTENT_MAX),
        outcome=choice_check(outcome, "outcome", RECORD_OUTCOMES),
        tags=tags_clean(tags),
        kind=choice_check(kind or Memory.KIND_PROCEDURAL, "kind", KINDS),
    )


def memories_create(
    *,
    principal: Principal,
    drafts: Sequence[MemoryDraft],
    project: Project | None,
    team: Any = None,
    origin: str = Memory.ORIGIN_RECORDED,
    initial_confidence: float = conf.INITIAL_EXPLICIT,
    source_session: Any = None,
    vectors: Sequence[list[float]] | None = None,
    provenance: ProvenanceInput | None = None,
) -> list[Memory]:
    """Insert validated drafts (embedding them unless vectors are given). Caller holds the transaction.

    Every draft passes the instruction-smell detector here (``memories.trust.services.drafts_screen``),
    so no path that makes memories skips it:
    under the organization's ``quarantine`` policy a flagged draft is stored ``quarantined`` (the caller
    sees it in ``state``), under ``flag`` active with its ``flags``
    (docs/security/memory-poisoning.md#quarantine). A quarantined memory is not counted against the
    plan's active memories until an admin approves it.

    Each memory gets its provenance — who (``principal``), through which client (the request's), how
    (``provenance``: recorded unless the caller says otherwise, with its session, run, sources or import) —
    and the trust decided from it (docs/security/memory-poisoning.md#provenance)."""
    org = principal.organization
    screenings = drafts_screen(org, drafts)
    memory_limit_check(org, adding=sum(1 for screening in screenings if not screening.quarantined))
    embedder_name = ""
    if vectors is None:
        vectors, embedder_name = embed_texts([memory_embedding_text(d.title, d.description, d.content) for d in drafts])
    else:
        embedder_name = embedder_from_settings().name
    prior_alpha, prior_beta = conf.confidence_prior(initial_confidence)
    now = timezone.now()
    if provenance is None:  # recorded; distilled from ``source_session`` when that is the origin
        distilled = origin == Memory.ORIGIN_DISTILLED and source_session is not None
        provenance = ProvenanceInput(how=HOW_DISTILLED, session=source_session) if distilled else ProvenanceInput()
    written, trust = memory_provenance(principal, provenance, at=now)
    memories = [
        Memory(
            organization=org,
            project=project,
            team=team,
            title=d.title,
            description=d.description,
            content=d.content,
            content_hash=memory_content_hash(d.title, d.description, d.content),
            outcome=d.outcome,
            tags=d.tags,
            kind=d.kind,
            prior_alpha=prior_alpha,
            prior_beta=prior_beta,
            alpha=prior_alpha,
            beta=prior_beta,
            confidence=initial_confidence,
            importance=_importance_for(d.kind),
            expires_at=now + timedelta(minutes=30) if d.kind == Memory.KIND_WORKING else None,
            embedding=vector,
            embedding_model=embedder_name,
            origin=origin,
            source_session=source_session,
            created_by_token=principal.token,
            created_by_user=principal.user,
            state=Memory.STATE_QUARANTINED if screening.quarantined else Memory.STATE_ACTIVE,
            flags=screening.flags,
            provenance=written,
            trust=trust,
            created_at=now,
            updated_at=now,
        )
        for d, vector, screening in zip(drafts, vectors, screenings, strict=True)
    ]
    for memory in memories:
        memory.save(force_insert=True)
    memories_flagged_audit(principal, memories)
    flagged_writes_note(principal, screenings)
    return memories


def memory_limit_check(org: Any, *, adding: int) -> None:
    limit = org.limit("memories")
    if limit is not None:
        active = Memory.objects.filter(organization=org, state=Memory.STATE_ACTIVE).count()
        if active + adding > limit:
            raise LimitExceeded(f"the {org.plan} plan allows {limit} active memories; archive some or upgrade")


def _importance_for(kind: str) -> float:
    return float(KIND_IMPORTANCE.get(kind, DEFAULT_IMPORTANCE))


@dataclass(frozen=True)
class RecordResult:
    """What recording did: ``duplicate`` means an identical active memory (``reason`` ``identical``),
    or a near copy of one (``near_copy``, with the ``similarity``), was already there, and ``memory``
    is that one (nothing was written)."""

    memory: Memory
    duplicate: bool = False
    reason: str = ""
    similarity: float | None = None

    @property
    def status(self) -> str:
        """``duplicate`` (nothing written), ``quarantined`` (stored, held for an admin's review),
        ``flagged`` (stored active with the detector's flags) or ``recorded``."""
        if self.duplicate:
            return "duplicate"
        if self.memory.state == Memory.STATE_QUARANTINED:
            return "quarantined"
        return "flagged" if self.memory.flags else "recorded"

    @property
    def message(self) -> str:
        """The sentence REST and MCP answer with."""
        if self.duplicate and self.reason == gate.NEAR_COPY and self.similarity is not None:
            return gate.near_copy_message(self.memory.id, self.similarity)
        if self.duplicate:
            return (
                f"An identical memory already exists ({self.memory.id}, same place, text, outcome and kind); "
                "nothing was recorded"
            )
        if self.status == "quarantined":
            return quarantine_message(self.memory.flags)
        if self.status == "flagged":
            return flag_message(self.memory.flags)
        return "Memory recorded successfully"


def memory_record(
    *,
    principal: Principal,
    title: Any,
    description: Any,
    content: Any,
    outcome: Any,
    tags: Any = None,
    kind: Any = None,
    project: str | None = None,
    scope: str | None = None,
    anchors: Any = None,
) -> Memory:
    """``memory_record_or_duplicate``'s memory: the new one, or the identical one already there."""
    return memory_record_or_duplicate(
        principal=principal, title=title, description=description, content=content, outcome=outcome, tags=tags,
        kind=kind, project=project, scope=scope, anchors=anchors,
    ).memory


@traced(
    "memory.record",
    result=lambda r: {
        "memory_id": r.memory.id,
        "project_id": r.memory.project_id,
        "org_id": r.memory.organization_id,
        "kind": r.memory.kind,
        "outcome": r.memory.outcome,
        "tier": r.memory.tier,
        "content_length": len(r.memory.content),
        "duplicate": r.duplicate,
        "duplicate_reason": r.reason or None,
    },
)
def memory_record_or_duplicate(
    *,
    principal: Principal,
    title: Any,
    description: Any,
    content: Any,
    outcome: Any,
    tags: Any = None,
    kind: Any = None,
    project: str | None = None,
    scope: str | None = None,
    anchors: Any = None,
) -> RecordResult:
    """``memory_record``: an explicitly captured strategy, initial confidence 0.8.

    An identical record creates nothing: when an active memory of the same place (the same project, or
    the same team- or org-wide scope) already has the same title, description and content (case and runs
    of whitespace ignored), outcome and kind, that memory comes back as the duplicate; no embedding, no
    row, no audit event (docs/memory-model.md#how-a-memory-enters-the-bank).

    The write gate comes first: a draft without reusable value (``memories.core.gate``) is a 422
    naming the field, with a ``memory.rejected`` audit row. A near copy — embedding at least
    ``WRITE_GATE_NEAR_COPY_SIMILARITY`` alike to an active memory of the same place, outcome and kind,
    and no differing numbers, negations or opposite words — is answered like an identical one
    (``reason`` ``near_copy`` with the similarity), audited as a rejection, nothing recorded.

    ``anchors`` (docs/code-memory.md#anchors) are checked with the rest and written with a new memory; a
    duplicate keeps its own."""
    write_scope_require(principal)
    draft = memory_draft(title=title, description=description, content=content, outcome=outcome, tags=tags, kind=kind)
    target_project, team = place_resolve(principal, project=project, scope=scope)
    places = anchors_clean(anchors, repository=target_project.repository if target_project is not None else "")
    # outside the transaction below: the refusal's audit row must outlive the refused write
    _gate_refuse(principal, target_project, draft, "record")
    with transaction.atomic():
        return _record(principal, draft, target_project, team, places)


def _record(
    principal: Principal, draft: MemoryDraft, target_project: Project | None, team: Any, places: list[AnchorDraft]
) -> RecordResult:
    existing = _identical_memory(principal.organization, target_project, team, draft)
    if existing is not None:
        return RecordResult(existing, duplicate=True, reason="identical")
    (vector,), _ = embed_texts([memory_embedding_text(draft.title, draft.description, draft.content)])
    twin = _near_copy(principal.organization, target_project, team, draft, vector)
    if twin is not None:
        copy, similarity = twin
        memory_rejection_record(
            organization=principal.organization,
            actor=principal,
            project=target_project,
            source="record",
            reason=gate.NEAR_COPY,
            field="content",
            message=gate.near_copy_message(copy.id, similarity),
            title=draft.title,
            data={"duplicate_of": copy.id, "similarity": round(similarity, 4)},
        )
        return RecordResult(copy, duplicate=True, reason=gate.NEAR_COPY, similarity=similarity)
    (memory,) = memories_create(
        principal=principal, drafts=[draft], project=target_project, team=team, vectors=[vector]
    )
    anchors_create(memory=memory, anchors=places)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.record",
        target=memory,
        data={"title": memory.title, "scope": memory.scope},
    )
    memories_added_notify(target_project, 1)
    return RecordResult(memory)


def _identical_memory(org: Any, project: Project | None, team: Any, draft: MemoryDraft) -> Memory | None:
    """The active memory of this place whose text, outcome and kind are the draft's, if any.

    A transaction-scoped advisory lock on (org, place, text) serialises identical records: of two at
    once, the second waits for the first to commit, then finds its memory. Not a unique index:
    restoring or un-merging an archived memory, or distilling a lesson again, may rightly make an
    identical active copy (consolidation merges those); only a record must not add one."""
    content_hash = memory_content_hash(draft.title, draft.description, draft.content)
    key = f"memory_record:{org.id}:{project.id if project else ''}:{team.id if team else ''}:{content_hash}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])
    return (
        Memory.objects.filter(
            organization=org,
            project=project,
            team=team,
            content_hash=content_hash,
            state=Memory.STATE_ACTIVE,
            outcome=draft.outcome,
            kind=draft.kind,
        )
        .exclude(expires_at__lte=timezone.now())  # a working memory past its time is as good as gone
        .order_by("created_at", "id")
        .first()
    )


def _near_copy(
    org: Any, project: Project | None, team: Any, draft: MemoryDraft, vector: list[float]
) -> tuple[Memory, float] | None:
    """The active memory of this place, outcome and kind nearest to the draft, when it is at least
    ``WRITE_GATE_NEAR_COPY_SIMILARITY`` alike and says the same (``gate.substantive_differences``)."""
    threshold = float(settings.WRITE_GATE_NEAR_COPY_SIMILARITY)
    if threshold >= 1.0:
        return None
    nearest = list(
        Memory.objects.filter(
            organization=org,
            project=project,
            team=team,
            state=Memory.STATE_ACTIVE,
            outcome=draft.outcome,
            kind=draft.kind,
            embedding__isnull=False,
        )
        .exclude(expires_at__lte=timezone.now())
        .defer("embedding")
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance")[:3]  # the index's nearest few (a distance filter would make it scan on)
    )
    text = memory_embedding_text(draft.title, draft.description, draft.content)
    for candidate in nearest:
        if 1.0 - float(candidate.distance) < threshold:  # type: ignore[attr-defined]
            break
        other = memory_embedding_text(candidate.title, candidate.description, candidate.content)
        if not gate.substantive_differences(text, other):
            return candidate, 1.0 - float(candidate.distance)  # type: ignore[attr-defined]
    return None


def memories_added_notify(project: Project | None, count: int) -> None:
    """Hook for on-demand consolidation (after ``CONSOLIDATION_ON_DEMAND_THRESHOLD`` new memories,
    docs/consolidation.md#what-starts-a-run); wired by the consolidation app."""
    if project is not None:
        memories_added.send(sender=Memory, project=project, count=count)


UPDATABLE = ("title", "description", "content", "outcome", "tags", "kind")


def memory_update(*, principal: Principal, memory: Memory, changes: dict[str, Any]) -> Memory:
    """Change a memory's text, outcome, tags or kind. A changed text passes the write gate (a 400
    naming the field, audited as ``memory.rejected``); tags or kind alone never do, so a memory from
    before the gate keeps its edits.

    A changed text or tags pass the instruction-smell detector as a new memory does: under the
    ``quarantine`` policy a flagged edit puts an active memory in quarantine (until an admin approves
    it), and a clean edit of a quarantined one makes it active again — what held it is gone. An archived
    memory stays archived with its new ``flags`` (restoring it applies them). ``anchors`` replace its anchors."""
    write_scope_require(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    changes = dict(changes)
    repository = memory_repository(memory)
    places = anchors_clean(changes.pop("anchors"), repository=repository) if "anchors" in changes else None
    unknown = sorted(set(changes) - set(UPDATABLE))
    if unknown:
        raise InvalidInput(f"cannot update {', '.join(unknown)}; updatable: {', '.join(UPDATABLE)}", field=unknown[0])
    if {"title", "description", "content"} & set(changes):
        merged = {name: changes.get(name, getattr(memory, name)) for name in UPDATABLE}
        _gate_refuse(principal, memory.project, memory_draft(**merged), "update", memory=memory.id)
    with transaction.atomic():
        return _update(principal, memory, changes, places)


def _update(principal: Principal, memory: Memory, changes: dict[str, Any], places: list[AnchorDraft] | None) -> Memory:
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    merged = {name: changes.get(name, getattr(memory, name)) for name in UPDATABLE}
    draft = memory_draft(**merged)
    before = {name: getattr(memory, name) for name in changes}
    for name in UPDATABLE:
        setattr(memory, name, getattr(draft, name))
    memory.content_hash = memory_content_hash(draft.title, draft.description, draft.content)
    if {"title", "description", "content"} & set(changes):
        (memory.embedding,), memory.embedding_model = embed_texts(
            [memory_embedding_text(draft.title, draft.description, draft.content)]
        )
    screening, was = None, memory.state
    if {"title", "description", "content", "tags"} & set(changes):
        (screening,) = drafts_screen(principal.organization, [draft])
        _screening_apply(memory, screening)
    memory.updated_at = timezone.now()
    memory.save()
    if was != memory.state == Memory.STATE_QUARANTINED:
        memory_quarantined_announce(memory)
    if places is not None:
        anchors_replace(memory=memory, anchors=places)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.update",
        target=memory,
        data={
            "fields": sorted([*changes, *(["anchors"] if places is not None else [])]),
            "before": {k: v for k, v in before.items() if k != "content"},
            **({"state": memory.state, "rules": rules_named(memory.flags)} if memory.flags else {}),
        },
    )
    if screening is not None:
        flagged_writes_note(principal, [screening])
    return memory


def _screening_apply(memory: Memory, screening: Screening) -> None:
    """An edited text's verdict on the memory: its flags, and its state while it is not archived."""
    if memory.state == Memory.STATE_ACTIVE and screening.quarantined:
        memory.state = Memory.STATE_QUARANTINED
    elif memory.state == Memory.STATE_QUARANTINED and not screening.quarantined:
        memory_limit_check(memory.organization, adding=1)  # back among the active memories
        memory.state = Memory.STATE_ACTIVE
    memory.flags = screening.flags


# --- re-embedding -------------------------------------------------------------------------------


def memories_reembed(*, only_stale: bool = True, batch: int = 256, progress: Any = None) -> int:
    """Re-embed memories (every org) with the configured embedder; only those embedded by another
    model unless ``only_stale`` is false. Batches commit separately so a long run can resume."""
    if not Memory.objects.exists():  # nothing to embed: loading the model costs seconds
        return 0
    embedder = embedder_from_settings()
    qs = Memory.objects.all()
    if only_stale:
        qs = qs.exclude(embedding_model=embedder.name, embedding__isnull=False)
    total = qs.count()
    done = 0
    last = ""
    while True:
        chunk = list(qs.filter(pk__gt=last).order_by("pk").only("id", "title", "description", "content")[:batch])
        if not chunk:
            return done
        vectors, name = embed_texts([memory_embedding_text(m.title, m.description, m.content) for m in chunk])
        now = timezone.now()
        with transaction.atomic():
            for memory, vector in zip(chunk, vectors, strict=True):
                # updated_at: consolidation's stored neighbour graph probes changed memories again
                Memory.objects.filter(pk=memory.pk).update(embedding=vector, embedding_model=name, updated_at=now)
        done += len(chunk)
        last = chunk[-1].pk
        if progress:
            progress(done, total)
