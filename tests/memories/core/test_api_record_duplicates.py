"""REST: POST /api/v1/memories with a memory that is already there
(docs/memory-model.md#how-a-memory-enters-the-bank) answers 200 with the existing memory's id as
`duplicate_of` and creates nothing."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import AuditEvent
from memories.models import Memory

MEMORIES = "/api/v1/memories"
BODY = {
    "title": "Wrap errors with context",
    "description": "When handling errors in services",
    "content": "Always wrap errors with context so the log says where they came from.",
    "outcome": "success",
    "tags": ["errors", "go"],
}


def post(client: Any, **overrides: Any) -> Any:
    return client.post(MEMORIES, {**BODY, **overrides}, format="json")


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


def test_recording_the_same_memory_again_answers_200_with_duplicate_of(alice):
    first = post(alice)
    assert first.status_code == 201 and "duplicate_of" not in first.json()
    before = Memory.objects.count(), AuditEvent.objects.count()

    again = post(alice, title="  wrap ERRORS with context")

    assert again.status_code == 200, again.json()
    body = again.json()
    assert body["id"] == body["duplicate_of"] == first.json()["id"] == body["memory"]["id"]
    assert "identical memory already exists" in body["message"]
    assert body["initial_confidence"] == pytest.approx(0.8)
    assert (Memory.objects.count(), AuditEvent.objects.count()) == before


def test_a_near_identical_memory_is_recorded(alice):
    first = post(alice)
    other = post(alice, content=BODY["content"] + " Include the request id.")
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]


def test_another_orgs_identical_memory_is_not_a_duplicate(cast, alice, token_client):
    theirs = post(alice).json()["id"]
    ours = post(token_client(cast.org_b))
    assert ours.status_code == 201, ours.json()
    assert ours.json()["id"] != theirs and "duplicate_of" not in ours.json()
    assert theirs not in str(ours.json())


def test_the_schema_documents_the_duplicate_answer(api_client):
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    responses = schema["paths"][MEMORIES]["post"]["responses"]
    assert {"200", "201"} <= set(responses)
    recorded = schema["components"]["schemas"]["RecordResponse"]
    assert "duplicate_of" in recorded["properties"] and "duplicate_of" not in recorded.get("required", [])
    assert "duplicate_of" in schema["paths"][MEMORIES]["post"]["description"]
