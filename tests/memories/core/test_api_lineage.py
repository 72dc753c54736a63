"""REST lineage of memories linked by real consolidation runs (docs/memory-model.md#links).

The links here are written by ``consolidation_execute`` itself, so each carries its run's id
(``run_…``, a string). A link made by hand without a run hid that the API declared ``run_id`` an
integer and answered 500 for every memory a real run had touched.
"""

from __future__ import annotations

import pytest

from consolidation.models import ConsolidationRun
from memories.models import Memory
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke
from tests.fakes import ScriptedLLM

MEMORIES = "/api/v1/memories"


def test_the_lineage_of_a_duplicate_archived_by_a_run_names_the_run_that_linked_it(cast, token_client, agent):
    kept = remember(agent, "The API is RESTful", spoke(0, 2, 0.97), content="The API is all RESTful", confidence=0.9)
    dropped = remember(agent, "API uses REST", spoke(0, 1, 0.97), content="API uses REST and JSON", confidence=0.6)
    run = run_cycle(agent, cast.project_a, ScriptedLLM())
    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    client = token_client(cast.org_a)

    dropped_lineage = client.get(f"{MEMORIES}/{dropped.id}/lineage")
    kept_lineage = client.get(f"{MEMORIES}/{kept.id}/lineage")

    assert dropped_lineage.status_code == 200, dropped_lineage.content
    (incoming,) = dropped_lineage.json()["incoming"]
    assert (incoming["kind"], incoming["run_id"], incoming["memory"]["id"]) == ("duplicates", run.id, kept.id)
    assert dropped_lineage.json()["memory"]["archived_reason"] == Memory.ARCHIVED_DUPLICATE
    assert kept_lineage.status_code == 200, kept_lineage.content
    (outgoing,) = kept_lineage.json()["outgoing"]
    assert (outgoing["run_id"], outgoing["memory"]["id"]) == (run.id, dropped.id)


def test_the_lineage_of_a_consolidated_memory_lists_its_sources_with_the_run_id(cast, token_client, agent):
    titles = ["Use context.WithTimeout for database calls", "Always set DB query timeouts", "DB timeout practices"]
    sources = [remember(agent, title, spoke(0, n, 0.87)) for n, title in enumerate(titles, 1)]
    run = run_cycle(agent, cast.project_a, cycle_llm())
    (merged,) = Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED)

    response = token_client(cast.org_a).get(f"{MEMORIES}/{merged.id}/lineage")

    assert response.status_code == 200, response.content
    body = response.json()
    assert sorted(body["sources"]) == sorted(m.id for m in sources)
    consolidates = [link for link in body["outgoing"] if link["kind"] == "consolidates"]
    assert sorted(link["memory"]["id"] for link in consolidates) == sorted(m.id for m in sources)
    assert {link["run_id"] for link in consolidates} == {run.id}
    source_lineage = token_client(cast.org_a).get(f"{MEMORIES}/{sources[0].id}/lineage").json()
    assert source_lineage["consolidated_into"] == merged.id


@pytest.mark.cross_tenant("api-memory-lineage")
def test_another_orgs_token_gets_a_404_for_a_lineage_made_by_a_run(cast, token_client, agent):
    remember(agent, "The API is RESTful", spoke(0, 2, 0.97), content="The API is all RESTful", confidence=0.9)
    dropped = remember(agent, "API uses REST", spoke(0, 1, 0.97), content="API uses REST and JSON", confidence=0.6)
    run_cycle(agent, cast.project_a, ScriptedLLM())

    response = token_client(cast.org_b).get(f"{MEMORIES}/{dropped.id}/lineage")

    assert response.status_code == 404 and response.json()["code"] == "not_found"
