"""The audit log's writes: one row per change a moderator or an owner might ask about, by whom (a
member, a token, a connected app or the system), on what, with what data. Every feature of accounts
and every other app records through these two functions."""

from __future__ import annotations

from typing import Any

from accounts.access import Principal
from accounts.models import AuditEvent, Organization


def audit_record(
    *,
    organization: Organization,
    actor: Principal | None,
    verb: str,
    target: Any = None,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    target_type = target._meta.model_name if target is not None else ""
    target_id = str(target.pk) if target is not None else ""
    return AuditEvent.objects.create(
        organization=organization,
        actor=actor.actor_label if actor else "system",
        actor_user=actor.user if actor and actor.user is not None else None,
        actor_token=actor.token if actor else None,
        verb=verb,
        target_type=target_type,
        target_id=target_id,
        data=data or {},
    )


def audit_record_many(
    *,
    organization: Organization,
    actor: Principal | None,
    verb: str,
    target_type: str,
    target_ids: list[str],
    data: dict[str, Any] | None = None,
) -> None:
    """One row per target in one statement (a consolidation run may archive thousands at once)."""
    label = actor.actor_label if actor else "system"
    user = actor.user if actor and actor.user is not None else None
    token = actor.token if actor else None
    AuditEvent.objects.bulk_create(
        [
            AuditEvent(
                organization=organization, actor=label, actor_user=user, actor_token=token, verb=verb,
                target_type=target_type, target_id=str(target_id), data=data or {},
            )
            for target_id in target_ids
        ],
        batch_size=1000,
    )
