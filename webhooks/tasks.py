"""django-q2 entry points for webhooks: take ids, call services."""

from __future__ import annotations

from reasoningbank.tracing import task_traced
from webhooks.services import deliveries_sweep, delivery_attempt


@task_traced("task.webhook_deliver")  # a child of the request whose event queued it
def webhook_deliver(delivery_id: str) -> str | None:
    """One attempt of one delivery (queued when the event is published, and again for each retry)."""
    delivery = delivery_attempt(delivery_id)
    return None if delivery is None else delivery.status


def webhooks_sweep() -> int:
    return deliveries_sweep()
