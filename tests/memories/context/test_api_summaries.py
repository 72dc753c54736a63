"""REST: GET /api/v1/summaries and /api/v1/summaries/{id} — consolidated summaries
(docs/memory-model.md#summaries)."""

from __future__ import annotations

import pytest

from memories.context.services import summary_store
from memories.models import MemorySummary
from tests.factories import MemoryFactory, ProjectFactory, summary_make

SUMMARIES = "/api/v1/summaries"


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


def test_a_summary_shows_every_field_of_a_summary(alice, agent):
    source = MemoryFactory(principal=agent, title="Old timeout advice")
    summary = summary_make(
        agent,
        sources=[source],
        superseded_facts=({"original_fact": "30 s", "superseded_by": "5 s", "source_memory_id": source.id},),
    )
    body = alice.get(f"{SUMMARIES}/{summary.id}").json()
    assert body["id"] == summary.id and body["memory_id"] == summary.memory_id
    assert body["source_memory_ids"] == [source.id] and body["project"] == "web-app"
    assert body["summary"] == summary.summary and body["key_facts"] == ["Every database call gets a deadline"]
    assert body["decisions"] == [
        {"decision": "Use context.WithTimeout", "rationale": "bounded latency", "outcome": None, "confidence": "high"}
    ]
    assert body["superseded_facts"] == [
        {"original_fact": "30 s", "superseded_by": "5 s", "source_memory_id": source.id}
    ]
    assert body["temporal_range"] == [source.created_at.isoformat(), source.updated_at.isoformat()]
    assert body["consolidation_run_id"] == "run_test" and body["activation_count"] == 0
    assert 0 < body["confidence"] <= 1


def test_the_list_is_newest_first_and_filters_by_project_status_and_memory(alice, agent, cast, make_token):
    older, newer = summary_make(agent), summary_make(agent)
    memory = MemoryFactory(principal=agent)
    rejected = summary_store(memory=memory, sources=[memory], run_id="run_x", error="no JSON object", raw_reply="?")
    body = alice.get(SUMMARIES).json()
    assert [s["id"] for s in body["results"]] == [rejected.id, newer.id, older.id] and body["count"] == 3
    assert body["results"][0]["status"] == "rejected" and body["results"][0]["error"] == "no JSON object"
    assert [s["id"] for s in alice.get(SUMMARIES, {"status": "ready"}).json()["results"]] == [newer.id, older.id]
    assert [s["id"] for s in alice.get(SUMMARIES, {"memory": older.memory_id}).json()["results"]] == [older.id]
    other = ProjectFactory(organization=cast.org_a, slug="mobile")
    assert alice.get(SUMMARIES, {"project": "mobile"}).json()["count"] == 0
    _, mobile_agent = make_token(cast.org_a, projects=[other])
    summary_make(mobile_agent)
    assert alice.get(SUMMARIES, {"project": "mobile"}).json()["count"] == 1


def test_the_list_pages(alice, agent):
    for _ in range(3):
        summary_make(agent)
    page = alice.get(SUMMARIES, {"page_size": 2}).json()
    assert page["count"] == 3 and len(page["results"]) == 2 and page["next"]
    assert len(alice.get(SUMMARIES, {"page_size": 2, "page": 2}).json()["results"]) == 1


@pytest.mark.parametrize(
    ("query", "field"),
    [({"status": "done"}, "status"), ({"project": ""}, "project"), ({"sort": "x"}, "sort"), ({"page": "0"}, "page")],
)
def test_bad_query_parameters_are_a_400_naming_them(alice, query, field):
    response = alice.get(SUMMARIES, query)
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_an_unknown_project_or_summary_is_a_404(alice):
    assert alice.get(SUMMARIES, {"project": "nope"}).status_code == 404
    assert alice.get(f"{SUMMARIES}/sum_missing").status_code == 404


def test_a_token_restricted_to_another_project_does_not_see_the_summary(cast, agent, make_token, token_client):
    summary = summary_make(agent)
    other = ProjectFactory(organization=cast.org_a, slug="mobile")
    restricted = token_client(cast.org_a, projects=[other])
    assert restricted.get(f"{SUMMARIES}/{summary.id}").status_code == 404
    assert restricted.get(SUMMARIES).json()["count"] == 0


def test_a_token_without_memories_read_is_refused(cast, agent, token_client):
    summary = summary_make(agent)
    writer = token_client(cast.org_a, scopes=["memories:write"])
    assert writer.get(f"{SUMMARIES}/{summary.id}").status_code == 403
    assert writer.get(SUMMARIES).status_code == 403


@pytest.mark.cross_tenant("api-summary")
def test_another_orgs_summary_is_a_404(cast, agent, token_client):
    summary = summary_make(agent)
    assert token_client(cast.org_b).get(f"{SUMMARIES}/{summary.id}").status_code == 404


@pytest.mark.cross_tenant("api-summaries")
def test_another_orgs_summaries_are_not_listed(cast, agent, token_client):
    summary_make(agent)
    charlie = token_client(cast.org_b)
    assert charlie.get(SUMMARIES).json()["count"] == 0
    assert charlie.get(SUMMARIES, {"project": "web-app"}).status_code == 404
    assert MemorySummary.objects.count() == 1
