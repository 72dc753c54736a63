"""A webhook signing secret seen where it must never be is rotated on sight (webhooks/services_leaks.py,
docs/security/secret-scrubbing.md#our-own-credentials-are-revoked-on-sight): in a memory, a feedback
comment, a session trace or id, an imported file, a text bound for an LLM. The subscription gets a new
secret at once, its own organization an audit row; only an exact match of a live secret counts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accounts.models import AuditEvent
from memories.confidence.services import memory_feedback
from memories.core.services import memory_record
from memories.models import AgentSession, Memory, MemorySignal
from memories.sessions import services as services_sessions
from memories.sessions.services import session_submit
from reasoningbank.ai.outbound import outbound_text
from reasoningbank.errors import InvalidInput
from webhooks import signing
from webhooks.models import WebhookSubscription
from webhooks.services_leaks import leaked_webhook_secrets_revoke

BODY = b'{"type": "memory.created"}'


def rotations(org: Any) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(organization=org, verb="webhook.rotate_secret"))


def record(agent: Any, content: str) -> Memory:
    return memory_record(
        principal=agent, title="Verify webhook deliveries", description="When a receiver checks signatures",
        content=content, outcome="success",
    )  # fmt: skip


def test_a_subscriptions_secret_in_a_memory_is_rotated_and_audited_in_its_organization(cast, agent, subscribe):
    subscription = subscribe(["memory.created"])
    leaked = subscription.secret

    memory = record(agent, f"The receiver verifies with RB_WEBHOOK_SECRET={leaked} and drops the rest.")

    assert Memory.objects.get(pk=memory.pk).content == (
        "The receiver verifies with RB_WEBHOOK_SECRET=[REDACTED:webhook_signing_secret] and drops the rest."
    )
    subscription.refresh_from_db()
    assert subscription.secret != leaked and subscription.secret.startswith(signing.SECRET_PREFIX)
    assert subscription.enabled  # deliveries go on, signed with the new secret
    (row,) = rotations(cast.org_a)
    assert (row.actor, row.target_id) == ("system", subscription.id)
    assert row.data == {"reason": "leaked", "seen_in": "memory"} and leaked not in str(row.data)


def test_deliveries_are_signed_with_the_new_secret_so_the_leaked_one_no_longer_verifies(cast, agent, subscribe):
    subscription = subscribe(["memory.created"])
    leaked = subscription.secret
    record(agent, f"Webhook secret for the receiver: {leaked} (keep it out of the repo).")

    subscription.refresh_from_db()
    header = signing.signature_header(subscription.secret, 1_790_000_000, BODY)
    assert signing.signature_verify(subscription.secret, header, BODY, now=1_790_000_000) == 1_790_000_000
    with pytest.raises(signing.SignatureInvalid):
        signing.signature_verify(leaked, header, BODY, now=1_790_000_000)


def test_another_organizations_secret_is_rotated_and_audited_in_that_organization_only(cast, agent, subscribe):
    theirs = subscribe(["memory.created"], org=cast.org_b)
    leaked = theirs.secret

    record(agent, f"Someone pasted {leaked} into our notes while debugging a receiver.")

    theirs.refresh_from_db()
    assert theirs.secret != leaked
    assert len(rotations(cast.org_b)) == 1 and rotations(cast.org_a) == []


def test_a_look_alike_or_another_services_secret_with_the_prefix_rotates_nothing(cast, agent, subscribe):
    subscription = subscribe(["memory.created"])
    kept = subscription.secret
    stripe_like = "whsec_" + "Q9x2LmN4pR7sT1vW3yZ5aB8cD0eF6gH2"

    memory = record(agent, f"Stripe signs with {stripe_like}; ours starts with {kept[:10]}… and is shown once.")

    assert "[REDACTED:webhook_signing_secret]" in Memory.objects.get(pk=memory.pk).content
    assert WebhookSubscription.objects.get(pk=subscription.pk).secret == kept
    assert rotations(cast.org_a) == [] and leaked_webhook_secrets_revoke([stripe_like], seen_in="memory") == 0


@pytest.fixture
def no_distillation(settings, monkeypatch):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)


def send_feedback(agent: Any, secret: str) -> None:
    memory = record(agent, "Check the signature header of every delivery before trusting it.")
    memory_feedback(principal=agent, memory=memory, helpful=True, comment=f"worked once I set {secret}")
    assert secret not in MemorySignal.objects.get(memory=memory).comment


def send_trace(agent: Any, secret: str) -> None:
    session_submit(principal=agent, session_id="s-1", outcome="success", trace=f"$ env\nRB_WEBHOOK_SECRET={secret}")
    assert secret not in AgentSession.objects.get().trace


def send_session_id(agent: Any, secret: str) -> None:
    with pytest.raises(InvalidInput):
        session_submit(principal=agent, session_id=f"run-{secret}", outcome="success", trace="agent: done")


def send_import(agent: Any, secret: str, client: Any) -> None:
    lines = [
        {"type": "header", "format": "reasoningbank-export", "version": 1},
        {"type": "memory", "id": "m1", "project": "web-app", "title": "Webhook receiver setup",
         "content": f"The receiver verifies deliveries with {secret} in its environment."},
        {"type": "end"},
    ]  # fmt: skip
    response = client.post("/api/v1/import", {"text": "\n".join(json.dumps(line) for line in lines)}, format="json")
    assert response.status_code == 200, response.json()
    assert secret not in Memory.objects.get().content


def send_prompt(agent: Any, secret: str) -> None:
    assert secret not in outbound_text(f"Summarise the receiver's setup: it verifies with {secret}.")


@pytest.mark.parametrize(
    ("way_in", "seen_in"),
    [
        (send_feedback, "memory.feedback"),
        (send_trace, "session.submit"),
        (send_session_id, "session_id"),
        (send_import, "bank.import"),
        (send_prompt, "llm.prompt"),
    ],
    ids=["feedback comment", "session trace", "session id", "imported file", "llm prompt"],
)
def test_every_way_in_rotates_the_secret_it_carries(
    cast, agent, subscribe, token_client, no_distillation, way_in, seen_in
):
    subscription = subscribe(["memory.created"])
    leaked = subscription.secret

    if way_in is send_import:
        send_import(agent, leaked, token_client(cast.org_a, scopes=["admin"]))
    else:
        way_in(agent, leaked)

    assert WebhookSubscription.objects.get(pk=subscription.pk).secret != leaked
    (row,) = rotations(cast.org_a)
    assert row.data == {"reason": "leaked", "seen_in": seen_in}
