"""Django admin: every changelist opens, memories can be moderated, token digests never show."""

from __future__ import annotations

import html

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from accounts.models import ApiToken, AuditEvent
from accounts.tokens.services import token_create
from memories.confidence.services import memory_feedback
from memories.core.services import memory_record
from memories.models import AgentSession, Memory, MemorySignal
from reasoningbank.models import LlmCall
from tests.factories import AgentSessionFactory, ConsolidationRunFactory, MemoryLinkFactory

CHANGELISTS = [
    "accounts_organization",
    "accounts_team",
    "accounts_project",
    "accounts_membership",
    "accounts_apitoken",
    "accounts_auditevent",
    "memories_memory",
    "memories_memorylink",
    "memories_memorysignal",
    "memories_agentsession",
    "consolidation_consolidationrun",
    "consolidation_projectconsolidationsettings",
    "reasoningbank_llmcall",
]


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser(username="root", email="root@rb.test", password="x-long-pass")


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


@pytest.fixture
def data(cast):
    principal = cast.principal(cast.alice)
    first = memory_record(
        principal=principal,
        title="Pin the Node version",
        description="Use .nvmrc",
        content="Pin Node in .nvmrc and CI.",
        outcome="success",
        project="web-app",
    )
    second = memory_record(
        principal=principal,
        title="Cache npm in CI",
        description="Speeds up builds",
        content="Cache ~/.npm keyed on the lockfile.",
        outcome="success",
        project="web-app",
    )
    MemoryLinkFactory(source=first, target=second, kind="references")
    memory_feedback(principal=principal, memory=first, helpful=True)
    token, raw = token_create(organization=cast.org_a, label="ci")
    AgentSessionFactory(project=cast.project_a, external_id="s-1", trace="user: hi", status="failed")
    ConsolidationRunFactory(project=cast.project_a, status="completed")
    LlmCall.objects.create(organization=cast.org_a, provider="anthropic", model="m", purpose="distill")
    return {"first": first, "second": second, "token": token, "raw": raw}


@pytest.mark.parametrize("name", CHANGELISTS)
def test_staff_can_open_each_changelist(staff_client, data, name):
    response = staff_client.get(reverse(f"admin:{name}_changelist"))
    assert response.status_code == 200, name


def test_memory_change_page_opens_without_the_embedding(staff_client, data):
    memory = data["first"]
    response = staff_client.get(reverse("admin:memories_memory_change", args=[memory.pk]))
    assert response.status_code == 200
    body = html.unescape(response.content.decode())
    assert memory.title in body
    assert "Outgoing links" in body
    assert "Signals (latest 50)" in body
    assert data["second"].pk in body  # the outgoing link's target
    assert 'name="embedding"' not in body
    assert "search_vector" not in body


def test_memory_edit_in_admin_goes_through_the_service(staff_client, data):
    memory = data["first"]
    url = reverse("admin:memories_memory_change", args=[memory.pk])
    form = {
        "title": "Pin the Node version everywhere",
        "description": memory.description,
        "content": memory.content,
        "outcome": memory.outcome,
        "tags": "",
        "kind": memory.kind,
    }
    # inline management forms, as the admin page posts them
    for prefix in ("links_out", "signals"):
        form.update({f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"})
    response = staff_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    memory.refresh_from_db()
    assert memory.title == "Pin the Node version everywhere"
    event = AuditEvent.objects.filter(verb="memory.update", target_id=memory.pk).get()
    assert event.actor == "user:root@rb.test"


def test_apitoken_change_page_never_shows_the_digest(staff_client, data):
    token = data["token"]
    for url in (
        reverse("admin:accounts_apitoken_change", args=[token.pk]),
        reverse("admin:accounts_apitoken_changelist"),
    ):
        body = staff_client.get(url).content.decode()
        assert token.digest not in body
        assert data["raw"] not in body
        assert token.prefix in body


def test_bulk_archive_and_restore_actions(staff_client, data):
    ids = [data["first"].pk, data["second"].pk]
    url = reverse("admin:memories_memory_changelist")
    response = staff_client.post(url, {"action": "archive_selected", "_selected_action": ids})
    assert response.status_code == 302
    assert set(Memory.objects.filter(pk__in=ids).values_list("state", flat=True)) == {"archived"}
    assert set(Memory.objects.filter(pk__in=ids).values_list("archived_reason", flat=True)) == {"manual"}
    assert AuditEvent.objects.filter(verb="memory.archive").count() == 2
    response = staff_client.post(url, {"action": "restore_selected", "_selected_action": ids})
    assert response.status_code == 302
    assert set(Memory.objects.filter(pk__in=ids).values_list("state", flat=True)) == {"active"}


def test_token_revoke_action(staff_client, data):
    token = data["token"]
    url = reverse("admin:accounts_apitoken_changelist")
    response = staff_client.post(url, {"action": "revoke", "_selected_action": [token.pk]})
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditEvent.objects.filter(verb="token.revoke", target_id=str(token.pk)).exists()


def test_session_retry_action_requeues_failed_sessions(staff_client, data):
    session = AgentSession.objects.get(external_id="s-1")
    url = reverse("admin:memories_agentsession_changelist")
    response = staff_client.post(url, {"action": "retry", "_selected_action": [session.pk]})
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.status in ("queued", "waiting_for_llm")
    assert session.attempts == 0


def test_read_only_models_cannot_be_added_changed_or_deleted(staff_client, data):
    event = AuditEvent.objects.first()
    assert staff_client.get(reverse("admin:accounts_auditevent_add")).status_code == 403
    assert staff_client.get(reverse("admin:accounts_auditevent_delete", args=[event.pk])).status_code == 403
    change = staff_client.get(reverse("admin:accounts_auditevent_change", args=[event.pk]))
    assert change.status_code == 200 and 'name="_save"' not in change.content.decode()
    assert staff_client.post(reverse("admin:accounts_auditevent_change", args=[event.pk]), {}).status_code == 403
    assert staff_client.get(reverse("admin:accounts_apitoken_add")).status_code == 403
    assert staff_client.get(reverse("admin:memories_memory_add")).status_code == 403
    signal = MemorySignal.objects.first()
    if signal is not None:
        assert staff_client.get(reverse("admin:memories_memorysignal_delete", args=[signal.pk])).status_code == 403


def test_plan_change_in_admin_is_audited(staff_client, cast):
    url = reverse("admin:accounts_organization_change", args=[cast.org_a.pk])
    form = {"slug": "acme", "name": "Acme", "plan": "teams", "created_at_0": "2026-01-01", "created_at_1": "00:00:00"}
    form.update({"memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0"})
    response = staff_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:3000]
    cast.org_a.refresh_from_db()
    assert cast.org_a.plan == "teams"
    event = AuditEvent.objects.get(verb="organization.plan_change")
    assert event.data == {"from": "pro", "to": "teams"}
    assert event.actor == "user:root@rb.test"


def test_non_staff_cannot_open_the_admin(client, cast):
    client.force_login(cast.alice)
    response = client.get(reverse("admin:memories_memory_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
    assert ApiToken.objects.count() == 0
