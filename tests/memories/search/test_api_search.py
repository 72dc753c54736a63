"""REST: POST /api/v1/memories/search — memory_search over HTTP (docs/search.md#the-request)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import ProjectFactory, summary_make

MEMORIES = "/api/v1/memories"
SEARCH = "/api/v1/memories/search"
HIT_KEYS = {
    "id", "title", "description", "content", "outcome", "confidence", "usage_count", "relevance", "scope", "source",
}  # fmt: skip
SCORE_KEYS = {
    "relevance",
    "fused",
    "time_expression",
    "time_period",
    "similarity",
    "vector_rank",
    "lexical",
    "lexical_rank",
    "confidence",
    "recency_boost",
    "scope",
    "scope_weight",
    "consolidated_boost",
    "score",
    "matched_by",
    "own_relevance",
    "neighbour",
    "neighbour_relevance",
    "path_boost",
    "code_changed_factor",
}


def record(client: Any, title: str, content: str, **overrides: Any) -> str:
    body = {
        "title": title,
        "description": f"When to use: {title.lower()}",
        "content": content,
        "outcome": "success",
        "project": "web-app",
        **overrides,
    }
    response = client.post(MEMORIES, body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["id"]


def search(client: Any, query: str, **args: Any) -> dict[str, Any]:
    response = client.post(SEARCH, {"query": query, **args}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


@pytest.fixture
def timeout_memory(alice):
    record(alice, "Paginate large SQL queries", "Use keyset pagination instead of OFFSET for big tables.")
    record(alice, "Cache templates", "Cache compiled templates in production to save CPU.")
    return record(
        alice,
        "Handle HTTP timeouts with context deadlines",
        "Wrap outgoing HTTP calls in context.WithTimeout and retry idempotent requests on timeout.",
    )


def test_a_recorded_memory_is_found_first_by_a_matching_query(alice, timeout_memory):
    body = search(alice, "how to handle HTTP timeouts")
    assert body["memories"][0]["id"] == timeout_memory
    assert body["total_found"] >= 1
    assert body["tokens_used"] > 0


def test_the_response_has_exactly_memories_total_found_and_tokens_used(alice, timeout_memory):
    body = search(alice, "HTTP timeouts")
    assert set(body) == {"memories", "total_found", "tokens_used"}
    hit = body["memories"][0]
    assert set(hit) == HIT_KEYS
    assert hit["outcome"] == "success"
    assert hit["scope"] == "project"
    assert 0 < hit["relevance"] <= 1.2


def test_explain_adds_the_score_breakdown_to_each_result(alice, timeout_memory):
    hit = search(alice, "HTTP timeouts", explain=True)["memories"][0]
    assert set(hit) == HIT_KEYS | {"explain"}  # the MCP tool's name for it (REST said "score" before)
    score = hit["explain"]
    assert set(score) == SCORE_KEYS
    assert score["scope"] == "project"
    assert score["scope_weight"] == 1.0
    assert score["consolidated_boost"] == 1.0
    assert 1.0 <= score["recency_boost"] <= 1.1
    assert set(score["matched_by"]) <= {"vector", "text"} and score["matched_by"]
    assert hit["relevance"] == pytest.approx(score["score"], abs=1e-4)
    product = score["relevance"] * score["confidence"] * score["recency_boost"] * score["scope_weight"]
    assert score["score"] == pytest.approx(product, abs=1e-3)
    # both legs found it, first of each
    assert score["vector_rank"] == 1 and score["lexical_rank"] == 1
    assert score["similarity"] > 0 and score["lexical"] > 0


def test_searching_records_a_usage_signal_and_increments_usage_count(alice, timeout_memory):
    first = search(alice, "HTTP timeouts", limit=1)["memories"][0]
    assert first["id"] == timeout_memory
    assert first["usage_count"] == 1
    second = search(alice, "HTTP timeouts", limit=1)["memories"][0]
    assert second["usage_count"] == 2
    stored = alice.get(f"{MEMORIES}/{timeout_memory}").json()
    assert stored["usage_count"] == 2
    assert stored["last_used_at"] is not None
    assert second["confidence"] == pytest.approx(stored["confidence"], abs=1e-4)
    signals = alice.get(f"{MEMORIES}/{timeout_memory}/signals").json()["results"]
    assert [s["type"] for s in signals] == ["usage", "usage"]


def test_limit_caps_the_number_of_results(alice, timeout_memory):
    assert len(search(alice, "HTTP timeouts SQL templates", limit=1, min_confidence=0)["memories"]) == 1


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"query": "x", "limit": 21}, "limit"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": "5"}, "limit"),
        ({"query": "x", "min_confidence": 1.5}, "min_confidence"),
        ({"query": "x", "min_confidence": "high"}, "min_confidence"),
        ({"query": "x", "scope": "galaxy"}, "scope"),
        ({"query": "x", "outcome": "mixed"}, "outcome"),
        ({"query": "x", "explain": "yes"}, "explain"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({}, "query"),
        ({"query": "x", "top_k": 3}, "top_k"),
    ],
)
def test_an_invalid_search_argument_is_400_naming_it(alice, args, field):
    response = alice.post(SEARCH, args, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_archived_memories_are_not_returned(alice, timeout_memory):
    assert alice.post(f"{MEMORIES}/{timeout_memory}/archive", format="json").status_code == 200
    ids = [m["id"] for m in search(alice, "HTTP timeouts", min_confidence=0)["memories"]]
    assert timeout_memory not in ids


def test_the_outcome_filter_keeps_only_that_outcome(alice, timeout_memory):
    failure = record(
        alice, "Polling for HTTP timeouts", "Busy-polling a socket for timeouts burned CPU.", outcome="failure"
    )
    failures = search(alice, "HTTP timeouts", outcome="failure")["memories"]
    assert [m["id"] for m in failures] == [failure]
    successes = [m["id"] for m in search(alice, "HTTP timeouts", outcome="success")["memories"]]
    assert failure not in successes and timeout_memory in successes


def test_min_confidence_hides_less_trusted_memories(alice, timeout_memory):
    assert search(alice, "HTTP timeouts", min_confidence=0.95)["memories"] == []
    assert search(alice, "HTTP timeouts", min_confidence=0.8)["memories"][0]["id"] == timeout_memory


def test_the_project_argument_limits_the_search_to_that_projects_cascade(cast, alice, timeout_memory):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    mobile = record(
        alice, "HTTP timeouts on mobile", "Mobile radios sleep: use longer HTTP timeouts.", project="mobile"
    )
    ids = [m["id"] for m in search(alice, "HTTP timeouts", project="mobile")["memories"]]
    assert ids == [mobile]
    response = alice.post(SEARCH, {"query": "x", "project": "nope"}, format="json")
    assert response.status_code == 404
    assert "project" in response.json()["errors"]


@pytest.mark.cross_tenant("api-memory-search")
def test_another_orgs_search_never_returns_this_orgs_memories(cast, token_client, timeout_memory):
    globex = token_client(cast.org_b)
    assert search(globex, "how to handle HTTP timeouts", min_confidence=0)["memories"] == []
    response = globex.post(SEARCH, {"query": "HTTP timeouts", "project": "web-app"}, format="json")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_a_project_restricted_token_does_not_find_another_projects_memories(cast, token_client, timeout_memory):
    mobile = ProjectFactory(organization=cast.org_a, slug="mobile")
    mobile_only = token_client(cast.org_a, projects=[mobile])
    assert search(mobile_only, "HTTP timeouts", min_confidence=0)["memories"] == []


def test_search_needs_the_read_scope_but_not_write(cast, token_client, timeout_memory):
    reader = token_client(cast.org_a, scopes=["memories:read"])
    assert search(reader, "HTTP timeouts")["memories"][0]["id"] == timeout_memory
    runner = token_client(cast.org_a, scopes=["consolidation:run"])
    response = runner.post(SEARCH, {"query": "HTTP timeouts"}, format="json")
    assert response.status_code == 403
    assert "memories:read" in response.json()["detail"]


def test_get_on_the_search_route_is_not_mistaken_for_a_memory_id(alice):
    response = alice.get(SEARCH)
    # the search view has no GET handler (405; accounts.api_base currently answers 403 first)
    assert response.status_code in (403, 405)
    assert "not found" not in response.json()["detail"]


# --- include_summaries (docs/search.md#summaries-in-search) ------------------------------------------


@pytest.fixture
def summaries(agent):
    """Three consolidated summaries of web-app: two about timeouts, one about feature flags."""
    return [
        summary_make(agent, title="HTTP timeouts", summary="Wrap every HTTP call in a timeout and retry on timeout."),
        summary_make(agent, title="Database timeouts", summary="Every database query needs a timeout deadline."),
        summary_make(agent, title="Feature flags", summary="Roll out risky UI changes behind a feature flag."),
    ]


def test_summaries_close_to_the_query_come_back_beside_the_memories(alice, timeout_memory, summaries):
    body = search(alice, "timeout on HTTP calls", limit=4)
    found = [s["id"] for s in body["summaries"]]
    assert found[0] == summaries[0].id and summaries[2].id not in found
    assert len(found) <= 2  # at most limit / 2
    hit = body["summaries"][0]
    assert hit["memory_id"] == summaries[0].memory_id and hit["project"] == "web-app"
    assert hit["summary"] == summaries[0].summary and 0 < hit["relevance"] <= 1
    assert {"key_facts", "decisions", "superseded_facts", "source_memory_ids", "temporal_range"} <= set(hit)
    assert "status" not in hit  # only a rejected summary says so, and search never returns one


def test_limit_one_or_include_summaries_false_returns_no_summaries_key(alice, timeout_memory, summaries):
    assert "summaries" not in search(alice, "HTTP timeouts", limit=1)
    assert "summaries" not in search(alice, "HTTP timeouts", include_summaries=False)


def test_a_summary_hit_counts_an_activation(alice, summaries):
    search(alice, "timeout on HTTP calls")
    summaries[0].refresh_from_db()
    assert summaries[0].activation_count == 1


def test_a_team_or_org_scoped_search_has_no_summaries(alice, summaries):
    assert "summaries" not in search(alice, "HTTP timeouts", scope="team")
    assert "summaries" not in search(alice, "HTTP timeouts", scope="org")


@pytest.mark.cross_tenant("api-memory-search")
def test_another_orgs_summaries_never_come_back(cast, token_client, make_token, summaries):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    summary_make(charlie, title="HTTP timeouts at Globex", summary="Wrap every HTTP call in a timeout.")
    body = search(token_client(cast.org_b), "timeout on HTTP calls")
    assert [s["project"] for s in body["summaries"]] == ["billing"]
