"""Consolidation REST bodies are strict like every other (docs/agent-api.md#strict-arguments): the schema says
``additionalProperties: false``, so an unknown field is a 400 naming it, and values must have their JSON type
(``"true"`` is not a boolean)."""

from __future__ import annotations

import pytest

from consolidation import contracts as consolidation_contracts
from consolidation.models import ConsolidationRun
from memories.models import MemoryLink
from tests.consolidation.vectors import disputed_pair

RUNS = "/api/v1/consolidation/runs"


@pytest.fixture
def enqueued(monkeypatch):
    runs: list[ConsolidationRun] = []
    monkeypatch.setattr(consolidation_contracts, "consolidation_enqueue", runs.append)
    return runs


@pytest.mark.parametrize(
    "body",
    [
        {"project": "web-app", "dryrun": True},
        {"project": "web-app", "dry_run": "true"},
        {"project": "web-app", "max_clusters": "3"},
        {"project": 7},
        {"project": "web-app", "project_id": "web-app"},  # one field under two names: not both (the schema says so)
        {"project": None, "project_id": None},  # sent, even null: the schema's "not both" holds for keys
        {"project": "web-app", "project_id": None},
    ],
)
def test_a_run_request_with_an_unknown_or_mistyped_field_is_a_400_naming_it(cast, token_client, enqueued, body):
    response = token_client(cast.org_a).post(RUNS, body, format="json")

    assert response.status_code == 400, response.json()
    (field,) = response.json()["errors"]
    assert field in body
    assert not ConsolidationRun.objects.exists()


def test_a_run_request_must_be_json(cast, token_client, enqueued):
    response = token_client(cast.org_a).post(RUNS, {"project": "web-app"})

    assert response.status_code == 415


def test_resolving_a_dispute_with_an_unknown_field_or_an_overlong_id_is_a_4xx(cast, token_client, make_token):
    _, agent = make_token(cast.org_a, projects=[cast.project_a])
    _, _, link = disputed_pair(agent)
    client = token_client(cast.org_a)

    unknown = client.post(
        f"/api/v1/consolidation/disputes/{link.id}/resolve", {"resolution": "keep_both", "why": "x"}, format="json"
    )
    overlong = client.post(
        f"/api/v1/consolidation/disputes/{'9' * 30}/resolve", {"resolution": "keep_both"}, format="json"
    )

    assert unknown.status_code == 400 and list(unknown.json()["errors"]) == ["why"]
    assert overlong.status_code == 404
    assert MemoryLink.objects.get(pk=link.pk).resolved_at is None


def test_the_schema_says_request_bodies_allow_no_other_fields(api_client, db):
    schemas = api_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]

    for name in ("ConsolidateRestRequest", "DisputeResolveRequest", "SessionSubmitRequest", "RecordRequest"):
        assert schemas[name]["additionalProperties"] is False, name
