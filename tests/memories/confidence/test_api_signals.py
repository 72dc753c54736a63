"""REST: feedback, outcome, lineage and the signal log of a memory (docs/confidence.md#signals)."""

from __future__ import annotations

from typing import Any

import pytest

from memories.models import Memory
from tests.factories import MemoryLinkFactory, ProjectFactory

MEMORIES = "/api/v1/memories"


def record(client: Any, title: str = "Use context deadlines", **overrides: Any) -> str:
    body = {
        "title": title,
        "description": "When calling slow services",
        "content": "Wrap outgoing calls in a deadline and retry idempotent requests.",
        "outcome": "success",
        "project": "web-app",
        **overrides,
    }
    response = client.post(MEMORIES, body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


@pytest.fixture
def memory_id(alice):
    return record(alice)


def confidence(client: Any, memory_id: str) -> float:
    return client.get(f"{MEMORIES}/{memory_id}").json()["confidence"]


# --- feedback --------------------------------------------------------------------------------------


def test_helpful_feedback_raises_confidence_and_answers_success_new_confidence_and_message(alice, memory_id):
    response = alice.post(f"{MEMORIES}/{memory_id}/feedback", {"helpful": True, "comment": "saved me"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body == {"success": True, "new_confidence": body["new_confidence"], "message": "Feedback recorded"}
    assert body["new_confidence"] > 0.8
    assert confidence(alice, memory_id) == pytest.approx(body["new_confidence"], abs=1e-4)


def test_unhelpful_feedback_lowers_confidence(alice, memory_id):
    body = alice.post(f"{MEMORIES}/{memory_id}/feedback", {"helpful": False}, format="json").json()
    assert body["success"] is True
    assert body["new_confidence"] < 0.8


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, None])
def test_feedback_needs_a_real_json_boolean(alice, memory_id, value):
    response = alice.post(f"{MEMORIES}/{memory_id}/feedback", {"helpful": value}, format="json")
    assert response.status_code == 400
    assert "helpful" in response.json()["errors"]
    assert confidence(alice, memory_id) == pytest.approx(0.8)


def test_feedback_without_helpful_is_400(alice, memory_id):
    response = alice.post(f"{MEMORIES}/{memory_id}/feedback", {"comment": "meh"}, format="json")
    assert response.status_code == 400
    assert "helpful" in response.json()["errors"]


def test_a_read_only_token_gets_403_on_feedback_and_outcome(cast, token_client, memory_id):
    reader = token_client(cast.org_a, scopes=["memories:read"])
    for verb, body in (("feedback", {"helpful": True}), ("outcome", {"succeeded": True})):
        response = reader.post(f"{MEMORIES}/{memory_id}/{verb}", body, format="json")
        assert response.status_code == 403
        assert "memories:write" in response.json()["detail"]
    assert reader.get(f"{MEMORIES}/{memory_id}/signals").json()["count"] == 0


@pytest.mark.cross_tenant("api-memory-feedback", "api-memory-outcome", "api-memory-lineage", "api-memory-signals")
def test_another_org_gets_404_for_feedback_outcome_lineage_and_signals(cast, token_client, alice, memory_id):
    globex = token_client(cast.org_b)
    attempts = [
        globex.post(f"{MEMORIES}/{memory_id}/feedback", {"helpful": False}, format="json"),
        globex.post(f"{MEMORIES}/{memory_id}/outcome", {"succeeded": False}, format="json"),
        globex.get(f"{MEMORIES}/{memory_id}/lineage"),
        globex.get(f"{MEMORIES}/{memory_id}/signals"),
    ]
    for response in attempts:
        assert response.status_code == 404
        assert response.json()["detail"] == f"memory '{memory_id}' not found"
        assert response.json()["code"] == "not_found"
    assert confidence(alice, memory_id) == pytest.approx(0.8)
    assert alice.get(f"{MEMORIES}/{memory_id}/signals").json()["count"] == 0


# --- outcome ---------------------------------------------------------------------------------------


def test_a_successful_outcome_is_recorded_and_raises_confidence(alice, memory_id):
    response = alice.post(f"{MEMORIES}/{memory_id}/outcome", {"succeeded": True, "session_id": "s-1"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["recorded"] is True
    assert body["message"] == "Outcome recorded"
    assert body["new_confidence"] > 0.8


def test_a_failed_outcome_lowers_confidence(alice, memory_id):
    body = alice.post(f"{MEMORIES}/{memory_id}/outcome", {"succeeded": False}, format="json").json()
    assert body["new_confidence"] < 0.8


@pytest.mark.parametrize("payload", [{"succeeded": "no"}, {"succeeded": 1}, {}, {"succeeded": True, "extra": 1}])
def test_an_invalid_outcome_is_400(alice, memory_id, payload):
    response = alice.post(f"{MEMORIES}/{memory_id}/outcome", payload, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


# --- signals ---------------------------------------------------------------------------------------


def test_the_signal_log_lists_recent_events_newest_first(alice, memory_id):
    alice.post(f"{MEMORIES}/{memory_id}/feedback", {"helpful": True, "comment": "worked"}, format="json")
    outcome = alice.post(f"{MEMORIES}/{memory_id}/outcome", {"succeeded": False, "session_id": "s-9"}, format="json")
    response = alice.get(f"{MEMORIES}/{memory_id}/signals")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    latest, earlier = body["results"]
    assert set(latest) == {"type", "positive", "comment", "session_id", "actor", "confidence_after", "created_at"}
    assert (latest["type"], latest["positive"], latest["session_id"]) == ("outcome", False, "s-9")
    assert latest["confidence_after"] == pytest.approx(outcome.json()["new_confidence"], abs=1e-4)
    assert (earlier["type"], earlier["positive"], earlier["comment"]) == ("explicit", True, "worked")
    assert latest["actor"].startswith("token:rb_")


# --- lineage ---------------------------------------------------------------------------------------


def test_lineage_shows_a_consolidation_link_from_both_ends(cast, alice):
    merged_id = record(alice, "Deadlines for every outgoing call")
    source_id = record(alice, "Timeouts for HTTP calls")
    merged, source = Memory.objects.get(pk=merged_id), Memory.objects.get(pk=source_id)
    MemoryLinkFactory(source=merged, target=source, kind="consolidates", reason="near-duplicates")
    Memory.objects.filter(pk=source_id).update(
        state="archived", archived_reason="consolidated", consolidated_into=merged
    )

    forward = alice.get(f"{MEMORIES}/{merged_id}/lineage")
    assert forward.status_code == 200
    forward_body = forward.json()
    assert forward_body["memory"]["id"] == merged_id
    assert forward_body["memory"]["state"] == "active"
    assert forward_body["incoming"] == []
    (link,) = forward_body["outgoing"]
    assert link["kind"] == "consolidates"
    assert link["reason"] == "near-duplicates"
    assert link["memory"]["id"] == source_id
    assert link["memory"]["state"] == "archived"
    assert forward_body["sources"] == [source_id]
    assert forward_body["consolidated_into"] is None

    backward = alice.get(f"{MEMORIES}/{source_id}/lineage").json()
    assert backward["outgoing"] == []
    assert [(link["kind"], link["memory"]["id"]) for link in backward["incoming"]] == [("consolidates", merged_id)]
    assert backward["consolidated_into"] == merged_id
    assert backward["sources"] == []


def test_lineage_hides_links_to_memories_outside_a_restricted_tokens_reach(cast, alice, token_client):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    org_wide = record(alice, "Org-wide deadlines", project=None, scope="org")
    mobile_memory = record(alice, "Mobile deadlines", project="mobile")
    web_memory = record(alice, "Web deadlines")
    for target in (mobile_memory, web_memory):
        MemoryLinkFactory(source_id=org_wide, target_id=target, kind="consolidates")
    web_only = token_client(cast.org_a, projects=[cast.project_a])
    outgoing = web_only.get(f"{MEMORIES}/{org_wide}/lineage").json()["outgoing"]
    assert [link["memory"]["id"] for link in outgoing] == [web_memory]
