"""An organization's deliveries in flight are capped (WEBHOOK_ORG_CONCURRENCY): beyond the cap they
wait — not lost, not attempted — and go out later in the order their events happened; another
organization's deliveries are not held back by it; and they go to the webhook worker's own queue,
never to the worker that distils sessions (docs/security/worker-fairness.md)."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.db import connection
from django.utils import timezone

from tests.slow_receiver import SlowReceiver
from tests.webhooks.conftest import RECEIVER_ADDRESS_URL
from webhooks import services
from webhooks.models import WebhookDelivery, WebhookSubscription
from webhooks.services import deliveries_sweep, delivery_attempt, webhook_event_publish
from webhooks.tasks import webhook_deliver


def publish(org: Any, n: int, django_capture_on_commit_callbacks: Any) -> list[WebhookDelivery]:
    made: list[WebhookDelivery] = []
    for i in range(n):
        with django_capture_on_commit_callbacks(execute=True):
            made += webhook_event_publish(
                organization_id=org.pk, event_type="memory.created", data={"memory": {"id": f"mem_{i}"}}
            )
    return made


def in_flight_elsewhere(*deliveries: WebhookDelivery) -> None:
    """As another worker's claim leaves them: counted, leased for the attempt's deadline."""
    for delivery in deliveries:
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            attempts=1, leased_until=timezone.now() + timedelta(seconds=65)
        )


def ended_elsewhere(delivery: WebhookDelivery) -> None:
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        status=WebhookDelivery.STATUS_SUCCEEDED, leased_until=None, finished_at=timezone.now()
    )


@pytest.fixture
def acme_five(cast, subscribe, enqueued, settings, django_capture_on_commit_callbacks) -> list[WebhookDelivery]:
    settings.WEBHOOK_ORG_CONCURRENCY = 2
    subscribe(["memory.created"])
    made = publish(cast.org_a, 5, django_capture_on_commit_callbacks)
    enqueued.clear()
    return made


def test_beyond_the_cap_a_delivery_waits_without_an_attempt(acme_five, receiver, enqueued):
    first, second, _, _, fifth = acme_five
    route = receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(204))
    in_flight_elsewhere(first, second)
    assert delivery_attempt(fifth.id) is None
    assert not route.called
    fifth.refresh_from_db()
    assert (fifth.status, fifth.attempts, fifth.leased_until) == (WebhookDelivery.STATUS_PENDING, 0, None)


def test_a_freed_slot_goes_to_the_oldest_waiting_delivery_and_the_next_is_handed_on(acme_five, receiver, enqueued):
    first, second, third, fourth, fifth = acme_five
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(204))
    in_flight_elsewhere(first, second)
    ended_elsewhere(first)
    # the task that runs is the fifth's, but the third waited longer: it goes first
    done = delivery_attempt(fifth.id)
    assert done is not None and done.id == third.id and done.status == WebhookDelivery.STATUS_SUCCEEDED
    assert enqueued == [(fourth.id, 0)]  # the slot it freed is handed on, in order
    assert webhook_deliver(fourth.id) == WebhookDelivery.STATUS_SUCCEEDED
    assert webhook_deliver(fifth.id) == WebhookDelivery.STATUS_SUCCEEDED
    assert not WebhookDelivery.objects.filter(status=WebhookDelivery.STATUS_PENDING).exclude(pk=second.pk).exists()


def test_deliveries_held_back_go_out_in_the_order_of_their_events(acme_five, receiver, enqueued):
    route = receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(204))
    for delivery in reversed(acme_five):  # the tasks come in any order
        webhook_deliver(delivery.id)
    sent = [call.request.headers["ReasoningBank-Delivery"] for call in route.calls]
    assert sent == [d.id for d in acme_five]


def test_another_organizations_delivery_is_not_held_back_by_a_full_cap(
    cast, acme_five, subscribe, receiver, enqueued, django_capture_on_commit_callbacks
):
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(204))
    in_flight_elsewhere(*acme_five[:2])
    subscribe(["memory.created"], org=cast.org_b)
    (theirs,) = publish(cast.org_b, 1, django_capture_on_commit_callbacks)
    done = delivery_attempt(theirs.id)
    assert done is not None and done.id == theirs.id and done.status == WebhookDelivery.STATUS_SUCCEEDED


def test_an_expired_lease_frees_its_slot_and_the_sweep_queues_only_what_the_cap_lets_through(acme_five, enqueued):
    first, second = acme_five[:2]
    long_ago = timezone.now() - timedelta(minutes=5)
    WebhookDelivery.objects.update(created_at=long_ago)
    for n, delivery in enumerate(acme_five):  # the order they were made in, kept
        WebhookDelivery.objects.filter(pk=delivery.pk).update(created_at=long_ago + timedelta(seconds=n))
    in_flight_elsewhere(first, second)
    assert deliveries_sweep() == 0  # both slots taken: nothing is lost, nothing to queue
    # the worker attempting the first died: its lease runs out, and its slot with it
    WebhookDelivery.objects.filter(pk=first.pk).update(leased_until=timezone.now() - timedelta(seconds=1))
    assert deliveries_sweep() == 1
    assert enqueued == [(first.id, 0)]  # the oldest waiting: the one whose attempt was cut short


def test_deliveries_go_to_the_webhook_workers_own_queue(db, monkeypatch, settings):
    from django_q import tasks
    from django_q.models import Schedule

    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(tasks, "async_task", lambda func, *args, **kwargs: sent.append({"func": func, **kwargs}))
    services.delivery_enqueue("whd_1")
    assert sent[0]["func"] == "webhooks.tasks.webhook_deliver"
    assert sent[0]["cluster"] == settings.WEBHOOKS_CLUSTER != settings.Q_CLUSTER["name"]
    services.delivery_enqueue("whd_1", delay_seconds=30)  # a retry: created by that worker's scheduler
    assert Schedule.objects.get(func="webhooks.tasks.webhook_deliver").cluster == settings.WEBHOOKS_CLUSTER


@pytest.mark.django_db(transaction=True)
def test_concurrent_workers_never_hold_more_of_one_organizations_deliveries_than_the_cap(
    cast, subscribe, resolver, enqueued, settings, django_capture_on_commit_callbacks
):
    """Six worker slots take six deliveries of one organization at the same moment, against a receiver
    that answers a byte a second: two connections at most, the other four wait their turn."""
    settings.WEBHOOK_ORG_CONCURRENCY = 2
    settings.WEBHOOK_TIMEOUT = 2
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = True
    resolver.names["127.0.0.1"] = ["127.0.0.1"]
    subscription = subscribe(["memory.created"])
    deliveries = publish(cast.org_a, 6, django_capture_on_commit_callbacks)
    with SlowReceiver(mode="headers", interval=1.0, max_seconds=30) as slow:
        # the https rule is the subscription's (tests/webhooks/test_policy.py); this receiver is plain HTTP
        WebhookSubscription.objects.filter(pk=subscription.pk).update(url=slow.url())
        start = threading.Barrier(len(deliveries))

        def worker_slot(delivery_id: str) -> None:
            try:
                start.wait()
                webhook_deliver(delivery_id)
            finally:
                connection.close()

        slots = [threading.Thread(target=worker_slot, args=(d.id,)) for d in deliveries]
        for slot in slots:
            slot.start()
        for slot in slots:
            slot.join(30)
        assert slow.most_open_at_once() <= 2
        assert slow.opened() == 2
    attempted = WebhookDelivery.objects.filter(attempts=1)
    assert attempted.count() == 2 and all("deadline" in d.error for d in attempted)
    waiting = WebhookDelivery.objects.filter(attempts=0, status=WebhookDelivery.STATUS_PENDING)
    assert waiting.count() == 4  # not lost: still pending, each handed on when a slot frees
    assert {pk for pk, _ in enqueued} <= {d.id for d in deliveries} and enqueued
