"""REST un-merge says what to do instead when a memory cannot be un-merged
(docs/memory-model.md#states-and-archive-reasons): a memory archived as a duplicate used to be told
"this consolidated memory is already archived"."""

from __future__ import annotations

import pytest

from memories.models import Memory
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke
from tests.fakes import ScriptedLLM

MEMORIES = "/api/v1/memories"


@pytest.fixture
def merged(cast, agent):
    titles = ["Use context.WithTimeout for database calls", "Always set DB query timeouts", "DB timeout practices"]
    sources = [remember(agent, title, spoke(0, n, 0.87)) for n, title in enumerate(titles, 1)]
    run_cycle(agent, cast.project_a, cycle_llm())
    (consolidated,) = Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED)
    return consolidated, sources


def test_unmerging_a_memory_archived_as_a_duplicate_says_so_and_points_to_restore(cast, token_client, agent):
    kept = remember(agent, "The API is RESTful", spoke(0, 2, 0.97), content="The API is all RESTful", confidence=0.9)
    dropped = remember(agent, "API uses REST", spoke(0, 1, 0.97), content="API uses REST and JSON", confidence=0.6)
    run_cycle(agent, cast.project_a, ScriptedLLM())
    assert Memory.objects.get(pk=dropped.pk).archived_reason == Memory.ARCHIVED_DUPLICATE

    response = token_client(cast.org_a).post(f"{MEMORIES}/{dropped.id}/unmerge")

    assert response.status_code == 409
    detail = response.json()["detail"]
    assert f"archived as a duplicate of {kept.id}" in detail and "restore it" in detail
    assert "consolidated memory is already archived" not in detail
    assert list(response.json()["errors"]) == ["memory_id"]


def test_unmerging_a_source_points_to_its_consolidated_memory(cast, token_client, merged):
    consolidated, sources = merged

    response = token_client(cast.org_a).post(f"{MEMORIES}/{sources[0].id}/unmerge")

    assert response.status_code == 409
    assert f"source of the consolidated memory {consolidated.id}" in response.json()["detail"]


def test_unmerging_a_recorded_memory_says_only_consolidated_ones_can_be(cast, token_client, agent):
    memory = remember(agent, "Pin flaky seeds", spoke(0, 1, 0.5))

    response = token_client(cast.org_a).post(f"{MEMORIES}/{memory.id}/unmerge")

    assert response.status_code == 409
    assert "only consolidated memories can be un-merged" in response.json()["detail"]
    assert "was recorded" in response.json()["detail"]


def test_unmerging_twice_says_the_consolidated_memory_is_already_archived(cast, token_client, merged):
    consolidated, _ = merged
    client = token_client(cast.org_a)
    assert client.post(f"{MEMORIES}/{consolidated.id}/unmerge").status_code == 200

    again = client.post(f"{MEMORIES}/{consolidated.id}/unmerge")

    assert again.status_code == 409
    assert f"consolidated memory {consolidated.id} is already archived (manual)" in again.json()["detail"]


@pytest.mark.cross_tenant("api-memory-unmerge")
def test_unmerge_takes_no_body_fields_and_another_org_gets_a_404(cast, token_client, merged):
    consolidated, _ = merged

    with_body = token_client(cast.org_a).post(f"{MEMORIES}/{consolidated.id}/unmerge", {"x": 1}, format="json")
    foreign = token_client(cast.org_b).post(f"{MEMORIES}/{consolidated.id}/unmerge")

    assert with_body.status_code == 400 and list(with_body.json()["errors"]) == ["x"]
    assert foreign.status_code == 404
    assert Memory.objects.get(pk=consolidated.pk).state == Memory.STATE_ACTIVE
