"""Writes for memories: record, update, archive/restore, and the confidence signals.

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
from accounts.models import SCOPE_MEMORIES_WRITE, Project
from accounts.services import audit_record
from accounts.services_leaks import leaked_tokens_revoke
from memories import confidence as conf
from memories import gate
from memories.fingerprint import memory_content_hash
from memories.kinds import DEFAULT_IMPORTANCE, KIND_IMPORTANCE
from memories.models import Memory
from memories.selectors import memory_is_readable, memory_is_writable, project_resolve, project_target
from memories.selectors_search import SearchQuery, SearchResult, memory_search
from reasoningbank.ai.embedders import EmbeddingError, embedder_from_settings
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, LimitExceeded, NotFound, Rejected, ServiceError
from reasoningbank.scrubbing import ScrubResult, scrub_secrets
from reasoningbank.tracing import span, traced

logger = logging.getLogger(__name__)

TITLE_MAX = 200
DESCRIPTION_MAX = 2000
CONTENT_MAX = 20000
TAG_MAX = 50
TAGS_MAX = 20
COMMENT_MAX = 2000
SESSION_KEY_MAX = 200  # an agent's own session id (AgentSession.external_id, the ledger's session_key)
QUERY_MAX = 2000
RECORD_OUTCOMES = ("success", "failure", "mixed")
KINDS = tuple(k for k, _ in Memory.KIND_CHOICES)
WRITE_SCOPES = ("project", "team", "org")


# --- validation helpers ----------------------------------------------------------------------------


def text_clean(value: Any, name: str, maximum: int, *, required: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string", field=name)
    value = value.strip()
    if required and not value:
        raise InvalidInput(f"{name} is required", field=name)
    if len(value) > maximum:
        raise InvalidInput(f"{name} is too long ({len(value)} characters; at most {maximum})", field=name)
    if "\x00" in value:
        raise InvalidInput(f"{name} must not contain NUL characters", field=name)
    return value


# --- secrets ------------------------------------------------------------------------------------------
# Every text that enters the bank passes through one of these two (docs/security/secret-scrubbing.md).


def text_scrub_result(text: str, *, seen_in: str) -> ScrubResult:
    """``text`` with its secrets redacted, and any of our own tokens in it revoked on sight: it
    reached the bank, so it has leaked. ``seen_in`` names the operation for the audit row."""
    result = scrub_secrets(text)
    if result.own_tokens:
        leaked_tokens_revoke(result.own_tokens, seen_in=seen_in)
    return result


def text_scrub(text: str, *, seen_in: str) -> str:
    return text_scrub_result(text, seen_in=seen_in).text


def session_key_clean(value: Any, *, required: bool = False, field: str = "session_id") -> str:
    """An agent's session id, refused (a 400 naming the field) when it holds a secret: it is stored
    and shown as it is — in the session list, the ledger, an export — so redacting part of it would
    merge unrelated sessions under one marker. Our own token in it is revoked all the same."""
    value = text_clean(value, field, SESSION_KEY_MAX, required=required)
    if value:
        found = text_scrub_result(value, seen_in=field)
        if found.redactions:
            raise InvalidInput(
                f"{field} must not hold a secret (it looks like: {', '.join(found.kinds)}); session ids are stored "
                "and shown as they are: use an id of your own, e.g. a UUID",
                field=field,
            )
    return value


def tags_clean(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("tags must be a list of strings", field="tags")
    cleaned: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if not tag:
            continue
        if "\x00" in tag:
            raise InvalidInput("tags must not contain NUL characters", field="tags")
        if len(tag) > TAG_MAX:
            raise InvalidInput(f"tag {tag[:20].lower()!r}… is longer than {TAG_MAX} characters", field="tags")
        # scrubbed before lower-casing: a lower-cased key is still most of a key, and no longer found
        tag = text_scrub(tag, seen_in="memory")[:TAG_MAX].lower()
        if tag not in cleaned:
            cleaned.append(tag)
    if len(cleaned) > TAGS_MAX:
        raise InvalidInput(f"at most {TAGS_MAX} tags", field="tags")
    return cleaned


def choice_check(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise InvalidInput(f"{name} must be one of {', '.join(choices)} (got {value!r})", field=name)
    return str(value)


def write_scope_require(principal: Principal) -> None:
    if not principal.has_scope(SCOPE_MEMORIES_WRITE):
        raise Forbidden(f"this action needs the '{SCOPE_MEMORIES_WRITE}' scope (viewers are read-only)")


def readable_require(principal: Principal, memory: Memory) -> None:
    """Signals (feedback, outcome) may target any memory the caller can read, never another org's."""
    if not memory_is_readable(principal, memory):
        raise NotFound(f"memory {memory.id!r} not found", field="memory_id")


