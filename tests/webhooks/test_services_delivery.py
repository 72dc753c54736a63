"""One delivery attempt by the worker (webhooks.services.delivery_attempt): signed, retried with
backoff, logged, refused for internal addresses at delivery time, and the subscription marked when
it keeps failing. The receiving end is respx; names resolve from a table."""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from reasoningbank.errors import Conflict
from tests.webhooks.conftest import RECEIVER_ADDRESS_URL, RECEIVER_HOST, RECEIVER_IP
from webhooks.models import WebhookDelivery, WebhookSubscription
from webhooks.services import deliveries_sweep, delivery_attempt, delivery_redeliver, webhook_event_publish
from webhooks.signing import SIGNATURE_HEADER, signature_verify
from webhooks.tasks import webhook_deliver


@pytest.fixture
def delivery(subscribe, enqueued, django_capture_on_commit_callbacks) -> WebhookDelivery:
    subscribe(["memory.created"])
    with django_capture_on_commit_callbacks(execute=True):
        (made,) = webhook_event_publish(
            organization_id=WebhookSubscription.objects.get().organization_id,
            event_type="memory.created",
            data={"memory": {"id": "mem_1", "title": "pin the linter"}},
        )
    return made


def test_the_delivery_log_shows_the_exact_bytes_that_were_posted_and_signed(delivery, receiver, enqueued):
    route = receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(204))
    delivery_attempt(delivery.id)
    sent = route.calls.last.request
    logged = WebhookDelivery.objects.get(pk=delivery.id)
    assert logged.body.encode("utf-8") == sent.content
    assert signature_verify(delivery.subscription.secret, sent.headers[SIGNATURE_HEADER], logged.body.encode()) > 0
    assert json.loads(logged.body_pretty) == json.loads(sent.content) and "\n  " in logged.body_pretty


def test_a_delivery_posts_the_payload_signed_with_the_subscriptions_secret(delivery, receiver, enqueued, settings):
    route = receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(204))
    done = delivery_attempt(delivery.id)
    assert done is not None and done.status == WebhookDelivery.STATUS_SUCCEEDED
    request = route.calls.last.request
    secret = delivery.subscription.secret
    assert signature_verify(secret, request.headers[SIGNATURE_HEADER], request.content) > 0
    assert request.headers["Host"] == RECEIVER_HOST  # connected to the checked address, named as the host
    assert request.headers["ReasoningBank-Event"] == "memory.created"
    assert request.headers["ReasoningBank-Event-Id"] == delivery.event_id
    body = json.loads(request.content)
    assert body["type"] == "memory.created" and body["organization"] == "acme"
    assert body["data"] == {"memory": {"id": "mem_1", "title": "pin the linter"}}
    done.refresh_from_db()
    assert (done.attempts, done.response_code, done.error) == (1, 204, "")
    assert done.latency_ms is not None and done.finished_at is not None


def test_a_failed_attempt_is_retried_later_each_time_waiting_longer(delivery, receiver, enqueued, settings):
    settings.WEBHOOK_RETRY_BASE = 30
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(503))
    enqueued.clear()
    first = delivery_attempt(delivery.id)
    assert first is not None and first.status == WebhookDelivery.STATUS_PENDING
    assert first.response_code == 503 and "HTTP 503" in first.error
    assert enqueued == [(delivery.id, 30.0)]
    assert delivery_attempt(delivery.id) is None  # not due yet: nothing sent twice
    WebhookDelivery.objects.filter(pk=delivery.id).update(next_attempt_at=timezone.now())
    second = delivery_attempt(delivery.id)
    assert second is not None and second.attempts == 2
    assert enqueued[-1] == (delivery.id, 120.0)
    WebhookDelivery.objects.filter(pk=delivery.id).update(next_attempt_at=timezone.now())
    last = delivery_attempt(delivery.id)
    assert last is not None and last.status == WebhookDelivery.STATUS_FAILED and last.attempts == 3
    assert len(enqueued) == 2  # no retry after the last attempt
    subscription = WebhookSubscription.objects.get()
    assert subscription.consecutive_failures == 1 and subscription.failing_since is not None
    assert subscription.enabled  # one failed delivery is not "failing too long"


