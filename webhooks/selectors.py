"""Reads of webhook subscriptions and deliveries, always inside the caller's organization."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.access import Principal, access_filter, access_get
from webhooks.models import WebhookDelivery, WebhookSubscription


def subscription_list(principal: Principal) -> QuerySet[WebhookSubscription]:
    return access_filter(WebhookSubscription, principal).order_by("-created_at")


def subscription_get(principal: Principal, subscription_id: str) -> WebhookSubscription:
    """The organization's subscription, or Http404 (another organization's too)."""
    return access_get(WebhookSubscription, principal, pk=subscription_id)


def delivery_list(
    principal: Principal, *, subscription: WebhookSubscription | None = None, status: str | None = None
) -> QuerySet[WebhookDelivery]:
    qs = access_filter(WebhookDelivery, principal).select_related("subscription")
    if subscription is not None:
        qs = qs.filter(subscription=subscription)
    if status:
        qs = qs.filter(status=status)
    return qs.order_by("-created_at")


def delivery_get(principal: Principal, delivery_id: str) -> WebhookDelivery:
    return access_get(WebhookDelivery.objects.select_related("subscription"), principal, pk=delivery_id)


def subscriptions_for_event(organization_id: int, event_type: str) -> list[WebhookSubscription]:
    """The enabled subscriptions of one organization that asked for this event (the organization is
    the event's own, never a caller's choice)."""
    return list(
        WebhookSubscription.objects.filter(organization_id=organization_id, enabled=True, events__contains=[event_type])
    )
