"""Writes for memories: record, update, archive/restore, and the confidence signals.

Every function takes the acting ``Principal`` (tenant + rights) explicitly, validates its input
into a clear ``ServiceError`` before touching the database, and runs in one transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from accounts.access import Principal
from accounts.models import SCOPE_MEMORIES_WRITE, Project
from accounts.services import audit_record
from memories import confidence as conf
from memories.fingerprint import memory_content_hash
from memories.models import Memory, MemorySignal, MemorySignalAggregate, ProjectSignalWeights
from memories.selectors import (
    SEARCH_OUTCOMES,
    SEARCH_SCOPES,
    SearchQuery,
    SearchResult,
    memory_is_readable,
    memory_is_writable,
    memory_search,
    project_resolve,
    project_target,
)
from reasoningbank.ai.embedders import EmbeddingError, embedder_from_settings
from reasoningbank.db_threads import other_connections_usable
from reasoningbank.db_threads import write_behind as db_write_behind
from reasoningbank.errors import Conflict, Forbidden, InvalidInput, LimitExceeded, NotFound, ServiceError
from reasoningbank.metrics import counter_add
from reasoningbank.scrubbing import scrub_secrets

logger = logging.getLogger(__name__)

TITLE_MAX = 200
DESCRIPTION_MAX = 2000
CONTENT_MAX = 20000
TAG_MAX = 50
TAGS_MAX = 20
COMMENT_MAX = 2000
QUERY_MAX = 2000
RECORD_OUTCOMES = ("success", "failure", "mixed")
KINDS = tuple(k for k, _ in Memory.KIND_CHOICES)
WRITE_SCOPES = ("project", "team", "org")


# --- validation helpers ----------------------------------------------------------------------------


def _text(value: Any, name: str, maximum: int, *, required: bool = True) -> str:
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


def tags_clean(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list | tuple) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("tags must be a list of strings", field="tags")
    cleaned: list[str] = []
    for tag in tags:
        tag = tag.strip().lower()
        if not tag:
            continue
        if "\x00" in tag:
            raise InvalidInput("tags must not contain NUL characters", field="tags")
        if len(tag) > TAG_MAX:
            raise InvalidInput(f"tag {tag[:20]!r}… is longer than {TAG_MAX} characters", field="tags")
        if tag not in cleaned:
            cleaned.append(tag)
    if len(cleaned) > TAGS_MAX:
        raise InvalidInput(f"at most {TAGS_MAX} tags", field="tags")
    return cleaned


def _choice(value: Any, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise InvalidInput(f"{name} must be one of {', '.join(choices)} (got {value!r})", field=name)
    return str(value)


def _require_write(principal: Principal) -> None:
    if not principal.has_scope(SCOPE_MEMORIES_WRITE):
        raise Forbidden(f"this action needs the '{SCOPE_MEMORIES_WRITE}' scope (viewers are read-only)")


def _require_readable(principal: Principal, memory: Memory) -> None:
    """Signals (feedback, outcome) may target any memory the caller can read, never another org's."""
    if not memory_is_readable(principal, memory):
        raise NotFound(f"memory {memory.id!r} not found", field="memory_id")


def _embed(texts: list[str]) -> tuple[list[list[float]], str]:
    embedder = embedder_from_settings()
    try:
        return embedder.embed(texts), embedder.name
    except EmbeddingError as exc:
        raise ServiceError(f"embedding failed: {exc}", code="embedding_failed") from exc


def memory_embedding_text(title: str, description: str, content: str) -> str:
    return f"{title}\n{description}\n{content}"


# --- record / update / archive ---------------------------------------------------------------------


def place_resolve(principal: Principal, *, project: str | None, scope: str | None) -> tuple[Project | None, Any]:
    """Where a new memory goes: (project, team). Project-restricted tokens write to their project;
    team and org scope need a token that reaches that team / the whole org."""
    scope = _choice(scope or "project", "scope", WRITE_SCOPES)
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
        object.__setattr__(self, "title", scrub_secrets(self.title).text[:TITLE_MAX])
        object.__setattr__(self, "description", scrub_secrets(self.description).text)
        object.__setattr__(self, "content", scrub_secrets(self.content).text)
        object.__setattr__(self, "tags", [scrub_secrets(tag).text[:TAG_MAX] for tag in self.tags])


