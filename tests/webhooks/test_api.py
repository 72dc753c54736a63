"""The REST API of webhooks (/api/v1/webhooks…): organization admins only, bad input a 400 in the
API's error shape, another organization's subscription or delivery a 404."""

from __future__ import annotations

import httpx
import pytest

from tests.webhooks.conftest import RECEIVER_ADDRESS_URL, RECEIVER_URL
from webhooks.event_types import EVENT_TYPES
from webhooks.models import WebhookDelivery, WebhookSubscription
from webhooks.services import delivery_attempt
from webhooks.signing import SIGNATURE_HEADER, signature_verify

WEBHOOKS = "/api/v1/webhooks"


@pytest.fixture
def admin_client(cast, token_client):
    return token_client(cast.org_a, scopes=["admin"])


def _delivery(subscription: WebhookSubscription, **fields) -> WebhookDelivery:
    return WebhookDelivery.objects.create(
        organization=subscription.organization,
        subscription=subscription,
        event_type="memory.created",
        payload={"type": "memory.created", "data": {}},
        **fields,
    )


def _error(response, status: int, field: str | None = None) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"detail", "code", "errors"}
    if field:
        assert field in body["errors"], body
    return body


def test_an_admin_subscribes_and_gets_the_secret_once(admin_client, resolver, enqueued):
    response = admin_client.post(
        WEBHOOKS, {"url": RECEIVER_URL, "events": ["memory.created", "session.failed"]}, format="json"
    )
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["id"].startswith("whk_") and created["secret"].startswith("whsec_")
    assert created["events"] == ["memory.created", "session.failed"] and created["enabled"] is True
    shown = admin_client.get(f"{WEBHOOKS}/{created['id']}").json()
    assert "secret" not in shown and shown["secret_hint"] == created["secret"][:10] + "…"
    listed = admin_client.get(WEBHOOKS).json()
    assert [item["id"] for item in listed["results"]] == [created["id"]]
    assert all("secret" not in item for item in listed["results"])


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"url": "http://hooks.example.com/rb", "events": ["memory.created"]}, "url", "https"),
        ({"url": RECEIVER_URL, "events": ["memory.exploded"]}, "events", "memory.exploded"),
        ({"url": RECEIVER_URL, "events": []}, "events", ""),
        ({"url": RECEIVER_URL, "events": "memory.created"}, "events", ""),
        ({"url": RECEIVER_URL, "events": ["memory.created"], "secret": "mine"}, "secret", "Unknown field"),
        ({"events": ["memory.created"]}, "url", "required"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(admin_client, resolver, body, field, words):
    error = _error(admin_client.post(WEBHOOKS, body, format="json"), 400, field)
    assert words in " ".join(error["errors"][field])
    assert not WebhookSubscription.objects.exists()


def test_a_body_that_is_not_json_is_a_400_in_the_error_shape(admin_client, resolver):
    _error(admin_client.post(WEBHOOKS, data='{"url": ', content_type="application/json"), 400)


def test_a_url_resolving_to_a_private_address_is_a_400(admin_client, resolver):
    resolver.names["intranet.example.com"] = ["10.0.0.5"]
    error = _error(
        admin_client.post(
            WEBHOOKS, {"url": "https://intranet.example.com/x", "events": ["memory.created"]}, format="json"
        ),
        400,
        "url",
    )
    assert "non-public address" in error["errors"]["url"][0]


# the IPv6 forms that carried internal IPv4 addresses past the old guard, and IPv4 literals in the
# spellings a resolver accepts (docs/security/address-guard.md)
INTERNAL_URLS = [
    "https://[::127.0.0.1]/rb",
    "https://[::169.254.169.254]/rb",
    "https://[::10.0.0.1]/rb",
    "https://[::ffff:0:169.254.169.254]/rb",
    "https://[64:ff9b:1::a9fe:a9fe]/rb",
    "https://[fec0::1]/rb",
    "https://[::ffff:169.254.169.254]/rb",
    "https://[2002:a9fe:a9fe::1]/rb",
    "https://[fe80::1%25eth0]/rb",
    "https://2130706433/rb",
    "https://0x7f.1/rb",
    "https://017700000001/rb",
    "https://169.254.169.254./rb",
]


@pytest.mark.parametrize("url", INTERNAL_URLS)
def test_a_url_on_an_internal_address_in_any_spelling_is_a_400_naming_url(admin_client, resolver, url):
    error = _error(admin_client.post(WEBHOOKS, {"url": url, "events": ["memory.created"]}, format="json"), 400, "url")
    assert "non-public address" in error["errors"]["url"][0]
    assert not WebhookSubscription.objects.exists()
    assert resolver.asked == []  # a literal is read, never handed to the resolver


def test_a_name_whose_aaaa_record_embeds_the_metadata_address_is_a_400(admin_client, resolver):
    resolver.names["aaaa.example.com"] = ["2606:2800:220:1:248:1893:25c8:1946", "::ffff:0:a9fe:a9fe"]
    body = {"url": "https://aaaa.example.com/rb", "events": ["memory.created"]}
    error = _error(admin_client.post(WEBHOOKS, body, format="json"), 400, "url")
    assert "169.254.169.254" in error["errors"]["url"][0]


def test_a_changed_url_on_an_internal_address_is_a_400_and_the_old_url_stays(admin_client, subscribe):
    subscription = subscribe(["memory.created"])
    response = admin_client.patch(f"{WEBHOOKS}/{subscription.id}", {"url": "https://[::10.0.0.1]/rb"}, format="json")
    _error(response, 400, "url")
    subscription.refresh_from_db()
    assert subscription.url == RECEIVER_URL


def test_a_token_without_the_admin_scope_gets_403_and_the_list_is_not_shown(cast, token_client, subscribe):
    subscribe(["memory.created"])
    reader = token_client(cast.org_a, scopes=["memories:read", "memories:write"])
    _error(reader.get(WEBHOOKS), 403)
    _error(reader.post(WEBHOOKS, {"url": RECEIVER_URL, "events": ["memory.created"]}, format="json"), 403)


def test_an_admin_token_restricted_to_a_project_gets_403(cast, token_client, subscribe):
    subscription = subscribe(["memory.created"])
    restricted = token_client(cast.org_a, scopes=["admin"], projects=[cast.project_a])
    _error(restricted.get(f"{WEBHOOKS}/{subscription.id}"), 403)


def test_patch_changes_events_and_switches_deliveries_off(admin_client, subscribe):
    subscription = subscribe(["memory.created"])
    response = admin_client.patch(
        f"{WEBHOOKS}/{subscription.id}", {"events": ["dispute.opened"], "enabled": False}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["events"] == ["dispute.opened"]
    assert response.json()["enabled"] is False and response.json()["disabled_reason"] == "manual"
    _error(admin_client.patch(f"{WEBHOOKS}/{subscription.id}", {"enabled": "no"}, format="json"), 400, "enabled")


def test_rotating_the_secret_answers_the_new_one(admin_client, subscribe):
    subscription = subscribe(["memory.created"])
    response = admin_client.post(f"{WEBHOOKS}/{subscription.id}/rotate-secret")
    assert response.status_code == 200
    subscription.refresh_from_db()
    assert response.json()["secret"] == subscription.secret


def test_the_delivery_log_lists_status_attempts_code_latency_and_error(admin_client, subscribe):
    subscription = subscribe(["memory.created"])
    failed = _delivery(subscription, status="failed", attempts=6, response_code=500, latency_ms=42, error="HTTP 500")
    _delivery(subscription, status="succeeded", attempts=1, response_code=200, latency_ms=8)
    listed = admin_client.get(f"{WEBHOOKS}/{subscription.id}/deliveries", {"status": "failed"}).json()["results"]
    assert [(d["id"], d["attempts"], d["response_code"], d["latency_ms"], d["error"]) for d in listed] == [
        (failed.id, 6, 500, 42, "HTTP 500")
    ]
    detail = admin_client.get(f"{WEBHOOKS}/deliveries/{failed.id}").json()
    assert detail["payload"] == {"type": "memory.created", "data": {}}
    assert detail["body"] == '{"data":{},"type":"memory.created"}'  # the bytes posted: compact, jsonb's key order
    _error(admin_client.get(f"{WEBHOOKS}/{subscription.id}/deliveries", {"status": "lost"}), 400, "status")


def test_a_delivery_shows_the_body_it_posted_byte_for_byte_the_one_the_signature_covers(
    admin_client, subscribe, receiver, enqueued
):
    subscription = subscribe(["memory.created"])
    delivery = _delivery(subscription)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        payload={"type": "memory.created", "data": {"memory": {"title": "Café «naïve» 10 µs", "confidence": 0.7}}}
    )
    route = receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(204))
    delivery_attempt(delivery.id)
    posted = route.calls.last.request
    detail = admin_client.get(f"{WEBHOOKS}/deliveries/{delivery.id}").json()
    assert detail["body"].encode("utf-8") == posted.content
    assert "Café «naïve» 10 µs" in detail["body"]  # UTF-8 as sent, not \u escapes nor a Python repr
    assert signature_verify(subscription.secret, posted.headers[SIGNATURE_HEADER], detail["body"].encode())


