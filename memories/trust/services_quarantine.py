"""An admin's decision on what the instruction-smell detector held (docs/security/memory-poisoning.md#quarantine):
approve a quarantined memory or a held summary, or delete it. Audited, in one transaction each.

Approving makes the memory active and trusted, names the person who reviewed it (``reviewed_by`` /
``reviewed_at``), tells the listeners (``memories.events.memory_approved``: webhooks send the
``memory.created`` they held back while it waited), and teaches the detector: one ``DetectorException``
per finding, so the same text is not flagged again in this organization — and nothing else is exempted
(the exception is the rule and the fingerprint of the span that fired). Deleting removes the memory (its
links, signals and summary with it): a quarantined memory was never served, so nothing depends on it.

A session whose distilled memories were held (``held``) counts as done once none of them waits any more.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.models import AuditEvent
from accounts.services import audit_record
from memories.core.services import memories_added_notify, memory_limit_check
from memories.embedding import embed_texts, summary_embedding_text
from memories.events import memory_approved
from memories.models import AgentSession, Memory, MemorySummary
from memories.trust.screening import memory_texts, rules_named, summary_texts
from memories.trust.selectors_quarantine import quarantine_admin_require
from memories.trust.services import exceptions_learn
from reasoningbank.errors import Conflict


def reviewer_of(principal: Principal) -> Any:
    """The person behind a decision: the signed-in user (or the user who consented to an OAuth app), or
    the person who created the admin token that made it."""
    if principal.user is not None:
        return principal.user
    return principal.token.created_by if principal.token is not None else None


def _locked(memory: Memory) -> Memory:
    locked = Memory.objects.select_for_update().get(pk=memory.pk, organization=memory.organization_id)
    if locked.state != Memory.STATE_QUARANTINED:
        # decided meanwhile (another admin, a double click): say so rather than decide twice
        raise Conflict(f"memory {memory.id} is no longer in quarantine (it is {locked.state})", field="memory_id")
    return locked


@transaction.atomic
def quarantine_approve(*, principal: Principal, memory: Memory) -> Memory:
    """A quarantined memory (from ``selectors_quarantine.quarantined_get``) becomes active and trusted;
    the detector learns its findings as exceptions of the organization. Audited
    ``memory.quarantine_approve``. A 409 when it was decided meanwhile, a 403 at the plan's limit of
    active memories."""
    quarantine_admin_require(principal, "approving a quarantined memory")
    memory = _locked(memory)
    memory_limit_check(principal.organization, adding=1)
    first_entry = _never_active(memory)
    reviewer = reviewer_of(principal)
    learned = exceptions_learn(
        organization=principal.organization,
        flags=memory.flags,
        texts=memory_texts(
            title=memory.title, description=memory.description, content=memory.content, tags=memory.tags
        ),
        memory_id=memory.id,
        user=reviewer,
    )
    now = timezone.now()
    memory.state = Memory.STATE_ACTIVE
    memory.trust = Memory.TRUST_TRUSTED
    memory.reviewed_by, memory.reviewed_at = reviewer, now
    memory.updated_at = now
    memory.save(update_fields=["state", "trust", "reviewed_by", "reviewed_at", "updated_at"])
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.quarantine_approve",
        target=memory,
        data={"rules": rules_named(memory.flags), "exceptions_learned": learned, "title": memory.title[:200]},
    )
    _session_release(memory.source_session_id)
    project = memory.project
    transaction.on_commit(lambda: memories_added_notify(project, 1))  # it counts as new for consolidation
    memory_approved.send(sender=Memory, organization_id=memory.organization_id, memory=memory, first_entry=first_entry)
    return memory


def _never_active(memory: Memory) -> bool:
    """``memory`` was stored in quarantine when it was written (``memories_create`` audits that as
    ``memory.quarantine``) and no admin approved it since — as opposed to an active memory that an edit
    or a restore put in quarantine, or one imported in quarantine (an import announces no memory)."""
    verbs = set(
        AuditEvent.objects.filter(
            organization_id=memory.organization_id,
            target_type=Memory._meta.model_name,
            target_id=memory.id,
            verb__in=("memory.quarantine", "memory.quarantine_approve"),
        ).values_list("verb", flat=True)
    )
    return verbs == {"memory.quarantine"}


@transaction.atomic
def quarantine_delete(*, principal: Principal, memory: Memory) -> None:
    """Delete a quarantined memory for good. Audited ``memory.quarantine_delete`` with its title and
    the rules that held it (the text itself is gone)."""
    quarantine_admin_require(principal, "deleting a quarantined memory")
    memory = _locked(memory)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="memory.quarantine_delete",
        target=memory,
        data={"rules": rules_named(memory.flags), "title": memory.title[:200], "origin": memory.origin},
    )
    session_id = memory.source_session_id
    memory.delete()
    _session_release(session_id)


def _session_release(session_id: str | None) -> None:
    """A held session none of whose memories waits in quarantine any more is done."""
    if session_id is None:
        return
    if Memory.objects.filter(source_session_id=session_id, state=Memory.STATE_QUARANTINED).exists():
        return
    AgentSession.objects.filter(pk=session_id, status=AgentSession.STATUS_HELD).update(
        status=AgentSession.STATUS_DONE, updated_at=timezone.now()
    )


def _summary_locked(summary: MemorySummary) -> MemorySummary:
    locked = MemorySummary.objects.select_for_update().get(pk=summary.pk, organization=summary.organization_id)
    if locked.status != MemorySummary.STATUS_HELD:
        raise Conflict(f"summary {summary.id} is no longer held for review (it is {locked.status})", field="summary_id")
    return locked


@transaction.atomic
def summary_held_approve(*, principal: Principal, summary: MemorySummary) -> MemorySummary:
    """A held summary becomes ready (served again with its memory) and its findings exceptions of the
    organization. Audited ``summary.quarantine_approve``."""
    quarantine_admin_require(principal, "approving a held summary")
    summary = _summary_locked(summary)
    learned = exceptions_learn(
        organization=principal.organization,
        flags=summary.flags,
        texts=summary_texts(
            summary=summary.summary,
            key_facts=summary.key_facts,
            decisions=summary.decisions,
            superseded_facts=summary.superseded_facts,
        ),
        memory_id=summary.memory_id,
        user=reviewer_of(principal),
    )
    summary.status = MemorySummary.STATUS_READY
    fields = ["status"]
    if summary.embedding is None:  # an imported held summary was never embedded
        (summary.embedding,), summary.embedding_model = embed_texts(
            [summary_embedding_text(summary.summary, summary.key_facts)]
        )
        fields += ["embedding", "embedding_model"]
    summary.save(update_fields=fields)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="summary.quarantine_approve",
        target=summary.memory,
        data={"summary": summary.id, "rules": rules_named(summary.flags), "exceptions_learned": learned},
    )
    return summary


@transaction.atomic
def summary_held_delete(*, principal: Principal, summary: MemorySummary) -> None:
    """Delete a held summary (a later consolidation run may summarise the cluster again). Audited
    ``summary.quarantine_delete``."""
    quarantine_admin_require(principal, "deleting a held summary")
    summary = _summary_locked(summary)
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="summary.quarantine_delete",
        target=summary.memory,
        data={"summary": summary.id, "rules": rules_named(summary.flags)},
    )
    summary.delete()
