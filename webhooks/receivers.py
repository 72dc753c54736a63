"""Where each webhook event comes from: the Django signals the apps already send, read here, so no
service of theirs knows about webhooks (docs/webhooks.md#events).

| event | signal |
|---|---|
| memory.created | ``post_save`` of a new active ``Memory`` (not an import); ``memories.events.memory_approved`` |
| memory.quarantined | ``post_save`` of a new quarantined ``Memory``, or ``memory_quarantined`` (an edit or a restore held an existing one); its rules and source, never its text |
| memory.merged, memory.superseded | ``memories.events.memories_archived`` (by the archive reason) |
| contradiction.found | ``consolidation.events.contradiction_detected`` (not for a dry run) |
| dispute.opened | ``post_save`` of a new ``contradicts`` ``MemoryLink`` |
| dispute.resolved | ``post_save`` of a ``contradicts`` link whose ``resolved_at`` was set |
| promotion.proposed | ``post_save`` of a new ``promotion`` ``ReviewItem`` |
| consolidation.run_finished / run_failed | ``consolidation.events.run_completed`` |
| session.distilled / session.failed | ``post_save`` of an ``AgentSession`` that reached ``done`` / ``failed`` |
| llm.budget_alert | ``reasoningbank.ai.budget.llm_budget_alert`` (once per period and cap) |
| security.token_suspended | ``accounts.events.write_suspended`` (once per suspension) |
| audit.event | ``accounts.events.audit_recorded`` (one event per audit row) |

Each receiver only registers a callback for after the commit (a rolled back write sends nothing),
which builds the payload and creates the deliveries when the organization subscribed; a failure
there is logged, never raised into the write that caused the event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models.signals import post_save

from accounts import events as accounts_events
from accounts.selectors import audit_events_describe
from consolidation import events as consolidation_events
from consolidation.models import ConsolidationRun, ReviewItem
from memories import events as memories_events
from memories.models import AgentSession, Memory, MemoryLink
from memories.reads import memory_source, rules_named
from reasoningbank.ai.budget import llm_budget_alert
from webhooks.selectors import subscriptions_for_event
from webhooks.services import webhook_event_publish

logger = logging.getLogger(__name__)

MERGED_REASONS = (Memory.ARCHIVED_CONSOLIDATED, Memory.ARCHIVED_DUPLICATE)
RUN_FINISHED = (ConsolidationRun.STATUS_COMPLETED, ConsolidationRun.STATUS_SKIPPED)
LINK_QUERY_IDS = 5000  # ids per query when reading the links of a merge


def event_publish_on_commit(organization_id: int, event_type: str, data: Callable[[], dict[str, Any] | None]) -> None:
    def publish() -> None:
        try:
            webhook_event_publish(organization_id=organization_id, event_type=event_type, data=data)
        except Exception:  # the write that caused the event is committed: never fail it for a webhook
            logger.exception("webhook event %s of organization %s was not published", event_type, organization_id)

    transaction.on_commit(publish)


# --- payload parts -----------------------------------------------------------------------------------


def memory_summary(memory: Memory) -> dict[str, Any]:
    """What a receiver needs to act on a memory; its content is one GET away
    (``/api/v1/memories/<id>``), and does not travel in every event."""
    return {
        "id": memory.id,
        "title": memory.title,
        "description": memory.description,
        "kind": memory.kind,
        "outcome": memory.outcome,
        "state": memory.state,
        "origin": memory.origin,
        "project": memory.project.slug if memory.project is not None else None,
        "team": memory.team.slug if memory.team is not None else None,
        "confidence": round(float(memory.confidence), 4),
        "created_at": memory.created_at.isoformat() if memory.created_at else None,
    }


def run_summary(run: ConsolidationRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "project": run.project.slug if run.project is not None else None,
        "status": run.status,
        "trigger": run.trigger,
        "dry_run": run.dry_run,
        "counters": run.counters or {},
        "errors": [str(error)[:500] for error in (run.errors or [])[:10]],
        "duration_seconds": (run.result or {}).get("duration_seconds"),
    }


# --- receivers ---------------------------------------------------------------------------------------


def memory_quarantined_summary(memory: Memory) -> dict[str, Any]:
    """What an admin's receiver needs to know that a memory waits for review, and nothing of its text: the
    text was held because it may carry orders for an AI, and a receiver (a chat channel, an LLM triage bot)
    would pass them on. The rules that fired (names only) and who wrote it; the review queue shows the rest."""
    return {
        "id": memory.id,
        "project": memory.project.slug if memory.project is not None else None,
        "team": memory.team.slug if memory.team is not None else None,
        "origin": memory.origin,
        "rules": rules_named(memory.flags or []),
        "source": memory_source(memory)["label"],
        "created_at": memory.created_at.isoformat() if memory.created_at else None,
    }


def on_memory_saved(sender: Any, instance: Memory, created: bool = False, raw: bool = False, **kwargs: Any) -> None:
    if not created or raw:
        return
    if instance.state == Memory.STATE_QUARANTINED:  # memory.created waits for an admin's approval
        event_publish_on_commit(
            instance.organization_id, "memory.quarantined", lambda: {"memory": memory_quarantined_summary(instance)}
        )
        return
    event_publish_on_commit(instance.organization_id, "memory.created", lambda: {"memory": memory_summary(instance)})


def on_memory_quarantined(sender: Any, organization_id: int, memory: Memory, **kwargs: Any) -> None:
    # an existing memory held again (an edit, a restore): admins review it like a new one
    event_publish_on_commit(
        organization_id, "memory.quarantined", lambda: {"memory": memory_quarantined_summary(memory)}
    )


def on_memory_approved(sender: Any, organization_id: int, memory: Memory, first_entry: bool, **kwargs: Any) -> None:
    # it enters the bank now; one that was active before (an edit or a restore put it in quarantine) was
    # announced when it was created
    if first_entry:
        event_publish_on_commit(organization_id, "memory.created", lambda: {"memory": memory_summary(memory)})


def survivors_by_link(organization_id: int, memory_ids: list[str], kind: str, run: str | None) -> dict[str, str]:
    """The memory each of ``memory_ids`` was archived in favour of, read from the links the archive's
    writer made in the same transaction (``duplicates``: the kept memory → the duplicate; ``supersedes``:
    the newer → the older). A memory merged, restored and merged again has several: this run's link,
    else the newest."""
    links: list[tuple[str, str, str | None, datetime, int]] = []
    for start in range(0, len(memory_ids), LINK_QUERY_IDS):  # a run may merge more ids than a query may bind
        links += MemoryLink.objects.filter(
            organization_id=organization_id, kind=kind, target_id__in=memory_ids[start : start + LINK_QUERY_IDS]
        ).values_list("target_id", "source_id", "run_id", "created_at", "pk")
    links.sort(key=lambda link: (link[3], link[4]))
    found: dict[str, str] = {}
    of_this_run: set[str] = set()
    for target, source, link_run, *_ in links:
        if target in of_this_run:
            continue
        found[target] = source
        if run is not None and link_run == run:
            of_this_run.add(target)
    return found


def merges_group(memory_ids: list[str], survivors: dict[str, str]) -> list[dict[str, Any]]:
    """``[{"into": survivor, "memory_ids": [...]}]``, survivors in the order their first memory comes;
    memories whose survivor is unknown (archived as duplicates by hand) under ``"into": null``."""
    groups: dict[str | None, list[str]] = {}
    for memory_id in memory_ids:
        groups.setdefault(survivors.get(memory_id), []).append(memory_id)
    return [{"into": into, "memory_ids": ids} for into, ids in groups.items()]


def on_memories_archived(
    sender: Any,
    organization: Any,
    memory_ids: list[str],
    reason: str,
    into: Memory | None = None,
    data: dict[str, Any] | None = None,
    **kwargs: Any,
) -> None:
    details = data or {}
    ids, run = list(memory_ids), details.get("run")
    if reason in MERGED_REASONS:

        def merged() -> dict[str, Any]:
            # a consolidation merges into the one memory it writes; duplicates go each into the strongest of
            # its own group, several groups in one archive (one event per run, not one per group: a run
            # over a large bank merges thousands, and the organization's deliveries go out in order)
            if into is not None:
                survivors = {memory_id: into.id for memory_id in ids}
            else:
                survivors = survivors_by_link(organization.id, ids, MemoryLink.KIND_DUPLICATES, run)
            merges = merges_group(ids, survivors)
            single = merges[0]["into"] if len(merges) == 1 else None
            return {"memory_ids": ids, "reason": reason, "into": single, "merges": merges, "run": run}

        event_publish_on_commit(organization.id, "memory.merged", merged)
    elif reason == Memory.ARCHIVED_SUPERSEDED:

        def superseded() -> dict[str, Any]:
            by = into.id if into else details.get("kept")
            if by is None:  # the judge supersedes an older memory by a newer one, linked in the same write
                found = set(survivors_by_link(organization.id, ids, MemoryLink.KIND_SUPERSEDES, run).values())
                by = found.pop() if len(found) == 1 else None
            return {"memory_ids": ids, "by": by, "run": run}

        event_publish_on_commit(organization.id, "memory.superseded", superseded)


def on_contradiction_detected(
    sender: Any, run: ConsolidationRun, contradictions: list[dict[str, Any]], **kwargs: Any
) -> None:
    if run.dry_run or not contradictions:
        return
    items = [
        {
            "first": item.get("first"),
            "second": item.get("second"),
            "confidence": item.get("confidence"),
            "explanation": str(item.get("explanation", ""))[:2000],
        }
        for item in contradictions
    ]
    event_publish_on_commit(
        run.organization_id,
        "contradiction.found",
        lambda: {
            "run": run.id,
            "project": run.project.slug if run.project is not None else None,
            "contradictions": items,
        },
    )


def _dispute(link: MemoryLink) -> dict[str, Any]:
    return {"id": link.pk, "first": link.source_id, "second": link.target_id, "reason": link.reason[:2000]}


def on_link_saved(
    sender: Any,
    instance: MemoryLink,
    created: bool = False,
    raw: bool = False,
    update_fields: Any = None,
    **kwargs: Any,
) -> None:
    if raw or instance.kind != MemoryLink.KIND_CONTRADICTS:
        return
    if created:
        event_publish_on_commit(instance.organization_id, "dispute.opened", lambda: {"dispute": _dispute(instance)})
    elif instance.resolved_at is not None and update_fields is not None and "resolved_at" in update_fields:

        def resolved() -> dict[str, Any]:
            # which memory a moderator kept shows in their states (the other is archived, superseded)
            states = dict(
                Memory.objects.filter(pk__in=[instance.source_id, instance.target_id]).values_list("id", "state")
            )
            return {
                "dispute": {
                    **_dispute(instance),
                    "resolved_at": instance.resolved_at.isoformat() if instance.resolved_at else None,
                    "states": states,
                }
            }

        event_publish_on_commit(instance.organization_id, "dispute.resolved", resolved)


def on_review_item_saved(
    sender: Any, instance: ReviewItem, created: bool = False, raw: bool = False, **kwargs: Any
) -> None:
    if not created or raw or instance.kind != ReviewItem.KIND_PROMOTION:
        return

    def proposal() -> dict[str, Any]:
        memory = Memory.objects.select_related("project", "team").get(pk=instance.first_id)
        return {"review_id": instance.pk, "status": instance.status, "memory": memory_summary(memory)}

    event_publish_on_commit(instance.organization_id, "promotion.proposed", proposal)


def on_run_completed(sender: Any, run: ConsolidationRun, **kwargs: Any) -> None:
    if run.status in RUN_FINISHED:
        event_type = "consolidation.run_finished"
    elif run.status == ConsolidationRun.STATUS_FAILED:
        event_type = "consolidation.run_failed"
    else:
        return
    event_publish_on_commit(run.organization_id, event_type, lambda: {"run": run_summary(run)})


def on_session_saved(
    sender: Any, instance: AgentSession, created: bool = False, raw: bool = False, **kwargs: Any
) -> None:
    # a session is saved once when it finishes (memories.sessions.services); queued, running and
    # waiting saves are not events
    if raw or instance.status not in (AgentSession.STATUS_DONE, AgentSession.STATUS_FAILED):
        return
    event_type = "session.distilled" if instance.status == AgentSession.STATUS_DONE else "session.failed"

    def session() -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": instance.id,
            "external_id": instance.external_id,
            "project": instance.project.slug,
            "outcome": instance.outcome,
            "status": instance.status,
            "attempts": instance.attempts,
            "rounds": instance.rounds,  # a session handed in again after its distillation: one event per round
        }
        if instance.status == AgentSession.STATUS_DONE:
            distilled = Memory.objects.filter(source_session=instance)
            body["memory_ids"] = sorted(distilled.values_list("id", flat=True))
            this_round = distilled.filter(created_at__gte=instance.started_at) if instance.started_at else distilled
            body["round_memory_ids"] = sorted(this_round.values_list("id", flat=True))
        else:
            body["error"] = instance.error[:2000]
        return {"session": body}

    event_publish_on_commit(instance.organization_id, event_type, session)


def on_llm_budget_alert(sender: Any, organization_id: int, data: dict[str, Any], **kwargs: Any) -> None:
    event_publish_on_commit(organization_id, "llm.budget_alert", lambda: {"budget": dict(data)})


def on_write_suspended(sender: Any, organization_id: int, data: dict[str, Any], **kwargs: Any) -> None:
    event_publish_on_commit(organization_id, "security.token_suspended", lambda: {"suspension": dict(data)})


AUDIT_EVENT = "audit.event"


def on_audit_recorded(sender: Any, organization_id: int, event_ids: list[int], **kwargs: Any) -> None:
    """One ``audit.event`` per audit row, once committed. A delivery attempt writes no audit row
    (webhooks/services.py: only an admin's change or redelivery does), so the stream never feeds itself."""

    def publish() -> None:
        try:
            if not subscriptions_for_event(organization_id, AUDIT_EVENT):
                return  # asked once for the batch: most organizations stream nothing
            for event in audit_events_describe(organization_id, list(event_ids)):
                webhook_event_publish(
                    organization_id=organization_id, event_type=AUDIT_EVENT, data={"audit": event}
                )
        except Exception:  # the write that caused the rows is committed: never fail it for a webhook
            logger.exception("audit.event of organization %s was not published", organization_id)

    transaction.on_commit(publish)


def receivers_connect() -> None:
    uid = "webhooks"
    post_save.connect(on_memory_saved, sender=Memory, dispatch_uid=f"{uid}.memory")
    post_save.connect(on_link_saved, sender=MemoryLink, dispatch_uid=f"{uid}.link")
    post_save.connect(on_review_item_saved, sender=ReviewItem, dispatch_uid=f"{uid}.review")
    post_save.connect(on_session_saved, sender=AgentSession, dispatch_uid=f"{uid}.session")
    memories_events.memories_archived.connect(on_memories_archived, dispatch_uid=f"{uid}.archived")
    memories_events.memory_approved.connect(on_memory_approved, dispatch_uid=f"{uid}.approved")
    memories_events.memory_quarantined.connect(on_memory_quarantined, dispatch_uid=f"{uid}.quarantined")
    consolidation_events.contradiction_detected.connect(on_contradiction_detected, dispatch_uid=f"{uid}.contradiction")
    consolidation_events.run_completed.connect(on_run_completed, dispatch_uid=f"{uid}.run")
    llm_budget_alert.connect(on_llm_budget_alert, dispatch_uid=f"{uid}.llm_budget_alert")
    accounts_events.write_suspended.connect(on_write_suspended, dispatch_uid=f"{uid}.write_suspended")
    accounts_events.audit_recorded.connect(on_audit_recorded, dispatch_uid=f"{uid}.audit_recorded")
