"""REST: list / record / get / edit / archive / restore memories (fixed cast: acme vs globex)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import ProjectFactory

MEMORIES = "/api/v1/memories"

FULL_MEMORY_KEYS = {
    "id",
    "title",
    "description",
    "content",
    "outcome",
    "tags",
    "kind",
    "scope",
    "project",
    "team",
    "state",
    "flags",
    "archived_reason",
    "consolidated_into",
    "tier",
    "retention",
    "importance",
    "confidence",
    "alpha",
    "beta",
    "usage_count",
    "last_used_at",
    "impression_count",
    "last_shown_at",
    "origin",
    "source_session",
    "promoted_from",
    "promoted_at",
    "promotion_reason",
    "last_signal_at",
    "created_at",
    "updated_at",
    "source",
    "anchors",
}


def record(client: Any, **overrides: Any) -> dict[str, Any]:
    body = {
        "title": "Wrap errors with context",
        "description": "When handling errors in services",
        "content": "Always wrap errors with context so the log says where they came from.",
        "outcome": "success",
        "tags": ["errors", "go"],
        "project": "web-app",
        **overrides,
    }
    response = client.post(MEMORIES, body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


@pytest.fixture
def charlie(cast, token_client):
    return token_client(cast.org_b)


# --- record ----------------------------------------------------------------------------------------


def test_recording_a_memory_returns_id_message_and_initial_confidence_plus_the_full_memory(alice):
    body = record(alice)
    assert body["message"] == "Memory recorded successfully"
    assert body["status"] == "recorded" and "quarantine" not in body
    assert body["initial_confidence"] == 0.8
    assert body["id"].startswith("mem_")
    memory = body["memory"]
    assert set(memory) == FULL_MEMORY_KEYS
    assert memory["id"] == body["id"]
    assert memory["project"] == "web-app"
    assert memory["scope"] == "project"
    assert memory["team"] is None
    assert memory["state"] == "active"
    assert memory["kind"] == "procedural"
    assert memory["origin"] == "recorded"
    assert memory["tags"] == ["errors", "go"]
    assert memory["usage_count"] == 0


def test_recording_an_org_wide_memory_has_no_project(alice):
    memory = record(alice, project=None, scope="org")["memory"]
    assert memory["scope"] == "org"
    assert memory["project"] is None


def test_recording_without_a_required_field_is_400_naming_it(alice):
    response = alice.post(
        MEMORIES, {"title": "t", "description": "d", "outcome": "success", "project": "web-app"}, format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert "content" in body["errors"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("outcome", "great"),
        ("kind", "dream"),
        ("scope", "galaxy"),
        ("tags", "not-a-list"),
        ("title", 5),
        ("title", "x" * 201),
    ],
)
def test_recording_with_an_invalid_value_is_400_naming_the_field(alice, field, value):
    body = {"title": "t", "description": "d", "content": "c", "outcome": "success", "project": "web-app"}
    response = alice.post(MEMORIES, {**body, field: value}, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_recording_with_an_unknown_field_is_400(alice):
    body = {"title": "t", "description": "d", "content": "c", "outcome": "success", "project": "web-app"}
    response = alice.post(MEMORIES, {**body, "confidence": 1.0}, format="json")
    assert response.status_code == 400
    assert "confidence" in response.json()["errors"]


@pytest.mark.parametrize("payload", ["[1, 2]", '"a string"', "42", "{not json"])
def test_a_request_body_that_is_not_a_json_object_is_400(alice, payload):
    response = alice.generic("POST", MEMORIES, payload, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] in ("invalid", "parse_error")


@pytest.mark.cross_tenant("api-memories")
def test_recording_into_another_orgs_project_is_404(charlie, cast):
    response = charlie.post(
        MEMORIES,
        {"title": "t", "description": "d", "content": "c", "outcome": "success", "project": "web-app"},
        format="json",
    )
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_a_read_only_token_gets_403_on_every_write(cast, alice, token_client):
    memory_id = record(alice)["id"]
    reader = token_client(cast.org_a, scopes=["memories:read"])
    attempts = [
        reader.post(
            MEMORIES,
            {"title": "t", "description": "d", "content": "c", "outcome": "success", "project": "web-app"},
            format="json",
        ),
        reader.patch(f"{MEMORIES}/{memory_id}", {"title": "new"}, format="json"),
        reader.post(f"{MEMORIES}/{memory_id}/archive", format="json"),
        reader.post(f"{MEMORIES}/{memory_id}/restore", format="json"),
    ]
    for response in attempts:
        assert response.status_code == 403
        assert "memories:write" in response.json()["detail"]
    assert reader.get(f"{MEMORIES}/{memory_id}").status_code == 200


# --- retrieve --------------------------------------------------------------------------------------


def test_getting_a_memory_returns_every_field_but_never_the_embedding(alice):
    memory_id = record(alice)["id"]
    response = alice.get(f"{MEMORIES}/{memory_id}")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == FULL_MEMORY_KEYS
    assert "embedding" not in body
    assert body["confidence"] == pytest.approx(0.8)


def test_a_plain_read_changes_nothing_but_a_read_naming_the_session_is_a_use_noted_in_its_ledger(alice):
    """docs/confidence.md#impressions-and-use: looking at a memory must not move it; a session reading it for
    its task is using it."""
    from memories.models import SessionMemoryUse

    memory_id = record(alice)["id"]
    looked = [alice.get(f"{MEMORIES}/{memory_id}").json() for _ in range(2)][-1]
    assert (looked["usage_count"], looked["last_used_at"], looked["confidence"]) == (0, None, pytest.approx(0.8))

    used = alice.get(f"{MEMORIES}/{memory_id}", {"session_id": "sess-read"}).json()

    assert used["usage_count"] == 1 and used["last_used_at"] and used["confidence"] > 0.8
    assert alice.get(f"{MEMORIES}/{memory_id}").json()["usage_count"] == 1
    noted = SessionMemoryUse.objects.filter(session_key="sess-read").values_list("memory_id", "via")
    assert list(noted) == [(memory_id, "get")]


def test_another_orgs_read_naming_a_session_is_a_404_and_uses_nothing(alice, charlie):
    memory_id = record(alice)["id"]
    assert charlie.get(f"{MEMORIES}/{memory_id}", {"session_id": "sess-read"}).status_code == 404
    assert alice.get(f"{MEMORIES}/{memory_id}").json()["usage_count"] == 0


def test_a_read_with_an_unknown_query_parameter_is_a_400_naming_it(alice):
    memory_id = record(alice)["id"]
    response = alice.get(f"{MEMORIES}/{memory_id}", {"sesion_id": "sess-read"})
    assert response.status_code == 400
    assert "sesion_id" in response.json()["errors"]
    assert alice.get(f"{MEMORIES}/{memory_id}").json()["usage_count"] == 0


def test_an_unknown_memory_id_is_404_naming_it(alice):
    response = alice.get(f"{MEMORIES}/mem_doesnotexist")
    assert response.status_code == 404
    body = response.json()
    assert body["detail"] == "memory 'mem_doesnotexist' not found"
    assert body["code"] == "not_found"


@pytest.mark.cross_tenant("api-memory", "api-memory-archive", "api-memory-restore")
def test_a_token_of_another_org_gets_404_for_every_verb_on_a_memory(alice, charlie):
    memory_id = record(alice)["id"]
    own_404 = alice.get(f"{MEMORIES}/mem_doesnotexist").json()
    attempts = [
        charlie.get(f"{MEMORIES}/{memory_id}"),
        charlie.patch(f"{MEMORIES}/{memory_id}", {"title": "stolen"}, format="json"),
        charlie.post(f"{MEMORIES}/{memory_id}/archive", format="json"),
        charlie.post(f"{MEMORIES}/{memory_id}/restore", format="json"),
    ]
    for response in attempts:
        assert response.status_code == 404
        assert response.json()["code"] == own_404["code"]
        assert response.json()["detail"] == f"memory '{memory_id}' not found"
    assert alice.get(f"{MEMORIES}/{memory_id}").json()["title"] == "Wrap errors with context"


def test_a_project_restricted_token_cannot_see_another_projects_memories(cast, alice, token_client):
    mobile = ProjectFactory(organization=cast.org_a, slug="mobile")
    memory_id = record(alice)["id"]
    mobile_only = token_client(cast.org_a, projects=[mobile])
    assert mobile_only.get(f"{MEMORIES}/{memory_id}").status_code == 404
    assert mobile_only.get(MEMORIES).json()["count"] == 0
    assert mobile_only.get(MEMORIES, {"project": "web-app"}).status_code == 404
    own = record(mobile_only, project=None, title="Mobile only")
    assert own["memory"]["project"] == "mobile"
    assert [m["id"] for m in mobile_only.get(MEMORIES).json()["results"]] == [own["id"]]


def test_without_a_token_the_api_is_401(api_client, alice):
    memory_id = record(alice)["id"]
    assert api_client.get(f"{MEMORIES}/{memory_id}").status_code == 401
    assert api_client.get(MEMORIES).status_code == 401


# --- list ------------------------------------------------------------------------------------------


@pytest.mark.cross_tenant("api-memories")
def test_listing_shows_only_the_tokens_own_org(alice, charlie):
    record(alice, title="Acme memory")
    record(charlie, title="Globex memory", project="billing")
    assert [m["title"] for m in alice.get(MEMORIES).json()["results"]] == ["Acme memory"]
    assert [m["title"] for m in charlie.get(MEMORIES).json()["results"]] == ["Globex memory"]


def test_listing_is_paginated_newest_first(alice):
    ids = [record(alice, title=f"Memory {n}")["id"] for n in range(3)]
    first = alice.get(MEMORIES, {"page_size": 2}).json()
    assert first["count"] == 3
    assert [m["id"] for m in first["results"]] == ids[::-1][:2]
    assert first["next"] is not None and first["previous"] is None
    second = alice.get(MEMORIES, {"page_size": 2, "page": 2}).json()
    assert [m["id"] for m in second["results"]] == [ids[0]]


def test_listing_filters_by_outcome_kind_tag_text_and_confidence(alice):
    win = record(alice, title="Retry with backoff", tags=["network", "retry"])["id"]
    loss = record(alice, title="Busy waiting", outcome="failure", kind="semantic", tags=["network"])["id"]

    def ids(**params: Any) -> list[str]:
        response = alice.get(MEMORIES, params)
        assert response.status_code == 200, response.json()
        return [m["id"] for m in response.json()["results"]]

    assert ids(outcome="failure") == [loss]
    assert ids(kind="semantic") == [loss]
    assert ids(tag=["network", "retry"]) == [win]
    assert set(ids(tag="network")) == {win, loss}
    assert ids(q="backoff") == [win]
    assert set(ids(min_confidence=0.5)) == {win, loss}
    assert ids(min_confidence=0.9) == []
    assert ids(max_confidence=0.5) == []
    assert ids(ordering="title") == [loss, win]
    assert ids(project="web-app", scope="org") == []


def test_listing_shows_archived_memories_only_when_asked(alice):
    kept = record(alice, title="Kept")["id"]
    gone = record(alice, title="Gone")["id"]
    assert alice.post(f"{MEMORIES}/{gone}/archive", format="json").status_code == 200
    assert [m["id"] for m in alice.get(MEMORIES).json()["results"]] == [kept]
    assert [m["id"] for m in alice.get(MEMORIES, {"state": "archived"}).json()["results"]] == [gone]
    assert {m["id"] for m in alice.get(MEMORIES, {"state": "any"}).json()["results"]} == {kept, gone}


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("min_confidence", "abc"),
        ("max_confidence", "2"),
        ("scope", "galaxy"),
        ("state", "deleted"),
        ("outcome", "great"),
        ("kind", "dream"),
        ("tier", "lukewarm"),
        ("origin", "stolen"),
        ("ordering", "-embedding"),
    ],
)
def test_listing_with_an_invalid_filter_is_400_naming_the_field(alice, param, value):
    response = alice.get(MEMORIES, {param: value})
    assert response.status_code == 400
    body = response.json()
    assert param in body["errors"]
    assert param in body["detail"]


# --- update ----------------------------------------------------------------------------------------


def test_patching_changes_only_the_given_fields(alice):
    memory_id = record(alice)["id"]
    response = alice.patch(f"{MEMORIES}/{memory_id}", {"title": "Wrap every error", "tags": ["Errors"]}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["title"] == "Wrap every error"
    assert body["tags"] == ["errors"]
    assert body["description"] == "When handling errors in services"
    assert alice.get(f"{MEMORIES}/{memory_id}").json()["title"] == "Wrap every error"


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"confidence": 1.0}, "confidence"),
        ({"state": "archived"}, "state"),
        ({"outcome": "great"}, "outcome"),
        ({"title": ""}, "title"),
        ({"tags": [1, 2]}, "tags"),
    ],
)
def test_patching_an_unknown_or_invalid_field_is_400_and_changes_nothing(alice, payload, field):
    memory_id = record(alice)["id"]
    response = alice.patch(f"{MEMORIES}/{memory_id}", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]
    after = alice.get(f"{MEMORIES}/{memory_id}").json()
    assert after["title"] == "Wrap errors with context"
    assert after["confidence"] == pytest.approx(0.8)


def test_patching_a_misspelt_field_names_the_nearest_known_one(alice):
    memory_id = record(alice)["id"]
    response = alice.patch(f"{MEMORIES}/{memory_id}", {"titel": "Wrap every error"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"]["titel"][0].startswith("Unknown field 'titel' (did you mean 'title'?). Allowed")
    assert alice.get(f"{MEMORIES}/{memory_id}").json()["title"] == "Wrap errors with context"


def test_a_form_encoded_body_is_refused_as_unsupported(alice):
    memory_id = record(alice)["id"]
    response = alice.patch(f"{MEMORIES}/{memory_id}", "title=x", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415


def test_a_project_restricted_token_cannot_change_an_org_wide_memory(cast, alice, token_client):
    memory_id = record(alice, project=None, scope="org")["id"]
    restricted = token_client(cast.org_a, projects=[cast.project_a])
    assert restricted.get(f"{MEMORIES}/{memory_id}").status_code == 200
    response = restricted.patch(f"{MEMORIES}/{memory_id}", {"title": "mine now"}, format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"


# --- archive / restore -----------------------------------------------------------------------------


def test_archiving_then_restoring_a_memory(alice):
    memory_id = record(alice)["id"]
    archived = alice.post(f"{MEMORIES}/{memory_id}/archive", {"reason": "stale"}, format="json")
    assert archived.status_code == 200
    assert archived.json()["state"] == "archived"
    assert archived.json()["archived_reason"] == "stale"
    assert archived.json()["tier"] == "archived"
    restored = alice.post(f"{MEMORIES}/{memory_id}/restore", format="json")
    assert restored.status_code == 200
    assert restored.json()["state"] == "active"
    assert restored.json()["archived_reason"] == ""


def test_archiving_without_a_body_uses_the_manual_reason(alice):
    memory_id = record(alice)["id"]
    response = alice.post(f"{MEMORIES}/{memory_id}/archive")
    assert response.status_code == 200
    assert response.json()["archived_reason"] == "manual"


def test_archiving_with_an_unknown_reason_is_400(alice):
    memory_id = record(alice)["id"]
    response = alice.post(f"{MEMORIES}/{memory_id}/archive", {"reason": "bored"}, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()["errors"]
    assert alice.get(f"{MEMORIES}/{memory_id}").json()["state"] == "active"


def test_the_openapi_schema_documents_the_memory_endpoints(api_client, db):
    schema = api_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path in (
        "/api/v1/memories",
        "/api/v1/memories/search",
        "/api/v1/memories/{memory_id}",
        "/api/v1/memories/{memory_id}/feedback",
        "/api/v1/memories/{memory_id}/lineage",
    ):
        assert path in schema["paths"]
    search = schema["paths"]["/api/v1/memories/search"]["post"]
    assert "requestBody" in search
    create_schema = schema["components"]["schemas"]["RecordRequest"]
    assert set(create_schema["required"]) == {"title", "description", "content", "outcome"}