def test_a_timeout_is_a_failed_attempt_with_the_reason_logged(delivery, receiver, enqueued):
    receiver.post(RECEIVER_ADDRESS_URL).mock(side_effect=httpx.ReadTimeout("read timed out"))
    attempt = delivery_attempt(delivery.id)
    assert attempt is not None and attempt.status == WebhookDelivery.STATUS_PENDING
    assert attempt.response_code is None and "ReadTimeout" in attempt.error


def test_a_redirect_is_not_followed_and_counts_as_a_failure(delivery, receiver, enqueued):
    receiver.post(RECEIVER_ADDRESS_URL).mock(
        return_value=httpx.Response(302, headers={"Location": "http://169.254.169.254/latest/meta-data"})
    )
    attempt = delivery_attempt(delivery.id)
    assert attempt is not None and attempt.response_code == 302 and attempt.status == WebhookDelivery.STATUS_PENDING
    assert len(receiver.calls) == 1


def test_a_host_that_now_resolves_inside_is_refused_at_delivery_time(delivery, receiver, resolver, enqueued):
    route = receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(200))
    resolver.names[RECEIVER_HOST] = ["10.1.2.3"]  # the DNS answer changed since the subscription was made
    attempt = delivery_attempt(delivery.id)
    assert attempt is not None and attempt.status == WebhookDelivery.STATUS_PENDING
    assert "non-public address (10.1.2.3)" in attempt.error
    assert not route.called and len(receiver.calls) == 0


@pytest.mark.parametrize(
    "answer", ["::ffff:0:169.254.169.254", "::169.254.169.254", "64:ff9b:1::a9fe:a9fe", "2002:a9fe:a9fe::1", "fec0::1"]
)
def test_a_host_rebound_to_an_ipv6_form_of_an_internal_address_is_refused_at_delivery_time(
    delivery, receiver, resolver, enqueued, answer
):
    route = receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(200))
    resolver.names[RECEIVER_HOST] = [RECEIVER_IP, answer]  # the AAAA record now carries the metadata address
    attempt = delivery_attempt(delivery.id)
    assert attempt is not None and attempt.status == WebhookDelivery.STATUS_PENDING
    assert f"non-public address ({answer})" in attempt.error
    assert not route.called and len(receiver.calls) == 0


def test_internal_addresses_are_delivered_to_when_the_setting_allows_them(
    delivery, receiver, resolver, enqueued, settings
):
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = True
    resolver.names[RECEIVER_HOST] = ["10.1.2.3"]
    route = receiver.post("https://10.1.2.3/rb").mock(return_value=httpx.Response(200))
    attempt = delivery_attempt(delivery.id)
    assert attempt is not None and attempt.status == WebhookDelivery.STATUS_SUCCEEDED and route.called


def test_a_subscription_failing_for_longer_than_the_setting_is_switched_off_and_marked(
    delivery, receiver, enqueued, settings
):
    settings.WEBHOOK_MAX_ATTEMPTS = 1
    settings.WEBHOOK_DISABLE_AFTER = 3600
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(500))
    delivery_attempt(delivery.id)
    subscription = WebhookSubscription.objects.get()
    assert subscription.enabled and subscription.failing_since is not None
    WebhookSubscription.objects.update(failing_since=timezone.now() - timedelta(hours=2))
    later = WebhookDelivery.objects.create(
        organization=delivery.organization, subscription=subscription, event_type="memory.created", payload={}
    )
    delivery_attempt(later.id)
    subscription.refresh_from_db()
    assert not subscription.enabled
    assert subscription.disabled_reason == WebhookSubscription.DISABLED_FAILING
    assert subscription.consecutive_failures == 2


def test_a_subscription_is_failing_from_its_first_failed_attempt_with_the_error_while_retries_wait(
    delivery, receiver, enqueued
):
    assert WebhookSubscription.objects.get().health == "untried"
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(503))
    first = delivery_attempt(delivery.id)
    assert first is not None and first.status == WebhookDelivery.STATUS_PENDING  # a retry is scheduled
    subscription = WebhookSubscription.objects.get()
    assert subscription.health == "failing" and subscription.enabled
    assert subscription.failing_since is not None and subscription.last_failure_at is not None
    assert (subscription.failed_attempts, subscription.consecutive_failures) == (1, 0)  # no delivery used up yet
    assert subscription.last_error == "the receiver answered HTTP 503"
    since = subscription.failing_since
    WebhookDelivery.objects.filter(pk=delivery.id).update(next_attempt_at=timezone.now())
    receiver.post(RECEIVER_ADDRESS_URL).mock(side_effect=httpx.ConnectError("connection refused"))
    delivery_attempt(delivery.id)
    subscription.refresh_from_db()
    assert subscription.failing_since == since and subscription.failed_attempts == 2  # since the first one
    assert "ConnectError" in subscription.last_error


