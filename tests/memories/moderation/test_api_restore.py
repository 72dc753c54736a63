"""REST restore answers a clear 409 for a memory that is already active
(docs/memory-model.md#states-and-archive-reasons), and the archive reasons are documented as an enum with
their meanings."""

from __future__ import annotations

import pytest

from accounts.models import AuditEvent

MEMORIES = "/api/v1/memories"


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


def record(client) -> str:
    body = {"title": "t", "description": "d", "content": "Retry webhooks with backoff", "outcome": "success"}
    body["project"] = "web-app"
    return client.post(MEMORIES, body, format="json").json()["id"]


def test_restoring_an_active_memory_is_a_409_saying_it_is_already_active(alice):
    memory_id = record(alice)

    response = alice.post(f"{MEMORIES}/{memory_id}/restore", format="json")

    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert "already active" in response.json()["detail"] and memory_id in response.json()["detail"]
    assert not AuditEvent.objects.filter(verb="memory.restore").exists()


def test_restoring_an_archived_memory_still_works_once(alice):
    memory_id = record(alice)
    alice.post(f"{MEMORIES}/{memory_id}/archive", {"reason": "stale"}, format="json")

    first = alice.post(f"{MEMORIES}/{memory_id}/restore")
    second = alice.post(f"{MEMORIES}/{memory_id}/restore")

    assert first.status_code == 200 and first.json()["state"] == "active"
    assert second.status_code == 409


def test_restore_takes_no_body_fields(alice):
    memory_id = record(alice)
    alice.post(f"{MEMORIES}/{memory_id}/archive", format="json")

    response = alice.post(f"{MEMORIES}/{memory_id}/restore", {"reason": "x"}, format="json")

    assert response.status_code == 400 and list(response.json()["errors"]) == ["reason"]


def test_the_schema_lists_the_archive_reasons_with_their_meaning(api_client, db):
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    archive = schema["paths"]["/api/v1/memories/{memory_id}/archive"]["post"]
    body_ref = archive["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    reason = schema["components"]["schemas"][body_ref.rsplit("/", 1)[1]]["properties"]["reason"]
    enum_ref = reason["allOf"][0]["$ref"]

    assert enum_ref.endswith("/ArchiveReasonEnum")
    enum = schema["components"]["schemas"]["ArchiveReasonEnum"]
    reasons = {"manual", "stale", "superseded", "duplicate", "consolidated", "low_confidence", "code_deleted"}
    assert set(enum["enum"]) == reasons
    assert "no longer true" in enum["description"]
    assert "409" in schema["paths"]["/api/v1/memories/{memory_id}/restore"]["post"]["responses"]
