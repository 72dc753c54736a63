"""The dashboard's webhook pages (Settings → Webhooks): owners and admins only, the secret shown
once, the delivery log with redelivery, another organization's subscription or delivery a 404."""

from __future__ import annotations

import html
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.webhooks.conftest import RECEIVER_URL
from webhooks.models import WebhookDelivery, WebhookSubscription


def text(response) -> str:
    return html.unescape(response.content.decode())


def _delivery(subscription: WebhookSubscription, **fields) -> WebhookDelivery:
    return WebhookDelivery.objects.create(
        organization=subscription.organization,
        subscription=subscription,
        event_type="memory.created",
        payload={"type": "memory.created", "data": {"memory": {"title": "Pin the linter"}}},
        **fields,
    )


@pytest.mark.cross_tenant("settings-webhooks")
def test_the_owner_adds_a_webhook_and_sees_its_secret_once(client, cast, resolver, subscribe):
    theirs = subscribe(["memory.created"], org=cast.org_b)
    client.force_login(cast.alice)
    response = client.post("/settings/webhooks/", {"url": RECEIVER_URL, "events": ["memory.created", "dispute.opened"]})
    assert response.status_code == 200
    subscription = WebhookSubscription.objects.get(organization=cast.org_a)
    assert subscription.events == ["dispute.opened", "memory.created"]
    assert subscription.secret in text(response) and response["Cache-Control"] == "no-store"
    page = text(client.get("/settings/webhooks/"))
    assert RECEIVER_URL in page and subscription.secret not in page
    assert theirs.id not in page  # another organization's subscription is not listed


def test_a_refused_url_is_shown_on_the_form_with_the_reason(client, cast, resolver):
    client.force_login(cast.alice)
    response = client.post("/settings/webhooks/", {"url": "http://hooks.example.com/rb", "events": ["memory.created"]})
    assert response.status_code == 400 and "must use https" in text(response)
    assert not WebhookSubscription.objects.exists()


def test_a_url_on_an_ipv6_form_of_an_internal_address_is_refused_on_the_form(client, cast, resolver):
    client.force_login(cast.alice)
    form = {"url": "https://[::169.254.169.254]/rb", "events": ["memory.created"]}
    response = client.post("/settings/webhooks/", form)
    assert response.status_code == 400 and "non-public address" in text(response)
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize("path", ["/settings/webhooks/", "/settings/webhooks/{id}/"])
def test_a_viewer_gets_403_on_the_webhook_pages(client, cast, subscribe, path):
    subscription = subscribe(["memory.created"])
    client.force_login(cast.bob)
    assert client.get(path.format(id=subscription.id)).status_code == 403
    assert client.post("/settings/webhooks/", {"url": RECEIVER_URL, "events": ["memory.created"]}).status_code == 403
    assert WebhookSubscription.objects.count() == 1


@pytest.mark.cross_tenant("settings-webhook")
def test_the_subscription_page_logs_every_delivery_and_another_orgs_is_a_404(client, cast, subscribe):
    ours = subscribe(["memory.created"])
    _delivery(
        ours, status="failed", attempts=6, response_code=503, latency_ms=321, error="the receiver answered HTTP 503"
    )
    theirs = subscribe(["memory.created"], org=cast.org_b)
    client.force_login(cast.alice)
    page = text(client.get(f"/settings/webhooks/{ours.id}/"))
    for shown in (
        "memory.created",
        "HTTP 503",
        "321 ms",
        "the receiver answered HTTP 503",
        "Redeliver",
        "Pin the linter",
    ):
        assert shown in page, shown
    assert client.get(f"/settings/webhooks/{theirs.id}/").status_code == 404
    assert client.post(f"/settings/webhooks/{theirs.id}/", {"events": ["dispute.opened"]}).status_code == 404
    theirs.refresh_from_db()
    assert theirs.events == ["memory.created"]