def _embed(texts: list[str]) -> tuple[list[list[float]], str]:
    try:  # building the embedder can fail too (a local model's weights missing): the same clear error
        embedder = embedder_from_settings()
        with span("embedding.embed", embedder=embedder.name, texts=len(texts), characters=sum(map(len, texts))):
            return embedder.embed(texts), embedder.name
    except EmbeddingError as exc:
        raise ServiceError(f"embedding failed: {exc}", code="embedding_failed") from exc


def query_embed(text: str) -> list[float]:
    """A search query's vector (the configured embedder; a local model serves repeats from its cache)."""
    (vector,), _ = _embed([text])
    return vector


def memory_embedding_text(title: str, description: str, content: str) -> str:
    return f"{title}\n{description}\n{content}"


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

    Every text is scrubbed of secrets here, on construction, so that no path into the bank can
    skip it: a memory is served to every token of its org (issue 11). Scrubbing comes before the
    embedding, which is computed from these fields.
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


# --- the write gate (issue 17; the rules are memories/gate.py) ----------------------------------------

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
) -> list[Memory]:
    """Insert validated drafts (embedding them unless vectors are given). Caller holds the transaction."""
    org = principal.organization
    memory_limit_check(org, adding=len(drafts))
    embedder_name = ""
    if vectors is None:
        vectors, embedder_name = _embed([memory_embedding_text(d.title, d.description, d.content) for d in drafts])
    else:
        embedder_name = embedder_from_settings().name
    prior_alpha, prior_beta = conf.confidence_prior(initial_confidence)
    now = timezone.now()
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
            created_at=now,
            updated_at=now,
        )
        for d, vector in zip(drafts, vectors, strict=True)
    ]
    for memory in memories:
        memory.save(force_insert=True)
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
    def message(self) -> str:
        """The sentence REST and MCP answer with."""
        if self.duplicate and self.reason == gate.NEAR_COPY and self.similarity is not None:
            return gate.near_copy_message(self.memory.id, self.similarity)
        if self.duplicate:
            return (
                f"An identical memory already exists ({self.memory.id}, same place, text, outcome and kind); "
                "nothing was recorded"
            )
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
) -> Memory:
    """``memory_record_or_duplicate``'s memory: the new one, or the identical one already there."""
    return memory_record_or_duplicate(
        principal=principal, title=title, description=description, content=content, outcome=outcome, tags=tags,
        kind=kind, project=project, scope=scope,
    ).memory


@traced(
    "memory.record",
    result=lambda r: {"memory_id": r.memory.id, "project_id": r.memory.project_id, "org_id": r.memory.organization_id,
                      "kind": r.memory.kind, "outcome": r.memory.outcome, "tier": r.memory.tier,
                      "content_length": len(r.memory.content), "duplicate": r.duplicate,
                      "duplicate_reason": r.reason or None},
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
) -> RecordResult:
    """Seed 000 memory_record: an explicitly captured strategy, initial confidence 0.8.

    An identical record creates nothing (issue 11): when an active memory of the same place (the
    same project, or the same team- or org-wide scope) already has the same title, description and
    content (case and runs of whitespace ignored), outcome and kind, that memory comes back as the
    duplicate; no embedding, no row, no audit event.

    The write gate (issue 17) comes first: a draft without reusable value (``memories.gate``) is a 400
    naming the field, with a ``memory.rejected`` audit row. A near copy — embedding at least
    ``WRITE_GATE_NEAR_COPY_SIMILARITY`` alike to an active memory of the same place, outcome and kind,
    and no differing numbers, negations or opposite words — is answered like an identical one
    (``reason`` ``near_copy`` with the similarity), audited as a rejection, nothing recorded."""
    write_scope_require(principal)
    draft = memory_draft(title=title, description=description, content=content, outcome=outcome, tags=tags, kind=kind)
    target_project, team = place_resolve(principal, project=project, scope=scope)
    # outside the transaction below: the refusal's audit row must outlive the refused write
    _gate_refuse(principal, target_project, draft, "record")
    with transaction.atomic():
        return _record(principal, draft, target_project, team)


