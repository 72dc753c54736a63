"""The ``audit.event`` webhook (webhooks/receivers.py ``on_audit_recorded``): one event per audit row of the
organization, after the commit, delivered signed like every event; never another organization's rows, and
the deliveries themselves write no audit row, so the stream does not feed itself."""

from __future__ import annotations

import json

import httpx
import pytest

from accounts.models import AuditEvent
from accounts.services import audit_record, audit_record_many
from tests.webhooks.conftest import RECEIVER_ADDRESS_URL
from webhooks.models import WebhookDelivery
from webhooks.services import delivery_attempt


@pytest.fixture
def committed(django_capture_on_commit_callbacks, enqueued):
    return lambda: django_capture_on_commit_callbacks(execute=True)


def audit_events() -> list[WebhookDelivery]:
    return list(WebhookDelivery.objects.filter(event_type="audit.event").order_by("created_at", "id"))


def test_each_audit_row_is_sent_as_one_audit_event_once_committed(cast, subscribe, committed, enqueued):
    subscribe(["audit.event"])
    with committed():
        row = audit_record(
            organization=cast.org_a, actor=cast.principal(cast.alice), verb="team.create", data={"slug": "core"}
        )
        assert not audit_events()  # nothing before the commit
    (delivery,) = [d for d in audit_events() if d.payload["data"]["audit"]["id"] == row.pk]
    event = delivery.payload["data"]["audit"]
    assert event["verb"] == "team.create" and event["actor"] == "user:alice@acme.test"
    assert event["data"] == {"slug": "core"} and delivery.payload["organization"] == "acme"
    assert enqueued == [(delivery.id, 0)]


def test_a_bulk_write_sends_one_event_per_row(cast, subscribe, committed):
    subscribe(["audit.event"])
    with committed():
        audit_record_many(
            organization=cast.org_a, actor=None, verb="memory.tier", target_type="memory", target_ids=["m1", "m2", "m3"]
        )
    targets = sorted(d.payload["data"]["audit"]["target_id"] for d in audit_events())
    assert targets == ["m1", "m2", "m3"]


def test_an_audit_event_is_delivered_signed_to_the_receiver(cast, subscribe, committed, receiver):
    subscribe(["audit.event"])
    route = receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(204))
    with committed():
        audit_record(organization=cast.org_a, actor=cast.principal(cast.alice), verb="token.revoke")
    delivery = next(d for d in audit_events() if d.payload["data"]["audit"]["verb"] == "token.revoke")
    done = delivery_attempt(delivery.id)
    assert done is not None and done.status == WebhookDelivery.STATUS_SUCCEEDED
    sent = route.calls.last.request
    assert sent.headers["ReasoningBank-Event"] == "audit.event"
    assert json.loads(sent.content)["data"]["audit"]["verb"] == "token.revoke"


def test_delivering_an_audit_event_writes_no_audit_row(cast, subscribe, committed, receiver):
    subscribe(["audit.event"])
    receiver.post(RECEIVER_ADDRESS_URL).mock(return_value=httpx.Response(500))
    with committed():
        audit_record(organization=cast.org_a, actor=None, verb="llm.budget_alert")
    (delivery,) = [d for d in audit_events() if d.payload["data"]["audit"]["verb"] == "llm.budget_alert"]
    rows_before = AuditEvent.objects.count()
    with committed():
        delivery_attempt(delivery.id)  # a failed attempt: retried later, the subscription marked failing
    assert AuditEvent.objects.count() == rows_before
    assert len(audit_events()) == 1  # and so no new event either


def test_an_organization_that_did_not_subscribe_gets_no_audit_event(cast, subscribe, committed):
    subscribe(["memory.created"])
    with committed():
        audit_record(organization=cast.org_a, actor=None, verb="llm.budget_alert")
    assert not audit_events()


def test_another_organizations_audit_rows_never_reach_a_subscriber(cast, subscribe, committed):
    acme = subscribe(["audit.event"])
    globex = subscribe(["audit.event"], org=cast.org_b)
    with committed():
        audit_record(organization=cast.org_b, actor=cast.principal(cast.charlie), verb="token.create")
    deliveries = [d for d in audit_events() if d.payload["data"]["audit"]["verb"] == "token.create"]
    assert [d.subscription_id for d in deliveries] == [globex.id]
    assert all(d.subscription_id != acme.id for d in audit_events())
    assert all(d.payload["organization"] == "globex" for d in deliveries)