def memory_draft(
    *, title: Any, description: Any, content: Any, outcome: Any, tags: Any = None, kind: Any = None
) -> MemoryDraft:
    return MemoryDraft(
        title=_text(title, "title", TITLE_MAX),
        description=_text(description, "description", DESCRIPTION_MAX),
        content=_text(content, "content", CONTENT_MAX),
        outcome=_choice(outcome, "outcome", RECORD_OUTCOMES),
        tags=tags_clean(tags),
        kind=_choice(kind or Memory.KIND_PROCEDURAL, "kind", KINDS),
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
    _memory_limit_check(org, adding=len(drafts))
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


def _memory_limit_check(org: Any, *, adding: int) -> None:
    limit = org.limit("memories")
    if limit is not None:
        active = Memory.objects.filter(organization=org, state=Memory.STATE_ACTIVE).count()
        if active + adding > limit:
            raise LimitExceeded(f"the {org.plan} plan allows {limit} active memories; archive some or upgrade")


def _importance_for(kind: str) -> float:
    from consolidation.retention import KIND_IMPORTANCE

    return float(KIND_IMPORTANCE.get(kind, 0.5))


@dataclass(frozen=True)
class RecordResult:
    """What recording did: ``duplicate`` means an identical active memory was already there, and
    ``memory`` is that one (nothing was written)."""

    memory: Memory
    duplicate: bool = False

    @property
    def message(self) -> str:
        """The sentence REST and MCP answer with."""
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


@transaction.atomic
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
    duplicate; no embedding, no row, no audit event. A near-identical one is recorded, and left to
    consolidation's duplicate merge."""
    _require_write(principal)
    draft = memory_draft(title=title, description=description, content=content, outcome=outcome, tags=tags, kind=kind)
    target_project, team = place_resolve(principal, project=project, scope=scope)
    existing = _identical_memory(principal.organization, target_project, team, draft)
    if existing is not None:
        return RecordResult(existing, duplicate=True)
    (memory,) = memories_create(principal=principal, drafts=[draft], project=target_project, team=team)
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


def _notify_new_memories(project: Project | None, count: int) -> None:
    """Hook for on-demand consolidation (003: after 20 new memories); wired by the consolidation app."""
    from memories.signals import memories_added

    if project is not None:
        memories_added.send(sender=Memory, project=project, count=count)


UPDATABLE = ("title", "description", "content", "outcome", "tags", "kind")


@transaction.atomic
def memory_update(*, principal: Principal, memory: Memory, changes: dict[str, Any]) -> Memory:
    _require_write(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    unknown = sorted(set(changes) - set(UPDATABLE))
    if unknown:
        raise InvalidInput(f"cannot update {', '.join(unknown)}; updatable: {', '.join(UPDATABLE)}", field=unknown[0])
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


@transaction.atomic
def memory_archive(*, principal: Principal, memory: Memory, reason: str = Memory.ARCHIVED_MANUAL) -> Memory:
    _require_write(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    _choice(reason, "reason", [r for r, _ in Memory.ARCHIVED_REASON_CHOICES])
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.state == Memory.STATE_ARCHIVED:
        return memory
    memory.state, memory.archived_reason, memory.archived_at = Memory.STATE_ARCHIVED, reason, timezone.now()
    memory.tier = "archived"
    memory.updated_at = timezone.now()
    memory.save(update_fields=["state", "archived_reason", "archived_at", "tier", "updated_at"])
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.archive",
        target=memory,
        data={"reason": reason},
    )
    return memory


@transaction.atomic
def memory_restore(*, principal: Principal, memory: Memory) -> Memory:
    """Back to active. Links (consolidates, supersedes, …) stay as history."""
    _require_write(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.state == Memory.STATE_ACTIVE:
        # a 200 here hid mistakes (a wrong id, a double click on an old page): say there was nothing to do
        raise Conflict(f"memory {memory.id} is already active: only an archived memory can be restored")
    _memory_limit_check(principal.organization, adding=1)
    previous = memory.archived_reason
    memory.state, memory.archived_reason, memory.archived_at = Memory.STATE_ACTIVE, "", None
    memory.consolidated_into = None
    memory.tier = "warm"
    memory.updated_at = timezone.now()
    memory.save(update_fields=["state", "archived_reason", "archived_at", "consolidated_into", "tier", "updated_at"])
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.restore",
        target=memory,
        data={"was": previous},
    )
    return memory


# --- confidence signals ----------------------------------------------------------------------------


def _weights_row(memory: Memory, *, lock: bool = False) -> ProjectSignalWeights:
    """The learned weights that govern this memory: its project's, or the org-wide row."""
    # project_id None selects the org-wide row (Django turns ``= None`` into IS NULL)
    qs = ProjectSignalWeights.objects.filter(
        organization_id=memory.organization_id, project_id=memory.project_id  # type: ignore[misc]
    )
    if lock:
        qs = qs.select_for_update()
    row = qs.first()
    if row is None:
        row, _ = ProjectSignalWeights.objects.get_or_create(
            organization_id=memory.organization_id, project_id=memory.project_id
        )
    return row


def _project_weights(row: ProjectSignalWeights) -> conf.ProjectWeights:
    return conf.ProjectWeights(
        explicit_alpha=row.explicit_alpha,
        explicit_beta=row.explicit_beta,
        usage_alpha=row.usage_alpha,
        usage_beta=row.usage_beta,
        outcome_alpha=row.outcome_alpha,
        outcome_beta=row.outcome_beta,
    )


def _signal_counts(memory_ids: Iterable[str]) -> dict[str, conf.SignalCounts]:
    """All-time counts per memory: rolled-up aggregates plus the live event log."""
    ids = list(memory_ids)
    counts = {mid: conf.SignalCounts() for mid in ids}
    for agg in MemorySignalAggregate.objects.filter(memory_id__in=ids):
        counts[agg.memory_id] = conf.SignalCounts(
            agg.explicit_pos, agg.explicit_neg, agg.usage_pos, agg.usage_neg, agg.outcome_pos, agg.outcome_neg
        )
    rows = (
        MemorySignal.objects.filter(memory_id__in=ids)
        .values("memory_id", "type", "positive")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        key = f"{row['type']}_{'pos' if row['positive'] else 'neg'}"
        current = counts[row["memory_id"]]
        counts[row["memory_id"]] = conf.SignalCounts(**{**current.__dict__, key: getattr(current, key) + row["n"]})
    return counts


def confidence_recompute(memories: Sequence[Memory]) -> None:
    """Seed 000 ComputeConfidence for each memory with its current learned weights; saves alpha/beta/confidence."""
    if not memories:
        return
    if len(memories) > 1:  # the rollup's batches: locked in id order like every multi-row write
        _memories_lock_in_order([m.id for m in memories])
    counts = _signal_counts(m.id for m in memories)
    weights_cache: dict[tuple[int, int | None], conf.Weights] = {}
    for memory in memories:
        key = (memory.organization_id, memory.project_id)
        if key not in weights_cache:
            weights_cache[key] = _project_weights(_weights_row(memory)).compute_weights()
        state = conf.confidence_compute(
            memory.prior_alpha, memory.prior_beta, counts[memory.id], [], weights_cache[key]
        )
        memory.alpha, memory.beta, memory.confidence = state.alpha, state.beta, state.score
    Memory.objects.bulk_update(memories, ["alpha", "beta", "confidence"])


def _recent_signals(memory: Memory) -> list[conf.Signal]:
    since = timezone.now() - timedelta(days=conf.SIGNAL_EVENT_RETENTION_DAYS)
    rows = MemorySignal.objects.filter(memory=memory, created_at__gte=since).values_list("type", "positive")
    return [conf.Signal(conf.SignalType(t), p) for t, p in rows]


@dataclass(frozen=True)
class SignalResult:
    memory: Memory
    previous_confidence: float
    new_confidence: float


@transaction.atomic
def memory_feedback(
    *, principal: Principal, memory: Memory, helpful: Any, comment: Any = "", project: Project | None = None
) -> SignalResult:
    """Seed 000 memory_feedback: explicit signal; teaches the project's weights whether usage and
    outcome signals predicted it; recomputes the memory's confidence."""
    _require_write(principal)
    _require_readable(principal, memory)
    if not isinstance(helpful, bool):
        raise InvalidInput("helpful must be true or false", field="helpful")
    comment = scrub_secrets(_text(comment, "comment", COMMENT_MAX, required=False)).text
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    previous = memory.confidence
    row = _weights_row(memory, lock=True)
    learned = _project_weights(row).learn_from_feedback(helpful, _recent_signals(memory))
    for name, value in learned.__dict__.items():
        setattr(row, name, value)
    row.updated_at = timezone.now()
    row.save()
    signal = _signal_add(principal, memory, conf.SignalType.EXPLICIT, helpful, comment=comment, project=project)
    confidence_recompute([memory])
    _signal_stamp_confidence(signal, memory)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.feedback",
        target=memory,
        data={
            "helpful": helpful,
            "comment": comment[:200],
            "from": round(previous, 4),
            "to": round(memory.confidence, 4),
        },
    )
    return SignalResult(memory, previous, memory.confidence)


@transaction.atomic
def memory_outcome(
    *, principal: Principal, memory: Memory, succeeded: Any, session_id: Any = "", project: Project | None = None
) -> SignalResult:
    """Seed 000 memory_outcome: the task that used this memory succeeded or failed."""
    _require_write(principal)
    _require_readable(principal, memory)
    if not isinstance(succeeded, bool):
        raise InvalidInput("succeeded must be true or false", field="succeeded")
    session_id = _text(session_id, "session_id", 200, required=False)
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    previous = memory.confidence
    signal = _signal_add(principal, memory, conf.SignalType.OUTCOME, succeeded, session_id=session_id, project=project)
    confidence_recompute([memory])
    _signal_stamp_confidence(signal, memory)
    return SignalResult(memory, previous, memory.confidence)


def _signal_add(
    principal: Principal,
    memory: Memory,
    signal_type: conf.SignalType,
    positive: bool,
    *,
    comment: str = "",
    session_id: str = "",
    project: Project | None = None,
) -> MemorySignal:
    return MemorySignal.objects.create(
        organization_id=memory.organization_id,
        memory=memory,
        project_id=project.id if project else memory.project_id,
        type=signal_type.value,
        positive=positive,
        comment=comment,
        session_id=session_id,
        actor=principal.actor_label,
    )


def _signal_stamp_confidence(signal: MemorySignal, memory: Memory) -> None:
    """Keep the confidence after each signal on the event, for the dashboard's history chart."""
    MemorySignal.objects.filter(pk=signal.pk).update(confidence_after=memory.confidence)


_WEIGHT_COLUMNS = ("explicit_alpha", "explicit_beta", "usage_alpha", "usage_beta", "outcome_alpha", "outcome_beta")

# Per memory: its signal counts (rolled-up aggregate + live events) and its project's learned
# weights (NULL when the project has no weights row yet), in one round trip.
_USAGE_STATE_SQL = f"""
SELECT v.id,
       COALESCE(a.explicit_pos, 0) + COUNT(s.id) FILTER (WHERE s.type = 'explicit' AND s.positive),
       COALESCE(a.explicit_neg, 0) + COUNT(s.id) FILTER (WHERE s.type = 'explicit' AND NOT s.positive),
       COALESCE(a.usage_pos, 0) + COUNT(s.id) FILTER (WHERE s.type = 'usage' AND s.positive),
       COALESCE(a.usage_neg, 0) + COUNT(s.id) FILTER (WHERE s.type = 'usage' AND NOT s.positive),
       COALESCE(a.outcome_pos, 0) + COUNT(s.id) FILTER (WHERE s.type = 'outcome' AND s.positive),
       COALESCE(a.outcome_neg, 0) + COUNT(s.id) FILTER (WHERE s.type = 'outcome' AND NOT s.positive),
       {", ".join(f"w.{c}" for c in _WEIGHT_COLUMNS)}
FROM unnest(%s::text[], %s::bigint[], %s::bigint[]) AS v(id, organization_id, project_id)
LEFT JOIN memories_memorysignalaggregate a ON a.memory_id = v.id
LEFT JOIN memories_memorysignal s ON s.memory_id = v.id
LEFT JOIN memories_projectsignalweights w
       ON w.organization_id = v.organization_id AND w.project_id IS NOT DISTINCT FROM v.project_id
GROUP BY v.id, a.memory_id, w.id
"""

# Row locks on several memories are taken in id order, so writers whose sets overlap queue behind
# one another instead of deadlocking (issue 11: an UPDATE locks rows in its plan's order, e.g. the
# order of a search's ranking, and two searches returning the same memories deadlocked).
_LOCK_IN_ORDER_SQL = "SELECT 1 FROM memories_memory WHERE id = ANY(%s::text[]) ORDER BY id FOR NO KEY UPDATE"


def _memories_lock_in_order(memory_ids: list[str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_LOCK_IN_ORDER_SQL, [memory_ids])


_MARK_USED_SQL = """
WITH v AS (
    SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::float8[], %s::float8[], %s::float8[])
        AS v(id, organization_id, project_id, alpha, beta, confidence)
), signals AS (
    INSERT INTO memories_memorysignal
        (organization_id, memory_id, project_id, type, positive, session_id, comment, actor, confidence_after,
         created_at)
    SELECT organization_id, id, project_id, 'usage', true, '', '', %s, confidence, %s FROM v
)
UPDATE memories_memory m
SET usage_count = m.usage_count + 1, last_used_at = %s, alpha = v.alpha, beta = v.beta, confidence = v.confidence
FROM v WHERE m.id = v.id
"""


def memories_mark_used(
    *, principal: Principal, memories: Sequence[Any], project: Project | None, write_behind: bool = False
) -> None:
    """Usage signals for memories returned by a search (seed 000: usage signal + usage_count), with
    each memory's confidence recomputed; ``memories`` are ``Memory`` instances or search rows, and
    are updated in place. Set-based SQL: this runs on every agent search. With ``write_behind`` (a
    search) the write happens after the caller has answered, when another pooled connection can
    take it (``reasoningbank.db_threads``): one statement less on the request path; written inline
    instead, a failure is logged and counted and the search still answers."""
    if not memories:
        return
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            _USAGE_STATE_SQL,
            [[m.id for m in memories], [m.organization_id for m in memories], [m.project_id for m in memories]],
        )
        state_rows = {row[0]: row[1:] for row in cursor.fetchall()}
    weights: dict[tuple[int, int | None], conf.Weights] = {}
    columns: list[list[Any]] = [[], [], [], [], [], []]
    for memory in memories:
        row = state_rows[memory.id]
        key = (memory.organization_id, memory.project_id)
        if key not in weights:
            learned = row[6:]
            weights[key] = (
                conf.ProjectWeights(*learned) if learned[0] is not None else _project_weights(_weights_row(memory))
            ).compute_weights()
        with_use = conf.SignalCounts(*row[:6]) + conf.SignalCounts(usage_pos=1)
        state = conf.confidence_compute(memory.prior_alpha, memory.prior_beta, with_use, [], weights[key])
        memory.alpha, memory.beta, memory.confidence = state.alpha, state.beta, state.score
        memory.usage_count += 1
        memory.last_used_at = now
        signal_project = project.id if project else memory.project_id
        for column, value in zip(
            columns,
            (memory.id, memory.organization_id, signal_project, state.alpha, state.beta, state.score),
            strict=True,
        ):
            column.append(value)
    arguments = [*columns, principal.actor_label, now, now]
    if not write_behind:
        _usage_write(arguments)  # part of the caller's transaction (distillation's reinforcement)
    elif not (other_connections_usable() and db_write_behind(_usage_write, arguments)):
        _usage_write_inline(arguments)


def _usage_write(arguments: list[Any]) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        # a usage signal lost in a crash costs nothing; waiting for its fsync costs every search
        cursor.execute("SET LOCAL synchronous_commit TO OFF")
        _memories_lock_in_order(arguments[0])
        cursor.execute(_MARK_USED_SQL, arguments)


def _usage_write_inline(arguments: list[Any]) -> None:
    """A search's usage write on the request's own connection (no pool, or the write-behind queue is
    full). Usage signals are affordable to lose, a failed search is not: a failure (a deadlock with
    another writer, a lost connection) is logged and counted, and the search answers. The write's
    own savepoint keeps a caller's transaction usable."""
    try:
        _usage_write(arguments)
    except Exception:
        logger.exception("usage write of %d memories failed; the search answers without it", len(arguments[0]))
        counter_add("usage_write_failed_total")


# --- search (read + usage write) -------------------------------------------------------------------


def search_query_validate(
    *,
    query: Any,
    scope: Any = "all",
    outcome: Any = "all",
    limit: Any = 5,
    min_confidence: Any = None,
    project: Any = None,
) -> SearchQuery:
    from django.conf import settings

    query = _text(query, "query", QUERY_MAX)
    scope = _choice(scope or "all", "scope", SEARCH_SCOPES)
    outcome = _choice(outcome or "all", "outcome", SEARCH_OUTCOMES)
    if limit is None:
        limit = settings.SEARCH_DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= settings.SEARCH_MAX_LIMIT:
        raise InvalidInput(f"limit must be an integer from 1 to {settings.SEARCH_MAX_LIMIT}", field="limit")
    if min_confidence is None:
        min_confidence = settings.SEARCH_MIN_CONFIDENCE
    if isinstance(min_confidence, bool) or not isinstance(min_confidence, int | float) or not 0 <= min_confidence <= 1:
        raise InvalidInput("min_confidence must be a number from 0 to 1", field="min_confidence")
    if project is not None and not isinstance(project, str):
        raise InvalidInput("project must be a project slug", field="project")
    return SearchQuery(
        query=query,
        scope=scope,
        outcome=outcome,
        limit=limit,
        min_confidence=float(min_confidence),
        project=project or None,
    )


def memory_search_use(*, principal: Principal, search: SearchQuery) -> SearchResult:
    """Search, then record a usage signal on each returned memory (seed 000)."""
    import time

    started = time.perf_counter()
    (vector,), _ = _embed([search.query])
    embedding_ms = (time.perf_counter() - started) * 1000
    result = memory_search(principal, search, query_vector=vector)
    memories_mark_used(
        principal=principal, memories=[hit.memory for hit in result.hits], project=result.project, write_behind=True
    )
    result.embedding_ms = embedding_ms
    return result


# --- rollup ----------------------------------------------------------------------------------------


def signals_rollup(*, now: Any = None, batch: int = 5000) -> dict[str, int]:
    """Seed 000 daily rollup: fold events older than 30 days into aggregates, delete them, and
    recompute the affected memories' confidence (with the current learned weights)."""
    now = now or timezone.now()
    cutoff = now - timedelta(days=conf.SIGNAL_EVENT_RETENTION_DAYS)
    folded = memories_touched = 0
    while True:
        with transaction.atomic():
            ids = list(
                MemorySignal.objects.filter(created_at__lt=cutoff).order_by("id").values_list("id", flat=True)[:batch]
            )
            if not ids:
                break
            rows = (
                MemorySignal.objects.filter(id__in=ids)
                .values("memory_id", "organization_id", "type", "positive")
                .annotate(n=Count("id"))
                .order_by()
            )
            per_memory: dict[str, dict[str, Any]] = {}
            for row in rows:
                entry = per_memory.setdefault(row["memory_id"], {"organization_id": row["organization_id"]})
                key = f"{row['type']}_{'pos' if row['positive'] else 'neg'}"
                entry[key] = entry.get(key, 0) + row["n"]
            for memory_id, entry in per_memory.items():
                org_id = entry.pop("organization_id")
                agg, _ = MemorySignalAggregate.objects.select_for_update().get_or_create(
                    memory_id=memory_id, defaults={"organization_id": org_id}
                )
                for key, n in entry.items():
                    setattr(agg, key, getattr(agg, key) + n)
                agg.last_rollup = now
                agg.save()
            MemorySignal.objects.filter(id__in=ids).delete()
            confidence_recompute(list(Memory.objects.filter(pk__in=list(per_memory))))
            folded += len(ids)
            memories_touched += len(per_memory)
    return {"folded": folded, "memories": memories_touched}


def confidence_recompute_all(*, batch: int = 2000) -> int:
    """Recompute every memory's confidence with the current learned weights (daily, after rollup)."""
    done = 0
    last = ""
    while True:
        chunk = list(
            Memory.objects.filter(pk__gt=last)
            .order_by("pk")
            .only("id", "organization_id", "project_id", "prior_alpha", "prior_beta", "alpha", "beta", "confidence")[
                :batch
            ]
        )
        if not chunk:
            return done
        with transaction.atomic():
            confidence_recompute(chunk)
        done += len(chunk)
        last = chunk[-1].pk


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
