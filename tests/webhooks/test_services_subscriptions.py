"""Subscriptions (webhooks.services): who may make them, which URLs and events they take, the
secret shown once and rotated."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent
from reasoningbank.errors import Forbidden, InvalidInput
from tests.webhooks.conftest import RECEIVER_URL
from webhooks.models import WebhookSubscription
from webhooks.services import (
    subscription_create,
    subscription_delete,
    subscription_secret_rotate,
    subscription_update,
)


def test_an_owner_subscribes_an_https_url_to_events_with_a_new_secret(cast, resolver):
    subscription = subscription_create(
        principal=cast.principal(cast.alice),
        url=RECEIVER_URL,
        events=["memory.created", "dispute.opened", "memory.created"],
    )
    assert subscription.organization == cast.org_a
    assert subscription.events == ["dispute.opened", "memory.created"]
    assert subscription.secret.startswith("whsec_") and subscription.enabled
    assert AuditEvent.objects.filter(verb="webhook.create", target_id=subscription.id).exists()


def test_a_viewer_cannot_subscribe(cast, resolver):
    with pytest.raises(Forbidden, match="admin"):
        subscription_create(principal=cast.principal(cast.bob), url=RECEIVER_URL, events=["memory.created"])
    assert not WebhookSubscription.objects.exists()


def test_an_admin_token_restricted_to_a_project_cannot_subscribe(cast, resolver, make_token):
    _, principal = make_token(cast.org_a, scopes=["admin"], projects=[cast.project_a])
    with pytest.raises(Forbidden, match="restricted"):
        subscription_create(principal=principal, url=RECEIVER_URL, events=["memory.created"])


@pytest.mark.parametrize(
    ("url", "events", "field", "message"),
    [
        ("http://hooks.example.com/rb", ["memory.created"], "url", "https"),
        (RECEIVER_URL, ["memory.deleted"], "events", "unknown event 'memory.deleted'"),
        (RECEIVER_URL, [], "events", "non-empty list"),
        ("https://nowhere.example/rb", ["memory.created"], "url", "could not resolve"),
    ],
)
def test_bad_input_is_refused_naming_the_field(cast, resolver, url, events, field, message):
    with pytest.raises(InvalidInput) as refused:
        subscription_create(principal=cast.principal(cast.alice), url=url, events=events)
    assert refused.value.field == field and message in refused.value.message
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize("address", ["127.0.0.1", "10.0.0.7", "169.254.169.254", "::1"])
def test_a_url_whose_host_resolves_inside_is_refused_unless_the_setting_allows_it(cast, resolver, settings, address):
    resolver.names["internal.example.com"] = [address]
    url = "https://internal.example.com/rb"
    with pytest.raises(InvalidInput, match="non-public address"):
        subscription_create(principal=cast.principal(cast.alice), url=url, events=["memory.created"])
    settings.WEBHOOKS_ALLOW_PRIVATE_ADDRESSES = True
    assert subscription_create(principal=cast.principal(cast.alice), url=url, events=["memory.created"]).url == url


def test_rotating_the_secret_replaces_it(cast, subscribe):
    subscription = subscribe(["memory.created"])
    before = subscription.secret
    rotated = subscription_secret_rotate(principal=cast.principal(cast.alice), subscription=subscription)
    assert rotated.secret != before and rotated.secret.startswith("whsec_")
    assert AuditEvent.objects.filter(verb="webhook.rotate_secret", target_id=subscription.id).exists()


def test_switching_a_failing_subscription_on_again_clears_its_marks(cast, subscribe):
    subscription = subscribe(["memory.created"])
    WebhookSubscription.objects.filter(pk=subscription.pk).update(
        enabled=False, disabled_reason=WebhookSubscription.DISABLED_FAILING, consecutive_failures=9
    )
    subscription.refresh_from_db()
    on = subscription_update(principal=cast.principal(cast.alice), subscription=subscription, enabled=True)
    assert on.enabled and on.disabled_reason == "" and on.consecutive_failures == 0 and on.failing_since is None
    off = subscription_update(principal=cast.principal(cast.alice), subscription=on, enabled=False)
    assert not off.enabled and off.disabled_reason == WebhookSubscription.DISABLED_MANUAL


def test_a_changed_url_is_checked_like_a_new_one(cast, subscribe, resolver):
    subscription = subscribe(["memory.created"])
    resolver.names["inside.example.com"] = ["192.168.0.2"]
    with pytest.raises(InvalidInput, match="non-public"):
        subscription_update(
            principal=cast.principal(cast.alice), subscription=subscription, url="https://inside.example.com/x"
        )
    subscription.refresh_from_db()
    assert subscription.url == RECEIVER_URL


def test_deleting_a_subscription_is_audited(cast, subscribe):
    subscription = subscribe(["memory.created"])
    subscription_id = subscription.id
    subscription_delete(principal=cast.principal(cast.alice), subscription=subscription)
    assert not WebhookSubscription.objects.exists()
    assert AuditEvent.objects.filter(verb="webhook.delete", target_id=subscription_id).exists()
