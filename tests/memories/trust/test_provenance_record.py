"""Provenance of a recorded memory over REST (docs/security/memory-poisoning.md#provenance): who (the token
and the person behind it, with their role now), through which client (the User-Agent), when; the trust
decided from it; the compact ``source`` in the answer; and a provenance the database refuses to change."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from rest_framework.test import APIClient

from accounts.models import Membership
from accounts.tokens.services import token_create
from memories.core.services import memory_update
from memories.models import Memory
from tests.factories import MemoryFactory

MEMORIES = "/api/v1/memories"
BODY = {
    "title": "Pin the Node version per repo",
    "description": "When builds differ between laptops and CI",
    "content": "Commit an .nvmrc with the exact version and run nvm use in CI before npm ci.",
    "outcome": "success",
}
PYTHON_CLIENT = "reasoningbank-client-python/0.4.1 (python 3.12)"


def client_of(org: Any, *, created_by: Any = None, label: str = "laptop", user_agent: str = PYTHON_CLIENT) -> APIClient:
    _, raw = token_create(organization=org, label=label, created_by=created_by)
    client = APIClient(HTTP_USER_AGENT=user_agent)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def record(client: APIClient, **overrides: Any) -> dict[str, Any]:
    response = client.post(MEMORIES, {**BODY, **overrides}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_memory_recorded_with_a_members_token_names_the_token_its_creator_and_the_client(cast):
    body = record(client_of(cast.org_a, created_by=cast.alice))

    memory = Memory.objects.get(pk=body["id"])
    token = memory.created_by_token
    assert memory.provenance == {
        "v": 1,
        "how": "recorded",
        "at": memory.created_at.isoformat(),
        "by": {"kind": "token", "token_id": token.pk, "token_prefix": token.prefix, "token_label": "laptop",
               "token_creator_id": cast.alice.pk, "token_creator_email": "alice@acme.test", "role": "owner"},
        "client": {"transport": "rest", "user_agent": PYTHON_CLIENT},
    }  # fmt: skip
    assert memory.trust == "trusted"
    date = memory.created_at.date().isoformat()
    assert body["memory"]["source"] == {
        "how": "recorded",
        "by": "alice@acme.test (token laptop)",
        "via": "reasoningbank-client-python 0.4",
        "at": memory.created_at.isoformat(),
        "trust": "trusted",
        "reviewed_by": None,
        "label": f"recorded by alice@acme.test (token laptop) via reasoningbank-client-python 0.4 · {date}",
    }


def test_a_token_whose_creator_is_a_viewer_now_writes_memories_that_wait_for_review(cast):
    body = record(client_of(cast.org_a, created_by=cast.bob))  # bob is a viewer of acme

    memory = Memory.objects.get(pk=body["id"])
    assert memory.provenance["by"]["role"] == "viewer" and memory.trust == "pending"
    assert body["memory"]["source"]["trust"] == "pending"


def test_a_token_whose_creator_left_the_organization_writes_pending_memories(cast):
    client = client_of(cast.org_a, created_by=cast.alice)
    Membership.objects.filter(user=cast.alice, organization=cast.org_a).delete()

    memory = Memory.objects.get(pk=record(client)["id"])

    assert memory.provenance["by"]["token_creator_email"] == "alice@acme.test"
    assert "role" not in memory.provenance["by"] and memory.trust == "pending"


def test_a_token_the_operator_made_on_the_server_is_trusted_and_names_no_creator(cast):
    memory = Memory.objects.get(pk=record(client_of(cast.org_a, label="server"))["id"])

    assert memory.trust == "trusted"
    assert memory.provenance["by"] == {
        "kind": "token", "token_id": memory.created_by_token_id, "token_prefix": memory.created_by_token.prefix,
        "token_label": "server",
    }  # fmt: skip


def test_a_hostile_user_agent_is_stored_cleaned_and_cut_short(cast):
    agent = "evil/1.0 \x1b]0;pwned\x07 \u202e Authorization: Bearer ghp_" + "b" * 36 + " " + "z" * 1000

    memory = Memory.objects.get(pk=record(client_of(cast.org_a, user_agent=agent))["id"])

    stored = memory.provenance["client"]["user_agent"]
    assert stored.startswith("evil/1.0") and len(stored) <= 200
    assert "\x1b" not in stored and "\u202e" not in stored and "ghp_" not in stored


def test_editing_a_memory_leaves_its_provenance_and_trust_as_written(cast):
    alice = cast.principal(cast.alice)
    memory = MemoryFactory(principal=alice, project="web-app")
    written = dict(memory.provenance)

    edited = memory_update(principal=alice, memory=memory, changes={"content": "Seed it in conftest.py, once."})

    assert edited.provenance == written and edited.trust == "trusted"
    assert written["by"] == {"kind": "user", "user_id": cast.alice.pk, "email": "alice@acme.test", "role": "owner"}
    assert written["client"] == {"transport": "internal"}  # a service called outside a request


def test_the_database_refuses_to_change_a_written_provenance(cast):
    memory = MemoryFactory(principal=cast.principal(cast.alice), project="web-app")

    with pytest.raises(IntegrityError, match="cannot change"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE memories_memory SET provenance = '{\"how\": \"recorded\", \"by\": {\"kind\": \"system\"}}' "
                "WHERE id = %s",
                [memory.id],
            )
    with pytest.raises(IntegrityError), transaction.atomic():
        Memory.objects.filter(pk=memory.pk).update(provenance={})

    assert Memory.objects.get(pk=memory.pk).provenance == memory.provenance


def older_than_provenance(org: Any, project: Any, **fields: Any) -> Memory:
    """A row as the bank held it before provenance: ``{}`` (written directly, as the migration left them)."""
    return Memory.objects.create(
        organization=org, project=project, title="Old lesson", description="From before", outcome="success",
        content="Written before provenance was recorded.", **fields,
    )  # fmt: skip


def test_a_memory_older_than_provenance_may_be_given_one_once(cast):
    memory = older_than_provenance(cast.org_a, cast.project_a)
    assert memory.provenance == {}

    Memory.objects.filter(pk=memory.pk).update(provenance={"v": 1, "how": "recorded"})
    with pytest.raises(IntegrityError), transaction.atomic():
        Memory.objects.filter(pk=memory.pk).update(provenance={"v": 1, "how": "imported"})


def test_get_and_list_describe_a_memory_older_than_provenance_from_its_columns(cast):
    _, raw = token_create(organization=cast.org_a, label="old-agent")
    ci, _ = token_create(organization=cast.org_a, label="ci")
    memory = older_than_provenance(cast.org_a, cast.project_a, created_by_token=ci)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")

    got = client.get(f"{MEMORIES}/{memory.id}").json()["source"]
    (listed,) = [m["source"] for m in client.get(MEMORIES).json()["results"] if m["id"] == memory.id]

    assert got == listed
    assert (got["how"], got["by"], got["via"]) == ("recorded", "token ci", None)
    assert got["label"] == f"recorded by token ci · {memory.created_at.date().isoformat()}"