def test_a_subscription_shows_its_health_from_the_first_failed_attempt(admin_client, subscribe, receiver, enqueued):
    subscription = subscribe(["memory.created"])
    shown = admin_client.get(f"{WEBHOOKS}/{subscription.id}").json()
    assert (shown["enabled"], shown["health"], shown["failing_since"], shown["failed_attempts"]) == (
        True,
        "untried",
        None,
        0,
    )
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(502))
    delivery_attempt(_delivery(subscription).id)  # its first attempt; five retries to come
    shown = admin_client.get(f"{WEBHOOKS}/{subscription.id}").json()
    assert shown["enabled"] is True and shown["health"] == "failing" and shown["failing_since"] is not None
    assert (shown["failed_attempts"], shown["consecutive_failures"]) == (1, 0)
    assert shown["last_error"] == "the receiver answered HTTP 502" and shown["last_failure_at"] is not None
    listed = admin_client.get(WEBHOOKS).json()["results"]
    assert [(item["id"], item["health"]) for item in listed] == [(subscription.id, "failing")]
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(200))
    delivery_attempt(_delivery(subscription).id)
    shown = admin_client.get(f"{WEBHOOKS}/{subscription.id}").json()
    assert (shown["health"], shown["failing_since"], shown["failed_attempts"], shown["last_error"]) == (
        "healthy",
        None,
        0,
        "",
    )


