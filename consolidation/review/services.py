"""Writes of the review queue (docs/consolidation.md#the-review-queue-and-disputes): a moderator decides
a pair consolidation set aside.

A pair of similar memories with conflict cues (``consolidation.cues``) is never merged on similarity
alone; without a judge, or when the judge could not answer, it waits as a pending ``ReviewItem``.
``review_decide`` settles it in one click: ``contradicts`` links the pair the way the judge does (a
``contradicts`` link, listed with the disputes until someone keeps one or both), ``compatible``
clears the cue so a later run may merge or synthesise the pair. Audited, like every moderation.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.models import SCOPE_MEMORIES_WRITE
from accounts.services import audit_record
from consolidation.models import ReviewItem
from consolidation.promotion.services import promotion_decide
from consolidation.validation import NOTE_MAX, review_note_clean
from memories.models import MemoryLink
from reasoningbank.errors import Conflict, Forbidden, InvalidInput

DECISIONS = (ReviewItem.STATUS_CONTRADICTS, ReviewItem.STATUS_COMPATIBLE)
DEFAULT_REASONS = {
    ReviewItem.STATUS_CONTRADICTS: "a moderator found that they contradict",
    ReviewItem.STATUS_COMPATIBLE: "a moderator found that they agree: they may be merged",
}


def review_decision_clean(decision: Any, note: Any) -> tuple[str, str]:
    if decision not in DECISIONS:
        raise InvalidInput(f"decision must be one of {', '.join(DECISIONS)} (got {decision!r})", field="decision")
    return decision, review_note_clean(note)


@transaction.atomic
def review_decide(*, principal: Principal, item: ReviewItem, decision: Any, note: Any = "") -> ReviewItem:
    """Settle a pending review item. ``item`` comes from ``consolidation.review.selectors.review_get`` (the
    caller's org and reach); deciding one twice is a 409 naming who decided it. A promotion proposal
    is accepted or rejected by ``consolidation.promotion.services.promotion_decide``."""
    if item.kind == ReviewItem.KIND_PROMOTION:
        return promotion_decide(principal=principal, item=item, decision=decision, note=note)
    if not principal.has_scope(SCOPE_MEMORIES_WRITE):
        raise Forbidden(f"deciding reviews needs the '{SCOPE_MEMORIES_WRITE}' scope (viewers are read-only)")
    decision, note = review_decision_clean(decision, note)
    # "of": second and project are nullable since promotions, an outer join FOR UPDATE refuses
    item = (
        ReviewItem.objects.select_for_update(of=("self",))
        .select_related("first", "second", "project")
        .get(pk=item.pk)
    )
    if item.status != ReviewItem.STATUS_PENDING:
        raise Conflict(
            f"this pair was already decided: {item.get_status_display().lower()}"
            f"{f' by {item.decided_by}' if item.decided_by else ''}",
            field="review_id",
        )
    reason = note or DEFAULT_REASONS[decision]
    link = None
    if decision == ReviewItem.STATUS_CONTRADICTS:
        # as the judge links a contradiction (consolidation.phases.judge): older → newer, both stay active
        link, _ = MemoryLink.objects.get_or_create(
            source=item.first,
            target=item.second,
            kind=MemoryLink.KIND_CONTRADICTS,
            defaults={"organization_id": item.organization_id, "weight": 1.0, "reason": reason[:NOTE_MAX]},
        )
    item.status, item.reason = decision, reason[:NOTE_MAX]
    item.decided_by, item.decided_at = principal.actor_label[:200], timezone.now()
    item.save(update_fields=["status", "reason", "decided_by", "decided_at"])
    audit_record(
        organization=principal.organization,
        actor=principal,
        verb="review.decide",
        target=item.first,
        data={
            "review": item.pk,
            "decision": decision,
            "other": item.second_id,
            "note": note,
            **({"link": link.pk} if link is not None else {}),
        },
    )
    return item