def test_one_failed_attempt_never_switches_a_subscription_off_however_old_its_failing_mark(
    delivery, receiver, enqueued, settings
):
    # the switch-off is asked only when a delivery has failed every attempt (docs/webhooks.md#health)
    settings.WEBHOOK_DISABLE_AFTER = 3600
    WebhookSubscription.objects.update(failing_since=timezone.now() - timedelta(days=5), failed_attempts=40)
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(500))
    assert delivery_attempt(delivery.id).status == WebhookDelivery.STATUS_PENDING
    subscription = WebhookSubscription.objects.get()
    assert subscription.enabled and subscription.failed_attempts == 41


def test_a_switched_off_subscription_gains_no_failure_marks(delivery, receiver, enqueued):
    WebhookSubscription.objects.update(enabled=False, disabled_reason=WebhookSubscription.DISABLED_MANUAL)
    delivery_attempt(delivery.id)
    subscription = WebhookSubscription.objects.get()
    assert (subscription.health, subscription.failed_attempts, subscription.last_error) == ("untried", 0, "")


def test_a_success_clears_the_failure_marks(delivery, receiver, enqueued):
    WebhookSubscription.objects.update(
        failing_since=timezone.now() - timedelta(hours=1),
        consecutive_failures=4,
        failed_attempts=9,
        last_error="the receiver answered HTTP 500",
        last_failure_at=timezone.now(),
    )
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(200))
    delivery_attempt(delivery.id)
    subscription = WebhookSubscription.objects.get()
    assert subscription.failing_since is None and subscription.consecutive_failures == 0
    assert (subscription.failed_attempts, subscription.last_error, subscription.last_failure_at) == (0, "", None)
    assert subscription.last_success_at is not None and subscription.health == "healthy"


def test_a_delivery_of_a_switched_off_subscription_is_not_sent(delivery, receiver, enqueued):
    WebhookSubscription.objects.update(enabled=False, disabled_reason=WebhookSubscription.DISABLED_MANUAL)
    attempt = delivery_attempt(delivery.id)
    assert attempt is not None and attempt.status == WebhookDelivery.STATUS_FAILED
    assert "disabled" in attempt.error and len(receiver.calls) == 0


def test_redelivery_sends_the_same_event_again_as_a_new_delivery(
    cast, delivery, receiver, enqueued, django_capture_on_commit_callbacks
):
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(200))
    delivery_attempt(delivery.id)
    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = delivery_redeliver(principal=cast.principal(cast.alice), delivery=delivery)
    assert again.id != delivery.id and again.event_id == delivery.event_id and again.payload == delivery.payload
    assert again.redelivery_of_id == delivery.id and again.status == WebhookDelivery.STATUS_PENDING
    assert enqueued == [(again.id, 0)]
    assert AuditEvent.objects.filter(verb="webhook.redeliver", target_id=again.id).exists()
    assert delivery_attempt(again.id).status == WebhookDelivery.STATUS_SUCCEEDED


def test_redelivery_to_a_switched_off_subscription_is_refused(cast, delivery):
    WebhookSubscription.objects.update(enabled=False)
    delivery.subscription.refresh_from_db()
    with pytest.raises(Conflict):
        delivery_redeliver(principal=cast.principal(cast.alice), delivery=delivery)


def test_the_sweep_queues_deliveries_whose_task_was_lost(delivery, enqueued):
    enqueued.clear()
    assert deliveries_sweep() == 0  # just made: its task is on its way
    WebhookDelivery.objects.filter(pk=delivery.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    assert deliveries_sweep() == 1 and enqueued == [(delivery.id, 0)]


def test_the_worker_task_makes_one_attempt_and_answers_the_status(delivery, receiver, enqueued):
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(200))
    assert webhook_deliver(delivery.id) == WebhookDelivery.STATUS_SUCCEEDED
    assert webhook_deliver(delivery.id) is None  # done: a duplicate task sends nothing
    assert len(receiver.calls) == 1
