"""The review for injection over REST (memories/trust/api_injection.py;
docs/security/memory-poisoning.md#injection-policy): an admin lists the memories waiting for review
before injection and clears one (audited). Other scopes are 403, another organization's memory a 404,
and nothing changes on a refusal. (The policy itself: test_api_policy.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from accounts.models import SCOPE_ADMIN, SCOPE_MEMORIES_READ, AuditEvent
from accounts.tokens.services import token_create
from memories.models import Memory
from tests.factories import MemoryFactory, ProjectFactory

PENDING = "/api/v1/trust/injection-pending"
ADMIN_SCOPES = [SCOPE_MEMORIES_READ, SCOPE_ADMIN]


def clear_url(memory: Memory) -> str:
    return f"/api/v1/memories/{memory.id}/clear-for-injection"


def pending_memory(principal: Any, title: str = "Deploy with the release script", **fields: Any) -> Memory:
    return MemoryFactory(principal=principal, title=title, trust=Memory.TRUST_PENDING, **fields)


@pytest.fixture
def admin(cast, token_client):
    return token_client(cast.org_a, scopes=ADMIN_SCOPES)


@pytest.fixture
def member(cast, token_client):
    return token_client(cast.org_a)  # the default scopes: read, write, consolidation


def test_an_admin_lists_the_active_memories_waiting_for_review_oldest_first_with_their_source(cast, admin, agent):
    first = pending_memory(agent, "Deploy with the release script")
    second = pending_memory(agent, "Rotate the signing keys monthly")
    MemoryFactory(principal=agent, title="A trusted one")  # trusted: nothing to review
    pending_memory(agent, "A quarantined one", state=Memory.STATE_QUARANTINED)  # the quarantine review's

    response = admin.get(PENDING)

    assert response.status_code == 200
    rows = response.json()["results"]
    assert [row["id"] for row in rows] == [first.id, second.id]
    assert rows[0]["trust"] == "pending" and rows[0]["project"] == "web-app"
    assert rows[0]["source"].startswith(f"recorded by token {agent.token.label}")


def test_clearing_makes_the_memory_trusted_keeps_the_reviewer_and_is_audited(cast, agent):
    memory = pending_memory(agent)
    token, raw = token_create(organization=cast.org_a, label="admin", scopes=ADMIN_SCOPES, created_by=cast.alice)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")

    response = client.post(clear_url(memory), format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["trust"] == "trusted" and response.json()["reviewed_by"] == "alice@acme.test"
    memory.refresh_from_db()
    assert (memory.trust, memory.reviewed_by, memory.state) == (Memory.TRUST_TRUSTED, cast.alice, Memory.STATE_ACTIVE)
    assert memory.reviewed_at is not None
    event = AuditEvent.objects.get(verb="memory.injection_clear")
    assert (event.target_id, event.actor, event.data["was"]) == (memory.id, f"token:{token.prefix}", "pending")


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({}, "already trusted"),
        ({"trust": Memory.TRUST_PENDING, "state": Memory.STATE_QUARANTINED}, "quarantine review"),
    ],
)
def test_a_memory_with_nothing_to_clear_is_a_409_that_changes_nothing(cast, admin, agent, fields, says):
    memory = MemoryFactory(principal=agent, **fields)
    response = admin.post(clear_url(memory), format="json")
    assert response.status_code == 409 and says in response.json()["detail"]
    assert not AuditEvent.objects.filter(verb="memory.injection_clear").exists()
    assert Memory.objects.get(pk=memory.pk).reviewed_at is None


def test_a_body_on_the_clear_is_a_400(admin, agent):
    response = admin.post(clear_url(pending_memory(agent)), {"trust": "trusted"}, format="json")
    assert response.status_code == 400


def test_without_the_admin_scope_nobody_lists_or_clears_and_nothing_changes(cast, member, agent):
    memory = pending_memory(agent)
    assert member.get(PENDING).status_code == 403
    assert member.post(clear_url(memory), format="json").status_code == 403
    assert Memory.objects.get(pk=memory.pk).trust == Memory.TRUST_PENDING


def test_a_project_restricted_admin_token_sees_and_clears_only_its_projects(cast, token_client, agent):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    mine = pending_memory(agent)
    theirs = MemoryFactory(
        principal=cast.principal(cast.alice), title="Mobile lesson", project="mobile", trust=Memory.TRUST_PENDING
    )
    restricted = token_client(cast.org_a, scopes=ADMIN_SCOPES, projects=[cast.project_a])
    assert [row["id"] for row in restricted.get(PENDING).json()["results"]] == [mine.id]
    assert restricted.post(clear_url(theirs), format="json").status_code == 404
    assert Memory.objects.get(pk=theirs.pk).trust == Memory.TRUST_PENDING


@pytest.mark.cross_tenant("api-injection-pending", "api-memory-injection-clear")
def test_another_orgs_admin_neither_sees_nor_clears_a_pending_memory(cast, agent, token_client):
    memory = pending_memory(agent)
    charlie = token_client(cast.org_b, scopes=ADMIN_SCOPES)
    assert charlie.get(PENDING).json()["results"] == []
    assert charlie.post(clear_url(memory), format="json").status_code == 404
    assert Memory.objects.get(pk=memory.pk).trust == Memory.TRUST_PENDING
