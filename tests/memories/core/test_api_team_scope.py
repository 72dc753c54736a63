"""A team-scoped memory in a project that belongs to no team is a 409 naming the project: the body is
valid by the schema, the project's setup forbids it (a 400 would tell a client that followed the schema
that its request was malformed: schemathesis counts that as a valid request rejected)."""

from __future__ import annotations

from memories.models import Memory
from tests.factories import TeamFactory

BODY = {"title": "t", "description": "d", "content": "Share it with the team", "outcome": "success", "scope": "team"}


def test_team_scope_in_a_project_without_a_team_is_a_409_saying_what_to_do(cast, token_client):
    response = token_client(cast.org_a).post("/api/v1/memories", BODY, format="json")

    assert response.status_code == 409
    assert list(response.json()["errors"]) == ["scope"]
    assert "'web-app' is in none" in response.json()["detail"] and "scope project or org" in response.json()["detail"]
    assert not Memory.objects.exists()


def test_team_scope_in_a_team_project_records_a_team_memory_without_naming_the_only_project(cast, token_client):
    cast.project_a.team = TeamFactory(organization=cast.org_a, slug="platform")
    cast.project_a.save()

    response = token_client(cast.org_a).post("/api/v1/memories", BODY, format="json")

    assert response.status_code == 201, response.json()
    assert (response.json()["memory"]["scope"], response.json()["memory"]["team"]) == ("team", "platform")
