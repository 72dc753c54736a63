"""The neighbour stage of search (docs/search.md#neighbours): the best hits bring in the memories recorded
next to them in the same place, and each relevance is blended with its best neighbour's (the blend alone:
test_neighbours.py)."""

from __future__ import annotations

import pytest

from memories.models import Memory
from memories.moderation.services import memory_archive
from memories.search.contracts import SearchExplanation
from tests.factories import ProjectFactory
from tests.memories.search.search_setup import ids, search
from tests.memories.search.search_setup import record as record_default

pytestmark = pytest.mark.usefixtures("every_memory_its_own_result")

QUESTION = "why did the nightly backup fail"


def record(principal, title, content, **overrides):
    return record_default(principal, title=title, description="Operations log", content=content, **overrides)


def unrelated(principal, n):
    return [
        record(principal, f"Frontend palette note {i}", f"Use the teal accent colour for buttons, variant {i}.")
        for i in range(n)
    ]


@pytest.fixture
def passage(token):
    """A failure and its explanation recorded one after the other, unrelated memories, then a memory on a
    neighbouring topic that shares more of the question's words than the explanation does."""
    failure = record(token, "Nightly backup failed", "The nightly backup job failed again and paged the on-call.")
    reason = record(token, "Replica disk was full", "Found it: the replica disk was full, so the nightly dump aborted.")
    unrelated(token, 3)
    retention = record(token, "Backup retention", "Nightly backup snapshots are kept for thirty days.")
    return failure, reason, retention


def test_the_memory_recorded_after_a_match_ranks_above_a_better_isolated_match(token, passage):
    failure, reason, retention = passage
    result = search(token, QUESTION, limit=5, min_confidence=0, explain=True)
    order = ids(result)
    assert order[0] == failure.id
    assert order.index(reason.id) < order.index(retention.id)
    hit = next(h for h in result.hits if h.memory.id == reason.id)
    assert hit.breakdown.neighbour == failure.id
    assert hit.breakdown.own_relevance is not None
    assert hit.breakdown.neighbour_relevance > hit.breakdown.own_relevance


def test_without_the_stage_the_better_isolated_match_stays_ahead(token, passage, settings):
    settings.SEARCH_NEIGHBOURS = False
    failure, reason, retention = passage
    order = ids(search(token, QUESTION, limit=5, min_confidence=0))
    assert order[0] == failure.id
    assert order.index(retention.id) < order.index(reason.id)


def test_explain_names_the_neighbour_and_the_relevance_before_the_stage(token, passage):
    failure, reason, _ = passage
    result = search(token, QUESTION, limit=5, min_confidence=0, explain=True)
    hit = next(h for h in result.hits if h.memory.id == reason.id)
    out = SearchExplanation.of(hit)  # what REST and MCP answer under `explain`
    assert out.neighbour == failure.id
    assert out.own_relevance == pytest.approx(hit.breakdown.own_relevance, abs=1e-4)
    assert out.neighbour_relevance == pytest.approx(hit.breakdown.neighbour_relevance, abs=1e-4)
    assert out.relevance == pytest.approx(hit.breakdown.relevance, abs=1e-4)


def test_being_recorded_next_to_a_hit_is_not_enough_to_be_returned(token):
    failure = record(token, "Nightly backup failed", "The nightly backup job failed again and paged the on-call.")
    (palette,) = unrelated(token, 1)
    result = search(token, QUESTION, limit=5, min_confidence=0)
    assert failure.id in ids(result) and palette.id not in ids(result)


def test_neighbours_come_from_the_same_place_and_the_search_filter_only(cast, token, make_token):
    other_project = ProjectFactory(organization=cast.org_a, slug="other-app")
    _, admin = make_token(cast.org_a)
    failure = record(token, "Nightly backup failed", "The nightly backup job failed again and paged the on-call.")
    elsewhere = record(
        admin, "Replica disk was full", "Found it: the replica disk was full.", project=other_project.slug
    )
    archived = record(token, "Replica disk was full", "Found it: the replica disk was full, so the dump aborted.")
    memory_archive(principal=admin, memory=archived)
    _, charlie = make_token(cast.org_b)
    record(charlie, "Replica disk was full", "Found it: the replica disk was full, so the dump aborted (globex).")
    kept = record(token, "Replica disk was full again", "The replica disk was full once more; the dump aborted.")
    result = search(token, QUESTION, limit=10, min_confidence=0, explain=True)
    found = ids(result)
    assert elsewhere.id not in found and archived.id not in found
    assert all(Memory.objects.get(pk=memory_id).organization_id == cast.org_a.id for memory_id in found)
    hit = next(h for h in result.hits if h.memory.id == kept.id)
    assert hit.breakdown.neighbour == failure.id  # the next memory of the place within the filter


def test_organization_memories_bring_no_neighbours_in(cast, make_token):
    """Their walk would have no index to use (docs/search.md#neighbours): an org-wide failure and the
    explanation recorded right after it are not linked."""
    _, admin = make_token(cast.org_a)
    failure = record(
        admin, "Nightly backup failed", "The nightly backup job failed again and paged the on-call.", scope="org"
    )
    reason = record(
        admin, "Replica disk was full", "Found it: the replica disk was full, so the nightly dump aborted.", scope="org"
    )
    result = search(admin, QUESTION, limit=5, min_confidence=0, explain=True)
    assert failure.id in ids(result)
    assert all(h.breakdown.neighbour is None for h in result.hits)
    assert reason.id in ids(result)  # found by its own words ("nightly"), not lifted by the failure


def test_the_neighbour_walk_names_only_the_hits_project_not_every_place_in_reach(cast, make_token):
    """A neighbour shares its hit's project, so the walk's filter needs no other place. Repeating the
    reach's team and organization alternatives let PostgreSQL answer each side with a bitmap over all of
    them, reading and sorting the whole project for every hit: 0.4–0.8 s a search in a 50K-memory
    organisation of a 1.3M-row table, against 1–10 ms walking the index in order (bench/README.md,
    "scale.py", with the EXPLAIN of both). A tiny test table never gets that plan, so this checks the filter."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _, teammate = make_token(cast.org_a, projects=[cast.project_a])
    failure = record(teammate, "Nightly backup failed", "The nightly backup job failed again and paged the on-call.")
    record(teammate, "Replica disk was full", "Found it: the replica disk was full, so the nightly dump aborted.")
    with CaptureQueriesContext(connection) as captured:
        result = search(teammate, QUESTION, limit=5, min_confidence=0)
    assert failure.id in ids(result)
    walk = next(q["sql"] for q in captured.captured_queries if "/* search:neighbours */" in q["sql"])
    assert "team_id IS NOT NULL" not in walk  # the reach's team memories
    assert "team_id IS NULL" not in walk  # the reach's organization memories
