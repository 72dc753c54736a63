"""Webhook events and the quarantine (webhooks/receivers.py; docs/webhooks.md#events): a memory stored in
quarantine sends no ``memory.created`` — its title would carry the held text to a receiver — but
``memory.quarantined``, with its id, project, the rules that fired and who wrote it, never its text; an
admin's approval sends the ``memory.created`` held back (it enters the bank then), once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accounts.models import Organization
from memories.core.services import memory_update
from memories.models import Memory
from memories.moderation.services import memory_archive, memory_restore
from memories.trust.provenance_selectors import memory_source
from memories.trust.screening import rules_named
from memories.trust.services_quarantine import quarantine_approve, quarantine_delete
from tests.factories import MemoryFactory
from tests.memories.trust.payloads import BENIGN, POISON
from webhooks.models import WebhookDelivery

HELD_TEXTS = (POISON["title"], POISON["description"], "ignore all previous instructions", "paste.evil.test")
EVENTS = ["memory.created", "memory.quarantined"]


@pytest.fixture
def committed(django_capture_on_commit_callbacks: Any, enqueued: Any) -> Any:
    """A block whose on-commit callbacks run at its end, as after a real commit."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def sent(event_type: str) -> list[WebhookDelivery]:
    return list(WebhookDelivery.objects.filter(event_type=event_type).order_by("created_at"))


def poisoned(principal: Any) -> Memory:
    fields = {name: POISON[name] for name in ("title", "description", "content", "tags")}
    return MemoryFactory(principal=principal, project="web-app", **fields)


def test_a_memory_stored_in_quarantine_sends_memory_quarantined_without_its_text_and_no_memory_created(
    cast, agent, subscribe, committed
):
    subscribe(EVENTS)
    with committed():
        memory = poisoned(agent)
    assert memory.state == Memory.STATE_QUARANTINED

    assert sent("memory.created") == []
    (delivery,) = sent("memory.quarantined")
    assert delivery.payload["type"] == "memory.quarantined" and delivery.organization == cast.org_a
    data = delivery.payload["data"]["memory"]
    assert data == {
        "id": memory.id,
        "project": "web-app",
        "team": None,
        "origin": "recorded",
        "rules": rules_named(memory.flags),  # each rule once, in the order it fired
        "source": memory_source(memory)["label"],
        "created_at": memory.created_at.isoformat(),
    }
    assert {"override_instructions", "remote_script"} <= set(data["rules"])
    assert data["source"].startswith(f"recorded by token {agent.token.label}")
    body = json.dumps(delivery.payload)
    assert not [text for text in HELD_TEXTS if text in body]


def test_an_admins_approval_sends_the_memory_created_held_back_once(cast, agent, subscribe, committed):
    subscribe(EVENTS)
    with committed():
        memory = poisoned(agent)

    with committed():
        quarantine_approve(principal=cast.principal(cast.alice), memory=memory)
        assert sent("memory.created") == []  # nothing before the commit

    (delivery,) = sent("memory.created")
    data = delivery.payload["data"]["memory"]
    assert (data["id"], data["state"], data["title"]) == (memory.id, "active", POISON["title"])
    assert len(sent("memory.quarantined")) == 1  # the approval is not a second quarantine


def test_deleting_a_quarantined_memory_sends_nothing(cast, agent, subscribe, committed):
    subscribe(EVENTS)
    with committed():
        memory = poisoned(agent)
    with committed():
        quarantine_delete(principal=cast.principal(cast.alice), memory=memory)
    assert sent("memory.created") == [] and len(sent("memory.quarantined")) == 1


def test_a_memory_an_edit_put_in_quarantine_is_announced_quarantined_and_not_created_again_when_approved(
    cast, agent, subscribe, committed
):
    subscribe(EVENTS)
    with committed():
        memory = MemoryFactory(principal=agent, project="web-app", **{k: BENIGN[k] for k in ("title", "content")})
    assert len(sent("memory.created")) == 1

    with committed():
        held = memory_update(principal=agent, memory=memory, changes={"content": POISON["content"]})
        assert held.state == Memory.STATE_QUARANTINED
        quarantine_approve(principal=cast.principal(cast.alice), memory=held)

    assert len(sent("memory.created")) == 1
    (delivery,) = sent("memory.quarantined")  # the admins learn that it waits for them, without its text
    assert delivery.payload["data"]["memory"]["id"] == memory.id
    assert not [text for text in HELD_TEXTS if text in json.dumps(delivery.payload)]


def test_a_memory_restored_into_quarantine_is_announced_quarantined_and_not_created_again_when_approved(
    cast, agent, subscribe, committed
):
    Organization.objects.filter(pk=cast.org_a.pk).update(poisoning_policy=Organization.POISONING_FLAG)
    agent.organization.refresh_from_db()
    flagged = MemoryFactory(principal=agent, project="web-app", **{k: POISON[k] for k in ("title", "content")})
    assert flagged.state == Memory.STATE_ACTIVE and flagged.flags  # announced when it was written
    owner = cast.principal(cast.alice)
    memory_archive(principal=owner, memory=flagged)
    Organization.objects.filter(pk=cast.org_a.pk).update(poisoning_policy=Organization.POISONING_QUARANTINE)
    subscribe(EVENTS)
    owner = cast.principal(cast.alice)

    with committed():
        restored = memory_restore(principal=owner, memory=Memory.objects.get(pk=flagged.pk))
        assert restored.state == Memory.STATE_QUARANTINED
        quarantine_approve(principal=owner, memory=restored)

    assert sent("memory.created") == []
    assert [d.payload["data"]["memory"]["id"] for d in sent("memory.quarantined")] == [flagged.pk]


def test_under_the_flag_policy_a_flagged_memory_is_created_not_quarantined(cast, agent, subscribe, committed):
    Organization.objects.filter(pk=cast.org_a.pk).update(poisoning_policy=Organization.POISONING_FLAG)
    agent.organization.refresh_from_db()
    subscribe(EVENTS)
    with committed():
        memory = poisoned(agent)
    assert memory.state == Memory.STATE_ACTIVE and memory.flags
    assert [d.payload["data"]["memory"]["id"] for d in sent("memory.created")] == [memory.id]
    assert sent("memory.quarantined") == []


def test_a_memory_quarantined_in_one_organization_never_reaches_another_organizations_subscriptions(
    cast, make_token, subscribe, committed
):
    acme = subscribe(EVENTS)
    globex = subscribe(EVENTS, org=cast.org_b)
    _, globex_agent = make_token(cast.org_b, projects=[cast.project_b])
    with committed():
        memory = MemoryFactory(principal=globex_agent, **{k: POISON[k] for k in ("title", "content")})
    with committed():
        quarantine_approve(principal=cast.principal(cast.charlie), memory=memory)

    assert {(d.event_type, d.subscription_id) for d in WebhookDelivery.objects.all()} == {
        ("memory.quarantined", globex.pk),
        ("memory.created", globex.pk),
    }
    assert not WebhookDelivery.objects.filter(subscription=acme).exists()
