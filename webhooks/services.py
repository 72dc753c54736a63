"""Writes for webhooks: subscriptions (create, change, rotate the secret, delete), the fan-out of an
event to the organization's subscriptions, and one delivery attempt (the worker's) with its retry
and failure bookkeeping (docs/webhooks.md)."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F, Min, Q, QuerySet
from django.utils import timezone

from accounts.access import Principal
from accounts.models import SCOPE_ADMIN, Organization
from accounts.services import audit_record
from reasoningbank import net_guard
from reasoningbank.db_locks import lock_in_transaction
from reasoningbank.errors import Conflict, Forbidden, InvalidInput
from reasoningbank.scrubbing import scrub_secrets
from reasoningbank.tracing import task_carrier
from webhooks import policy, signing
from webhooks.event_types import EVENT_TYPES, event_types_unknown
from webhooks.models import WebhookDelivery, WebhookSubscription, new_event_id
from webhooks.selectors import subscriptions_for_event
from webhooks.transport import DeliveryFailed, delivery_post

logger = logging.getLogger(__name__)

DESCRIPTION_MAX = 200
SUBSCRIPTIONS_MAX = 20  # per organization: each event fans out to every one of them


# --- subscriptions ---------------------------------------------------------------------------------


def webhooks_admin_require(principal: Principal) -> None:
    """Webhooks send the organization's data to a URL of the caller's choosing: organization admins
    only, with a token (or role) for the whole organization."""
    if not principal.has_scope(SCOPE_ADMIN):
        raise Forbidden(f"webhooks need the '{SCOPE_ADMIN}' scope (organization admins)")
    if principal.is_restricted:
        raise Forbidden("a token restricted to some projects cannot manage webhooks: they cover the whole organization")


def subscription_url_check(url: str) -> str:
    """The URL, trimmed, if it may receive webhooks: https, and a host that resolves to public addresses
    only (unless ``WEBHOOKS_ALLOW_PRIVATE_ADDRESSES``); checked again at every delivery."""
    url = (url or "").strip()
    problem = policy.url_problem(url)
    if problem:
        raise InvalidInput(problem, field="url")
    parts = urlsplit(url)
    try:
        net_guard.host_addresses_checked(
            parts.hostname or "", parts.port or 443, allow_private=bool(settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES)
        )
    except net_guard.AddressRefused as exc:
        raise InvalidInput(f"the URL cannot receive webhooks: {exc}", field="url") from None
    return url


def _events_check(events: Any) -> list[str]:
    if not isinstance(events, list) or not events or not all(isinstance(name, str) for name in events):
        raise InvalidInput("give a non-empty list of event names", field="events")
    unknown = event_types_unknown(events)
    if unknown:
        raise InvalidInput(f"unknown event {unknown[0]!r}; the events are: {', '.join(EVENT_TYPES)}", field="events")
    return sorted(set(events))


def _description_check(description: Any) -> str:
    if not isinstance(description, str):
        raise InvalidInput("the description must be text", field="description")
    description = description.strip()
    if len(description) > DESCRIPTION_MAX or "\x00" in description:
        raise InvalidInput(f"the description takes at most {DESCRIPTION_MAX} characters", field="description")
    return description


def subscription_create(
    *, principal: Principal, url: str, events: list[str], description: str = ""
) -> WebhookSubscription:
    """A new subscription with a new secret (returned on the object once; shown only then)."""
    webhooks_admin_require(principal)
    events = _events_check(events)
    description = _description_check(description)
    url = subscription_url_check(url)
    with transaction.atomic():
        org = Organization.objects.select_for_update().get(pk=principal.organization.pk)  # counts one at a time
        if WebhookSubscription.objects.filter(organization=org).count() >= SUBSCRIPTIONS_MAX:
            raise Conflict(f"an organization has at most {SUBSCRIPTIONS_MAX} webhook subscriptions")
        subscription = WebhookSubscription.objects.create(
            organization=org,
            url=url,
            events=events,
            description=description,
            secret=signing.secret_generate(),
            created_by=principal.user,
        )
        audit_record(
            organization=org,
            actor=principal,
            verb="webhook.create",
            target=subscription,
            data={"url": url, "events": events},
        )
    return subscription


def subscription_update(
    *,
    principal: Principal,
    subscription: WebhookSubscription,
    url: str | None = None,
    events: list[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
) -> WebhookSubscription:
    """Change what was given; enabling a subscription clears its failure marks."""
    webhooks_admin_require(principal)
    changed: dict[str, Any] = {}
    if events is not None:
        changed["events"] = _events_check(events)
    if description is not None:
        changed["description"] = _description_check(description)
    if url is not None:
        changed["url"] = subscription_url_check(url)
    with transaction.atomic():
        subscription = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
        for name, value in changed.items():
            setattr(subscription, name, value)
        if enabled is True and not subscription.enabled:
            subscription.enabled, subscription.disabled_reason = True, ""
            _health_reset(subscription)  # a fresh start: the switch-off clock starts again at its next failure
            changed["enabled"] = True
        elif enabled is False and subscription.enabled:
            subscription.enabled, subscription.disabled_reason = False, WebhookSubscription.DISABLED_MANUAL
            changed["enabled"] = False
        subscription.save()
        audit_record(
            organization=subscription.organization,
            actor=principal,
            verb="webhook.update",
            target=subscription,
            data={"changed": sorted(changed)},
        )
    return subscription


def subscription_secret_rotate(*, principal: Principal, subscription: WebhookSubscription) -> WebhookSubscription:
    """A new secret at once: deliveries from now on (retries included) are signed with it."""
    webhooks_admin_require(principal)
    with transaction.atomic():
        subscription = WebhookSubscription.objects.select_for_update().get(pk=subscription.pk)
        subscription.secret = signing.secret_generate()
        subscription.save(update_fields=["secret", "updated_at"])
        audit_record(
            organization=subscription.organization, actor=principal, verb="webhook.rotate_secret", target=subscription
        )
    return subscription


def subscription_delete(*, principal: Principal, subscription: WebhookSubscription) -> None:
    """Gone with its delivery log."""
    webhooks_admin_require(principal)
    with transaction.atomic():
        audit_record(
            organization=subscription.organization,
            actor=principal,
            verb="webhook.delete",
            target=subscription,
            data={"url": subscription.url},
        )
        subscription.delete()


# --- events ----------------------------------------------------------------------------------------


def payload_scrub(value: Any) -> Any:
    """Every string of the payload through the secret scrubber (the bank's text is scrubbed when it
    enters, but a delivery leaves the service: scrubbing it again costs little and catches a
    credential in a judge's explanation or a session's error). Strings one by one, never the JSON
    text: a replacement must not cut through the JSON's quotes."""
    if isinstance(value, str):
        return scrub_secrets(value).text
    if isinstance(value, dict):
        return {key: payload_scrub(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [payload_scrub(item) for item in value]
    return value


def webhook_event_publish(
    *, organization_id: int, event_type: str, data: dict[str, Any] | Callable[[], dict[str, Any] | None]
) -> list[WebhookDelivery]:
    """One delivery per enabled subscription of this organization that asked for ``event_type``,
    queued for the worker once committed. ``data`` may be a function, called only when someone
    subscribed (most events of most organizations go nowhere); it returns None to drop the event."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown webhook event {event_type!r}")
    subscriptions = subscriptions_for_event(organization_id, event_type)
    if not subscriptions:
        return []
    body = data() if callable(data) else data
    if body is None:
        return []
    org = Organization.objects.only("slug").get(pk=organization_id)
    event_id = new_event_id()
    payload = payload_scrub(
        {
            "id": event_id,
            "type": event_type,
            "created_at": timezone.now().isoformat(),
            "organization": org.slug,
            "data": body,
        }
    )
    deliveries = WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(
                organization_id=organization_id,
                subscription=subscription,
                event_id=event_id,
                event_type=event_type,
                payload=payload,
            )
            for subscription in subscriptions
        ]
    )
    for delivery in deliveries:
        transaction.on_commit(functools.partial(delivery_enqueue, delivery.pk))
    return deliveries


def delivery_enqueue(delivery_id: str, *, delay_seconds: float = 0) -> None:
    """Hand a delivery to the webhook worker (its own queue, ``WEBHOOKS_CLUSTER``), now or after a
    delay (a retry): never to the worker that distils sessions and runs consolidation."""
    from django_q.models import Schedule
    from django_q.tasks import async_task

    cluster = settings.WEBHOOKS_CLUSTER
    if delay_seconds <= 0:
        async_task(
            "webhooks.tasks.webhook_deliver",
            delivery_id,
            task_name=f"webhook {delivery_id}",
            cluster=cluster,
            **task_carrier(),
        )
    else:
        Schedule.objects.create(
            func="webhooks.tasks.webhook_deliver",
            args=repr((delivery_id,)),
            schedule_type=Schedule.ONCE,
            next_run=timezone.now() + timedelta(seconds=delay_seconds),
            name=f"webhook {delivery_id} {timezone.now().timestamp():.0f}",
            cluster=cluster,  # created by the webhook worker's scheduler, into its own queue
        )


# --- delivering (the webhook worker) ---------------------------------------------------------------


def _pending(organization_id: int) -> QuerySet[WebhookDelivery]:
    return WebhookDelivery.objects.filter(organization_id=organization_id, status=WebhookDelivery.STATUS_PENDING)


def _not_in_flight(now: datetime) -> Q:
    return Q(leased_until__isnull=True) | Q(leased_until__lte=now)


def _due(now: datetime) -> Q:
    return Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)


def _waiting_in_order(organization_id: int, now: datetime) -> QuerySet[WebhookDelivery]:
    """The organization's deliveries that wait for an attempt, oldest first: the order they go out in."""
    return _pending(organization_id).filter(_not_in_flight(now)).filter(_due(now)).order_by("created_at", "id")


def _claim(delivery_id: str) -> WebhookDelivery | None:
    """Take the next delivery of ``delivery_id``'s organization for one attempt, or None when there is
    nothing to do: its organization already has ``WEBHOOK_ORG_CONCURRENCY`` deliveries in flight (the
    delivery waits; the attempt that ends first hands the slot on), or nothing of it is due.

    The next delivery is the organization's oldest waiting one — usually ``delivery_id`` itself — so
    deliveries held back by the cap go out in the order their events happened. The attempt is counted
    and the delivery leased for the attempt's deadline, so a second task for it (a sweep, a duplicate)
    does nothing meanwhile; under the organization's lock, so two workers cannot both take its last slot.
    """
    organization_id = WebhookDelivery.objects.filter(pk=delivery_id).values_list("organization_id", flat=True).first()
    if organization_id is None:
        return None
    with transaction.atomic():
        lock_in_transaction(f"webhooks-org-{organization_id}")
        now = timezone.now()
        in_flight = _pending(organization_id).filter(leased_until__gt=now).count()
        if in_flight >= int(settings.WEBHOOK_ORG_CONCURRENCY):
            return None
        pick = _waiting_in_order(organization_id, now).values_list("pk", flat=True).first()
        if pick is None:
            return None
        lease = now + timedelta(seconds=float(settings.WEBHOOK_TIMEOUT) + 60)
        WebhookDelivery.objects.filter(pk=pick).update(
            attempts=F("attempts") + 1, leased_until=lease, next_attempt_at=None
        )
    return WebhookDelivery.objects.select_related("subscription").get(pk=pick)


def _hand_on(organization_id: int) -> None:
    """An attempt of this organization ended: its next waiting delivery, if any, takes the freed slot."""
    following = _waiting_in_order(organization_id, timezone.now()).values_list("pk", flat=True).first()
    if following is not None:
        delivery_enqueue(following)


def delivery_attempt(delivery_id: str) -> WebhookDelivery | None:
    """One attempt of the organization's next delivery (``_claim``): sign, post, record; a retry
    scheduled with backoff on failure, the delivery failed after ``WEBHOOK_MAX_ATTEMPTS``. None when
    there was nothing to do."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return None
    try:
        return _attempt(delivery)
    finally:
        _hand_on(delivery.organization_id)


def webhook_ca_locations() -> tuple[str, ...]:
    """The CA certificates a receiver's certificate may chain to besides the system's, from the settings
    (docs/webhooks.md#trying-webhooks-locally). SSL_CERT_DIR may name several directories, as OpenSSL's."""
    directories = [item for item in settings.WEBHOOKS_SSL_CERT_DIR.split(os.pathsep) if item]
    named = [settings.WEBHOOKS_CA_BUNDLE, settings.WEBHOOKS_SSL_CERT_FILE, *directories]
    return tuple(dict.fromkeys(str(location) for location in named if location))


def _attempt(delivery: WebhookDelivery) -> WebhookDelivery:
    subscription = delivery.subscription
    if not subscription.enabled:
        return _finish(delivery, succeeded=False, error="the subscription is disabled")
    body = signing.payload_body(delivery.payload)
    timestamp = int(timezone.now().timestamp())
    headers = {
        signing.SIGNATURE_HEADER: signing.signature_header(subscription.secret, timestamp, body),
        "ReasoningBank-Event": delivery.event_type,
        "ReasoningBank-Event-Id": delivery.event_id,
        "ReasoningBank-Delivery": delivery.id,
    }
    try:
        attempt = delivery_post(
            subscription.url,
            body,
            headers,
            timeout_seconds=float(settings.WEBHOOK_TIMEOUT),
            allow_private=bool(settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES),
            ca_locations=webhook_ca_locations(),
        )
    except DeliveryFailed as exc:
        delivery.response_code, delivery.latency_ms = None, None
        return _after_failure(delivery, str(exc))
    delivery.response_code, delivery.latency_ms = attempt.status_code, attempt.latency_ms
    if policy.response_is_success(attempt.status_code):
        return _finish(delivery, succeeded=True, error="")
    return _after_failure(delivery, f"the receiver answered HTTP {attempt.status_code}")


HEALTH_FIELDS = ["failing_since", "failed_attempts", "last_error", "last_failure_at", "updated_at"]


def _failure_mark(subscription: WebhookSubscription, error: str, now: datetime) -> datetime:
    """An attempt failed: the subscription is failing from its first failed attempt since the last
    success, whether or not the delivery will be retried (docs/webhooks.md#health). Returns since when."""
    since = subscription.failing_since = subscription.failing_since or now
    subscription.failed_attempts += 1
    subscription.last_error, subscription.last_failure_at = error[:500], now
    return since


def _after_failure(delivery: WebhookDelivery, error: str) -> WebhookDelivery:
    if delivery.attempts >= int(settings.WEBHOOK_MAX_ATTEMPTS):
        return _finish(delivery, succeeded=False, error=error)
    delay = policy.retry_delay_seconds(delivery.attempts, base_seconds=float(settings.WEBHOOK_RETRY_BASE))
    now = timezone.now()
    with transaction.atomic():
        delivery.error = error[:500]
        delivery.next_attempt_at = now + timedelta(seconds=delay)
        delivery.leased_until = None  # no longer in flight: the slot is free for the next one
        delivery.save(update_fields=["error", "next_attempt_at", "leased_until", "response_code", "latency_ms"])
        subscription = WebhookSubscription.objects.select_for_update().get(pk=delivery.subscription_id)
        if subscription.enabled:
            _failure_mark(subscription, error, now)
            subscription.save(update_fields=HEALTH_FIELDS)
    delivery_enqueue(delivery.id, delay_seconds=delay)
    return delivery


def _finish(delivery: WebhookDelivery, *, succeeded: bool, error: str) -> WebhookDelivery:
    now = timezone.now()
    with transaction.atomic():
        delivery.status = WebhookDelivery.STATUS_SUCCEEDED if succeeded else WebhookDelivery.STATUS_FAILED
        delivery.error, delivery.finished_at, delivery.next_attempt_at = error[:500], now, None
        delivery.leased_until = None
        delivery.save(
            update_fields=[
                "status",
                "error",
                "finished_at",
                "next_attempt_at",
                "leased_until",
                "response_code",
                "latency_ms",
            ]
        )
        subscription = WebhookSubscription.objects.select_for_update().get(pk=delivery.subscription_id)
        if succeeded:
            _health_reset(subscription)
            subscription.last_success_at = now
        elif subscription.enabled:
            since = _failure_mark(subscription, error, now)
            subscription.consecutive_failures += 1
            # asked only here, when a delivery has failed every attempt: a receiver that fails now and
            # then but takes its retries is never switched off
            if policy.subscription_is_failing_too_long(since, now, after_seconds=float(settings.WEBHOOK_DISABLE_AFTER)):
                subscription.enabled = False
                subscription.disabled_reason = WebhookSubscription.DISABLED_FAILING
                logger.warning(
                    "webhook %s of %s switched off: failing since %s",
                    subscription.id,
                    subscription.organization_id,
                    since.isoformat(),
                )
        subscription.save(
            update_fields=[*HEALTH_FIELDS, "consecutive_failures", "last_success_at", "enabled", "disabled_reason"]
        )
    return delivery


def _health_reset(subscription: WebhookSubscription) -> None:
    subscription.failing_since, subscription.failed_attempts, subscription.consecutive_failures = None, 0, 0
    subscription.last_error, subscription.last_failure_at = "", None


def delivery_redeliver(*, principal: Principal, delivery: WebhookDelivery) -> WebhookDelivery:
    """The same event (its id and payload) sent again as a new delivery, with fresh attempts; the
    subscription must be enabled."""
    webhooks_admin_require(principal)
    subscription = delivery.subscription
    if not subscription.enabled:
        raise Conflict("the subscription is disabled: enable it first, then redeliver")
    with transaction.atomic():
        again = WebhookDelivery.objects.create(
            organization=delivery.organization,
            subscription=subscription,
            event_id=delivery.event_id,
            event_type=delivery.event_type,
            payload=delivery.payload,
            redelivery_of=delivery,
        )
        audit_record(
            organization=delivery.organization,
            actor=principal,
            verb="webhook.redeliver",
            target=again,
            data={"of": delivery.id},
        )
        transaction.on_commit(lambda: delivery_enqueue(again.id))
    return again


def deliveries_sweep() -> int:
    """Queue again the deliveries whose task was lost (a worker that died mid-attempt and left its lease
    to expire, a schedule row gone): waiting and due for more than a minute. Per organization, only as
    many as it has free slots, oldest first: a backlog held back by the in-flight cap is not a lost one,
    and queuing all of it every minute would only make tasks that find the cap full."""
    now = timezone.now()
    stale = now - timedelta(minutes=1)
    waiting = (
        WebhookDelivery.objects.filter(status=WebhookDelivery.STATUS_PENDING)
        .filter(_not_in_flight(now))
        .filter(Q(next_attempt_at__lte=stale) | Q(next_attempt_at__isnull=True, created_at__lte=stale))
    )
    organizations = list(waiting.values("organization_id").annotate(oldest=Min("created_at")).order_by("oldest")[:500])
    cap = int(settings.WEBHOOK_ORG_CONCURRENCY)
    queued = 0
    for row in organizations:
        organization_id = row["organization_id"]
        free = cap - _pending(organization_id).filter(leased_until__gt=now).count()
        if free <= 0:
            continue
        for pk in _waiting_in_order(organization_id, now).values_list("pk", flat=True)[:free]:
            delivery_enqueue(pk)
            queued += 1
    return queued
