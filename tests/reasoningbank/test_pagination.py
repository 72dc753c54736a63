"""Every REST list takes ``page`` and ``page_size`` strictly and answers
``{count, next, previous, results}``; an empty or unknown query parameter is a 400 naming it
(docs/agent-api.md#strict-arguments), never silently dropped (``?tier=`` used to list every tier,
``page_size=null`` the default page)."""

from __future__ import annotations

import pytest

from memories.core.services import memory_record

LISTS = [
    "/api/v1/memories",
    "/api/v1/sessions",
    "/api/v1/consolidation/runs",
    "/api/v1/consolidation/disputes",
    "/api/v1/projects",
]


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


@pytest.mark.parametrize("path", LISTS)
def test_every_list_answers_a_page_object(alice, path):
    response = alice.get(path)

    assert response.status_code == 200, response.json()
    assert set(response.json()) == {"count", "next", "previous", "results"}


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize(
    ("param", "value"),
    [("page_size", "null"), ("page_size", ""), ("page_size", "0"), ("page_size", "201"), ("page", "0"), ("page", "x")],
)
def test_a_bad_page_or_page_size_is_a_400_naming_it(alice, path, param, value):
    response = alice.get(path, {param: value})

    assert response.status_code == 400, response.json()
    assert list(response.json()["errors"]) == [param]


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/api/v1/memories", "tier"),
        ("/api/v1/memories", "project"),
        ("/api/v1/memories", "q"),
        ("/api/v1/memories", "tag"),
        ("/api/v1/memories", "min_confidence"),
        ("/api/v1/sessions", "status"),
        ("/api/v1/sessions", "project"),
        ("/api/v1/consolidation/runs", "project"),
    ],
)
def test_an_empty_filter_is_a_400_naming_it_not_an_unfiltered_list(alice, path, param):
    response = alice.get(f"{path}?{param}=")

    assert response.status_code == 400, response.json()
    assert list(response.json()["errors"]) == [param]
    assert "empty" in response.json()["errors"][param][0]


@pytest.mark.parametrize("path", LISTS)
def test_an_unknown_query_parameter_is_a_400_listing_the_allowed_ones(alice, path):
    response = alice.get(path, {"tierr": "hot"})

    assert response.status_code == 400
    assert "page_size" in response.json()["errors"]["tierr"][0]


def test_a_page_past_the_end_is_a_404_saying_how_many_pages_there_are(cast, alice, make_token):
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    content = "Page through long lists"
    for n in range(3):
        memory_record(principal=principal, title=f"m{n}", description="d", content=content, outcome="success")

    first = alice.get("/api/v1/memories", {"page_size": 2})
    second = alice.get(first.json()["next"])
    past = alice.get("/api/v1/memories", {"page_size": 2, "page": 3})

    assert first.json()["count"] == 3 and len(first.json()["results"]) == 2
    assert len(second.json()["results"]) == 1 and second.json()["next"] is None
    assert past.status_code == 404 and "2 pages" in past.json()["detail"]


def test_a_misspelt_query_parameter_is_named_with_the_nearest_known_one(alice):
    response = alice.get("/api/v1/memories", {"outcom": "success"})

    assert response.status_code == 400
    assert response.json()["errors"]["outcom"][0].startswith(
        "Unknown query parameter 'outcom' (did you mean 'outcome'?). Allowed: "
    )
