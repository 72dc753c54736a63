"""The audit log's writes: one row per change a moderator or an owner might ask about, by whom (a
member, a token, a connected app or the system), on what, with what data, and from where (the client's
address and the client that named itself, read from the request context, so no caller passes them).
Every feature of accounts and every other app records through these two functions
(docs/identity.md#the-audit-log)."""

from __future__ import annotations

import ipaddress
from typing import Any

from accounts.access import Principal
from accounts.events import audit_recorded
from accounts.models import AuditEvent, Organization
from reasoningbank.request_context import request_client

CLIENT_MAX = 200  # AuditEvent.client


def audit_origin() -> tuple[str | None, str]:
    """The current request's client address (None when it is not one: a test client's, or outside a
    request) and client (MCP clientInfo, else the User-Agent); (None, "") for tasks and commands."""
    facts = request_client()
    if facts.transport == "internal":
        return None, ""
    try:
        ip: str | None = str(ipaddress.ip_address(facts.ip.strip())) if facts.ip else None
    except ValueError:
        ip = None
    return ip, facts.label[:CLIENT_MAX]


def audit_record(
    *,
    organization: Organization,
    actor: Principal | None,
    verb: str,
    target: Any = None,
    data: dict[str, Any] | None = None,
    actor_label: str | None = None,
) -> AuditEvent:
    """One row. ``actor_label`` names an actor who is no principal (someone who failed to sign in);
    otherwise the principal's label, or "system"."""
    target_type = target._meta.model_name if target is not None else ""
    target_id = str(target.pk) if target is not None else ""
    ip, client = audit_origin()
    event = AuditEvent.objects.create(
        organization=organization,
        actor=(actor_label or (actor.actor_label if actor else "system"))[:200],
        actor_user=actor.user if actor and actor.user is not None else None,
        actor_token=actor.token if actor else None,
        verb=verb,
        target_type=target_type,
        target_id=target_id,
        data=data or {},
        ip=ip,
        client=client,
    )
    audit_recorded.send(sender=AuditEvent, organization_id=organization.pk, event_ids=[event.pk])
    return event


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
    ip, client = audit_origin()
    events = AuditEvent.objects.bulk_create(
        [
            AuditEvent(
                organization=organization,
                actor=label,
                actor_user=user,
                actor_token=token,
                verb=verb,
                target_type=target_type,
                target_id=str(target_id),
                data=data or {},
                ip=ip,
                client=client,
            )
            for target_id in target_ids
        ],
        batch_size=1000,
    )
    if events:
        audit_recorded.send(
            sender=AuditEvent, organization_id=organization.pk, event_ids=[event.pk for event in events]
        )