def _record(principal: Principal, draft: MemoryDraft, target_project: Project | None, team: Any) -> RecordResult:
    existing = _identical_memory(principal.organization, target_project, team, draft)
    if existing is not None:
        return RecordResult(existing, duplicate=True, reason="identical")
    (vector,), _ = _embed([memory_embedding_text(draft.title, draft.description, draft.content)])
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
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.record",
        target=memory,
        data={"title": memory.title, "scope": memory.scope},
    )
    _notify_new_memories(target_project, 1)
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


def _notify_new_memories(project: Project | None, count: int) -> None:
    """Hook for on-demand consolidation (003: after 20 new memories); wired by the consolidation app."""
    from memories.events import memories_added

    if project is not None:
        memories_added.send(sender=Memory, project=project, count=count)


UPDATABLE = ("title", "description", "content", "outcome", "tags", "kind")


def memory_update(*, principal: Principal, memory: Memory, changes: dict[str, Any]) -> Memory:
    """Change a memory's text, outcome, tags or kind. A changed text passes the write gate (a 400
    naming the field, audited as ``memory.rejected``); tags or kind alone never do, so a memory from
    before the gate keeps its edits."""
    write_scope_require(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    unknown = sorted(set(changes) - set(UPDATABLE))
    if unknown:
        raise InvalidInput(f"cannot update {', '.join(unknown)}; updatable: {', '.join(UPDATABLE)}", field=unknown[0])
    if {"title", "description", "content"} & set(changes):
        merged = {name: changes.get(name, getattr(memory, name)) for name in UPDATABLE}
        _gate_refuse(principal, memory.project, memory_draft(**merged), "update", memory=memory.id)
    with transaction.atomic():
        return _update(principal, memory, changes)


def _update(principal: Principal, memory: Memory, changes: dict[str, Any]) -> Memory:
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    merged = {name: changes.get(name, getattr(memory, name)) for name in UPDATABLE}
    draft = memory_draft(**merged)
    before = {name: getattr(memory, name) for name in changes}
    for name in UPDATABLE:
        setattr(memory, name, getattr(draft, name))
    memory.content_hash = memory_content_hash(draft.title, draft.description, draft.content)
    if {"title", "description", "content"} & set(changes):
        (memory.embedding,), memory.embedding_model = _embed(
            [memory_embedding_text(draft.title, draft.description, draft.content)]
        )
    memory.updated_at = timezone.now()
    memory.save()
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.update",
        target=memory,
        data={"fields": sorted(changes), "before": {k: v for k, v in before.items() if k != "content"}},
    )
    return memory


# --- search (read + usage write) -------------------------------------------------------------------


def memory_search_use(*, principal: Principal, search: SearchQuery) -> SearchResult:
    """Search, then record a usage signal (seed 000) on each returned memory whose fused relevance
    reaches ``SEARCH_USAGE_MIN_RELEVANCE``."""
    import time

    from memories.services_signals import memories_mark_used  # it imports this module's validators

    started = time.perf_counter()
    vector = query_embed(search.query)
    embedding_ms = (time.perf_counter() - started) * 1000
    result = memory_search(principal, search, query_vector=vector)
    # only results an agent plausibly used: ranking noise below the floor must not feed confidence
    floor = settings.SEARCH_USAGE_MIN_RELEVANCE
    # (an archived memory an exhaustive search surfaced is shown, not used)
    used = [hit.memory for hit in result.hits if hit.breakdown.relevance >= floor and hit.memory.state == "active"]
    memories_mark_used(principal=principal, memories=used, project=result.project, write_behind=True)
    result.embedding_ms = embedding_ms
    return result


def memories_reembed(*, only_stale: bool = True, batch: int = 256, progress: Any = None) -> int:
    """Re-embed memories (every org) with the configured embedder; only those embedded by another
    model unless ``only_stale`` is false. Batches commit separately so a long run can resume."""
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
        vectors, name = _embed([memory_embedding_text(m.title, m.description, m.content) for m in chunk])
        now = timezone.now()
        with transaction.atomic():
            for memory, vector in zip(chunk, vectors, strict=True):
                # updated_at: consolidation's stored neighbour graph probes changed memories again
                Memory.objects.filter(pk=memory.pk).update(embedding=vector, embedding_model=name, updated_at=now)
        done += len(chunk)
        last = chunk[-1].pk
        if progress:
            progress(done, total)
