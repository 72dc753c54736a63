"""Dashboard pages of webhooks (Settings → Webhooks): subscriptions, their delivery log and
redelivery. Organization admins and owners only; a viewer or member gets a 403.

Thin: read through selectors, write through services, render."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.models import Membership
from accounts.views_base import org_view, settings_context
from reasoningbank.errors import ServiceError
from webhooks.event_types import EVENT_TYPES
from webhooks.models import WebhookDelivery, WebhookSubscription
from webhooks.selectors import delivery_get, delivery_list, subscription_get, subscription_list
from webhooks.services import (
    delivery_redeliver,
    subscription_create,
    subscription_delete,
    subscription_secret_rotate,
    subscription_update,
)

ADMIN = Membership.ROLE_ADMIN
DELIVERIES_PER_PAGE = 50


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"  # a page that shows a secret is never cached
    return response


def _list_page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    extra.setdefault("values", {"events": []})
    context = settings_context(
        request, "webhooks", subscriptions=subscription_list(principal), event_types=EVENT_TYPES.items(), **extra
    )
    return _no_store(render(request, "webhooks/settings_webhooks.html", context, status=status))


@org_view(min_role=ADMIN)
def settings_webhooks(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _list_page(request)
    principal = request.principal  # type: ignore[attr-defined]
    values: dict[str, Any] = {
        "url": request.POST.get("url", "").strip(),
        "events": request.POST.getlist("events"),
        "description": request.POST.get("description", "").strip(),
    }
    try:
        subscription = subscription_create(
            principal=principal, url=values["url"], events=values["events"], description=values["description"]
        )
    except ServiceError as exc:
        return _list_page(request, status=400, errors={exc.field or "form": exc.message}, values=values)
    return _list_page(request, created=subscription, secret=subscription.secret)


def _detail_page(request: HttpRequest, subscription: WebhookSubscription, **extra: Any) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    wanted = request.GET.get("status", "")
    status_filter = wanted if wanted in dict(WebhookDelivery.STATUS_CHOICES) else None
    deliveries = delivery_list(principal, subscription=subscription, status=status_filter)
    page = Paginator(deliveries, DELIVERIES_PER_PAGE).get_page(request.GET.get("page"))
    switch_off_at = (
        subscription.failing_since + timedelta(seconds=float(settings.WEBHOOK_DISABLE_AFTER))
        if subscription.failing_since
        else None
    )
    context = settings_context(
        request,
        "webhooks",
        subscription=subscription,
        switch_off_at=switch_off_at,
        page=page,
        status_filter=status_filter or "",
        status_choices=WebhookDelivery.STATUS_CHOICES,
        event_types=EVENT_TYPES.items(),
        **extra,
    )
    return _no_store(render(request, "webhooks/settings_webhook.html", context))


@org_view(min_role=ADMIN)
def settings_webhook(request: HttpRequest, subscription_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    subscription = subscription_get(principal, subscription_id)
    if request.method == "POST":  # the events and description form
        try:
            subscription = subscription_update(
                principal=principal,
                subscription=subscription,
                events=request.POST.getlist("events"),
                description=request.POST.get("description", ""),
            )
        except ServiceError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, "Subscription saved.")
        return redirect("settings-webhook", subscription_id=subscription.id)
    return _detail_page(request, subscription)


@require_POST
@org_view(min_role=ADMIN)
def webhook_rotate_secret(request: HttpRequest, subscription_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    subscription = subscription_secret_rotate(
        principal=principal, subscription=subscription_get(principal, subscription_id)
    )
    return _detail_page(request, subscription, secret=subscription.secret)


@require_POST
@org_view(min_role=ADMIN)
def webhook_toggle(request: HttpRequest, subscription_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    subscription = subscription_get(principal, subscription_id)
    enable = request.POST.get("enabled") == "on"
    subscription_update(principal=principal, subscription=subscription, enabled=enable)
    messages.success(request, "Deliveries switched on." if enable else "Deliveries switched off.")
    return redirect("settings-webhook", subscription_id=subscription.id)


@require_POST
@org_view(min_role=ADMIN)
def webhook_delete(request: HttpRequest, subscription_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    subscription = subscription_get(principal, subscription_id)
    url = subscription.url
    subscription_delete(principal=principal, subscription=subscription)
    messages.success(request, f"The subscription of {url} was deleted.")
    return redirect("settings-webhooks")


@require_POST
@org_view(min_role=ADMIN)
def webhook_redeliver(request: HttpRequest, delivery_id: str) -> HttpResponse:
    principal = request.principal  # type: ignore[attr-defined]
    delivery = delivery_get(principal, delivery_id)
    try:
        again = delivery_redeliver(principal=principal, delivery=delivery)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{delivery.event_type} queued again as {again.id}.")
    return redirect("settings-webhook", subscription_id=delivery.subscription_id)