def test_the_delivery_log_shows_the_payload_as_the_json_sent_indented_not_a_python_repr(client, cast, subscribe):
    delivery = _delivery(subscribe(["memory.created"]), status="succeeded", attempts=1)
    client.force_login(cast.alice)
    page = text(client.get(f"/settings/webhooks/{delivery.subscription_id}/"))
    assert '"title": "Pin the linter"' in page and "'title'" not in page  # JSON, indented
    assert '{"data":{"memory":{"title":"Pin the linter"}},"type":"memory.created"}' in page  # the signed bytes


def test_a_subscription_failing_since_its_first_attempt_shows_so_on_the_list_and_its_page(client, cast, subscribe):
    ours = subscribe(["memory.created"])
    healthy = subscribe(["memory.created"])
    WebhookSubscription.objects.filter(pk=healthy.pk).update(last_success_at=timezone.now())
    WebhookSubscription.objects.filter(pk=ours.pk).update(
        failing_since=timezone.now() - timedelta(minutes=30),
        failed_attempts=2,
        last_error="ConnectError: [Errno 111] Connection refused",
        last_failure_at=timezone.now(),
    )
    client.force_login(cast.alice)
    listing = text(client.get("/settings/webhooks/"))
    assert listing.count("failing since") == 1 and "2 failed attempts" in listing
    assert "Connection refused" in listing and listing.count(">active<") == 1
    page = text(client.get(f"/settings/webhooks/{ours.id}/"))
    assert "failing since" in page and "ConnectError: [Errno 111] Connection refused" in page
    assert "the next delivery to fail every attempt after then switches the subscription off" in page


@pytest.mark.cross_tenant("settings-webhook-redeliver")
def test_redeliver_queues_the_event_again_and_another_orgs_delivery_is_a_404(
    client, cast, subscribe, enqueued, django_capture_on_commit_callbacks
):
    ours = _delivery(subscribe(["memory.created"]), status="failed")
    theirs = _delivery(subscribe(["memory.created"], org=cast.org_b), status="failed")
    client.force_login(cast.alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/settings/webhook-deliveries/{ours.id}/redeliver/")
    assert response.status_code == 302
    again = WebhookDelivery.objects.get(redelivery_of=ours)
    assert enqueued == [(again.id, 0)]
    assert client.post(f"/settings/webhook-deliveries/{theirs.id}/redeliver/").status_code == 404
    assert not WebhookDelivery.objects.filter(redelivery_of=theirs).exists()


@pytest.mark.cross_tenant("settings-webhook-rotate", "settings-webhook-toggle", "settings-webhook-delete")
def test_rotate_toggle_and_delete_act_on_our_subscription_and_404_on_another_orgs(client, cast, subscribe):
    ours = subscribe(["memory.created"])
    theirs = subscribe(["memory.created"], org=cast.org_b)
    secret, their_secret = ours.secret, theirs.secret
    client.force_login(cast.alice)
    rotated = client.post(f"/settings/webhooks/{ours.id}/rotate/")
    ours.refresh_from_db()
    assert ours.secret != secret and ours.secret in text(rotated)
    client.post(f"/settings/webhooks/{ours.id}/toggle/")
    ours.refresh_from_db()
    assert not ours.enabled
    client.post(f"/settings/webhooks/{ours.id}/toggle/", {"enabled": "on"})
    ours.refresh_from_db()
    assert ours.enabled
    for action in ("rotate", "toggle", "delete"):
        assert client.post(f"/settings/webhooks/{theirs.id}/{action}/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.secret == their_secret and theirs.enabled
    assert client.post(f"/settings/webhooks/{ours.id}/delete/").status_code == 302
    assert list(WebhookSubscription.objects.all()) == [theirs]


def test_the_settings_menu_offers_webhooks_to_admins_only(client, cast):
    client.force_login(cast.alice)
    assert 'href="/settings/webhooks/"' in text(client.get("/settings/"))
    client.force_login(cast.bob)
    assert 'href="/settings/webhooks/"' not in text(client.get("/settings/"))
