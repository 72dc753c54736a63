"""Moderation: every change to a memory's lifecycle that a moderator might question — archive,
restore, un-merge, resolving a contradiction — as one set of audited services (DESIGN §4). The
consolidation cycle, REST, MCP, the dashboard and the admin all archive through
``memories_archive``, so every archive writes its ``AuditEvent`` row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.services import audit_record, audit_record_many
from memories.locks import memories_lock
from memories.models import Memory, MemoryLink
from memories.selectors import memory_is_writable
from memories.services import choice_check, memory_limit_check, write_scope_require
from reasoningbank.errors import Conflict, Forbidden, InvalidInput


def memories_lock_active(ids: Iterable[str]) -> list[str]:
    """Lock the still-active ones of these memories (in id order, so concurrent lockers never
    deadlock) and return their ids. Call inside a transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memories_memory WHERE id = ANY(%s) AND state = %s ORDER BY id FOR UPDATE",
            [list(ids), Memory.STATE_ACTIVE],
        )
        return [row[0] for row in cursor.fetchall()]


def memories_archive(
    *,
    organization: Any,
    memory_ids: str | Sequence[str],
    reason: str,
    actor: Principal | None = None,
    into: Memory | None = None,
    only_active: bool = False,
    data: dict[str, Any] | None = None,
) -> list[str]:
    """Archive these memories of ``organization`` (never deletes) and write one ``memory.archive``
    audit row each; returns the ids it archived. ``only_active`` leaves rows archived meanwhile
    alone (the rows are locked first, in id order, and the UPDATE reads their state then). Raw SQL
    with one array parameter: ``pk__in`` over thousands of ids binds one placeholder per id."""
    ids = [memory_ids] if isinstance(memory_ids, str) else list(memory_ids)
    if not ids:
        return []
    now = timezone.now()
    params: list[Any] = [
        Memory.STATE_ARCHIVED,
        reason,
        now,
        "archived",
        into.id if into else None,
        now,
        ids,
        organization.id,
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        # locked in id order first (memories.locks): the UPDATE alone locks rows in its plan's order
        # and deadlocked with a search's usage write holding some of them (docs/concurrency.md)
        memories_lock(ids, organization_id=organization.id)
        cursor.execute(
            "UPDATE memories_memory SET state = %s, archived_reason = %s, archived_at = %s, tier = %s, "
            "consolidated_into_id = %s, updated_at = %s WHERE id = ANY(%s) AND organization_id = %s"
            + (" AND state = %s" if only_active else "")
            + " RETURNING id",
            params + ([Memory.STATE_ACTIVE] if only_active else []),
        )
        archived = [row[0] for row in cursor.fetchall()]
    details = {"reason": reason, **({"into": into.id} if into else {}), **(data or {})}
    audit_record_many(
        organization=organization,
        actor=actor,
        verb="memory.archive",
        target_type="memory",
        target_ids=archived,
        data=details,
    )
    return archived


@transaction.atomic
def memory_archive(*, principal: Principal, memory: Memory, reason: str = Memory.ARCHIVED_MANUAL) -> Memory:
    write_scope_require(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    choice_check(reason, "reason", [r for r, _ in Memory.ARCHIVED_REASON_CHOICES])
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.state == Memory.STATE_PROPOSED:
        raise Conflict(_proposal_refusal(memory, "archived"), field="memory_id")
    if memory.state == Memory.STATE_ARCHIVED:
        return memory
    memories_archive(organization=principal.organization, memory_ids=memory.id, reason=reason, actor=principal)
    memory.refresh_from_db()
    return memory


@transaction.atomic
def memory_restore(*, principal: Principal, memory: Memory) -> Memory:
    """Back to active. Links (consolidates, supersedes, …) stay as history."""
    write_scope_require(principal)
    if not memory_is_writable(principal, memory):
        raise Forbidden("this token may not change this memory")
    memory = Memory.objects.select_for_update().get(pk=memory.pk)
    if memory.state == Memory.STATE_ACTIVE:
        # a 200 here hid mistakes (a wrong id, a double click on an old page): say there was nothing to do
        raise Conflict(f"memory {memory.id} is already active: only an archived memory can be restored")
    if memory.state == Memory.STATE_PROPOSED:
        # restoring would promote it without the review the organization asked for
        raise Conflict(_proposal_refusal(memory, "restored"), field="memory_id")
    memory_limit_check(principal.organization, adding=1)
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


def _proposal_refusal(memory: Memory, verb: str) -> str:
    return (
        f"memory {memory.id} is a promotion proposal awaiting review: it cannot be {verb}; accept or reject it "
        "in the review queue (Quality → Review queue, or POST /api/v1/consolidation/reviews/<id>/decide)"
    )


def _unmerge_refusal(memory: Memory) -> str | None:
    """Why this memory cannot be un-merged, saying what to do instead; None when it can be."""
    if memory.state == Memory.STATE_PROPOSED:
        return _proposal_refusal(memory, "un-merged")
    if memory.origin != Memory.ORIGIN_CONSOLIDATED:
        if memory.archived_reason == Memory.ARCHIVED_DUPLICATE:
            kept = (
                MemoryLink.objects.filter(
                    organization_id=memory.organization_id, target=memory, kind=MemoryLink.KIND_DUPLICATES
                )
                .values_list("source_id", flat=True)
                .first()
            )
            return (
                f"memory {memory.id} was archived as a duplicate{f' of {kept}' if kept else ''}, not merged into a "
                "consolidated memory, so there is nothing to un-merge: restore it to make it active again"
            )
        if memory.consolidated_into_id:
            return (
                f"memory {memory.id} is a source of the consolidated memory {memory.consolidated_into_id}: "
                "un-merge that one to bring back all of its sources"
            )
        return f"only consolidated memories can be un-merged; memory {memory.id} was {memory.origin}, not consolidated"
    if memory.state != Memory.STATE_ACTIVE:
        return (
            f"consolidated memory {memory.id} is already archived ({memory.archived_reason}): it was un-merged or "
            "archived before; restore it first to un-merge it"
        )
    return None


@transaction.atomic
def memory_unmerge(*, principal: Principal, memory: Memory) -> list[Memory]:
    """Undo a consolidation: the sources come back, the consolidated memory is archived. Links stay."""
    if not principal.has_scope("memories:write"):
        raise Forbidden("un-merging needs the 'memories:write' scope")
    refusal = _unmerge_refusal(memory)
    if refusal:  # the memory's state forbids it (a 409), the request itself is well-formed
        raise Conflict(refusal, field="memory_id")
    merged = Memory.objects.filter(consolidated_into=memory, organization=principal.organization)
    # the sources and the memory itself locked together in id order, like every writer of several
    # memories (memories.locks), then read again under the locks
    memories_lock([*merged.values_list("id", flat=True), memory.pk], organization_id=principal.organization.id)
    sources = list(merged)
    if not sources:
        raise Conflict("this consolidated memory has no archived sources left to restore", field="memory_id")
    now = timezone.now()
    Memory.objects.filter(pk__in=[s.pk for s in sources]).update(
        state=Memory.STATE_ACTIVE,
        archived_reason="",
        archived_at=None,
        consolidated_into=None,
        tier="warm",
        updated_at=now,
    )
    Memory.objects.filter(pk=memory.pk).update(
        state=Memory.STATE_ARCHIVED,
        archived_reason=Memory.ARCHIVED_MANUAL,
        archived_at=now,
        tier="archived",
        updated_at=now,
    )
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.unmerge",
        target=memory,
        data={"restored": [s.id for s in sources]},
    )
    return list(Memory.objects.filter(pk__in=[s.pk for s in sources]))


RESOLUTIONS = ("keep_first", "keep_second", "keep_both")


@transaction.atomic
def contradiction_resolve(*, principal: Principal, link: MemoryLink, resolution: str) -> MemoryLink:
    """A moderator settles a dispute: keep one (the other is superseded and archived) or both."""
    if not principal.has_scope("memories:write"):
        raise Forbidden("resolving disputes needs the 'memories:write' scope")
    if resolution not in RESOLUTIONS:
        raise InvalidInput(f"resolution must be one of {', '.join(RESOLUTIONS)}", field="resolution")
    link = MemoryLink.objects.select_for_update().get(pk=link.pk)
    if link.resolved_at is not None:
        raise Conflict("this dispute is already resolved")
    if resolution != "keep_both":
        keep, drop = (link.source, link.target) if resolution == "keep_first" else (link.target, link.source)
        memories_archive(
            organization=link.organization,
            memory_ids=drop.id,
            reason=Memory.ARCHIVED_SUPERSEDED,
            actor=principal,
            data={"kept": keep.id},
        )
        MemoryLink.objects.get_or_create(
            source=keep,
            target=drop,
            kind=MemoryLink.KIND_SUPERSEDES,
            defaults={"organization": link.organization, "reason": "moderator resolved a contradiction"},
        )
    link.resolved_at = timezone.now()
    link.save(update_fields=["resolved_at"])
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="contradiction.resolve",
        target=link.source,
        data={"link": link.pk, "resolution": resolution, "other": link.target_id},
    )
    return link