def test_redelivery_queues_a_new_delivery_of_the_same_event(
    admin_client, subscribe, enqueued, django_capture_on_commit_callbacks
):
    subscription = subscribe(["memory.created"])
    failed = _delivery(subscription, status="failed", attempts=6)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(f"{WEBHOOKS}/deliveries/{failed.id}/redeliver")
    assert response.status_code == 202, response.content
    again = response.json()
    assert again["event_id"] == failed.event_id and again["redelivery_of"] == failed.id and again["status"] == "pending"
    assert enqueued == [(again["id"], 0)]


def test_delete_removes_the_subscription(admin_client, subscribe):
    subscription = subscribe(["memory.created"])
    assert admin_client.delete(f"{WEBHOOKS}/{subscription.id}").status_code == 204
    assert not WebhookSubscription.objects.exists()


def test_the_webhook_endpoints_are_in_the_openapi_schema(api_client):
    schema = api_client.get("/api/schema/", {"format": "json"}).json()
    paths = schema["paths"]
    assert {"post", "get"} <= set(paths["/api/v1/webhooks"])
    assert {"get", "patch", "delete"} <= set(paths["/api/v1/webhooks/{subscription_id}"])
    assert "post" in paths["/api/v1/webhooks/deliveries/{delivery_id}/redeliver"]
    events = schema["components"]["schemas"]["SubscriptionCreateRequest"]["properties"]["events"]["items"]
    assert events == {"$ref": "#/components/schemas/WebhookEventEnum"}
    assert schema["components"]["schemas"]["WebhookEventEnum"]["enum"] == list(EVENT_TYPES)


@pytest.mark.cross_tenant("api-webhooks", "api-webhook", "api-webhook-rotate-secret", "api-webhook-deliveries")
def test_another_organizations_subscription_is_a_404_and_absent_from_the_list(admin_client, subscribe, cast):
    theirs = subscribe(["memory.created"], org=cast.org_b)
    secret = theirs.secret
    assert admin_client.get(WEBHOOKS).json()["results"] == []
    _error(admin_client.get(f"{WEBHOOKS}/{theirs.id}"), 404)
    _error(admin_client.patch(f"{WEBHOOKS}/{theirs.id}", {"enabled": False}, format="json"), 404)
    _error(admin_client.post(f"{WEBHOOKS}/{theirs.id}/rotate-secret"), 404)
    _error(admin_client.get(f"{WEBHOOKS}/{theirs.id}/deliveries"), 404)
    _error(admin_client.delete(f"{WEBHOOKS}/{theirs.id}"), 404)
    # an internal URL gets the same 404: the address check never runs on, nor reveals, their subscription
    _error(admin_client.patch(f"{WEBHOOKS}/{theirs.id}", {"url": "https://[::127.0.0.1]/x"}, format="json"), 404)
    theirs.refresh_from_db()
    assert theirs.enabled and theirs.secret == secret and theirs.url == RECEIVER_URL


@pytest.mark.cross_tenant("api-webhook-delivery", "api-webhook-redeliver")
def test_another_organizations_delivery_is_a_404_and_is_not_sent_again(admin_client, subscribe, cast, enqueued):
    theirs = _delivery(subscribe(["memory.created"], org=cast.org_b), status="failed")
    _error(admin_client.get(f"{WEBHOOKS}/deliveries/{theirs.id}"), 404)
    _error(admin_client.post(f"{WEBHOOKS}/deliveries/{theirs.id}/redeliver"), 404)
    assert WebhookDelivery.objects.count() == 1 and enqueued == []
