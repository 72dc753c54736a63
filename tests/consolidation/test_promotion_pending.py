"""A promotion proposal awaiting review (docs/consolidation.md#institutional-promotion) is in the state
``proposed``: no memory yet.

No search serves it (exhaustive included), no memory_context, list or count shows it as a memory, no
export carries it, and the generic restore / archive / un-merge refuse it with a 409 pointing to the
review queue, the only place where it is decided. Accepted, it serves like any memory; rejected, it is
an archived memory like any other.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from accounts.access import system_principal
from accounts.models import AuditEvent
from consolidation.models import ReviewItem
from consolidation.promotion.services import promotions_propose
from consolidation.review.services import review_decide
from memories.context.selectors import context_memories
from memories.core.selectors import MemoryFilters, memory_list
from memories.dashboard.selectors import memory_counts, memory_total
from memories.models import Memory, MemoryLink
from memories.moderation.services import memory_archive, memory_restore, memory_unmerge
from memories.search.selectors import SearchQuery, memory_search
from memories.transfer.selectors import export_lines, export_scope
from reasoningbank.errors import Conflict
from tests.consolidation.promotion_setup import lesson, teams_setup
from tests.consolidation.vectors import vec

MEMORIES = "/api/v1/memories"


@pytest.fixture
def acme(cast: Any) -> Any:
    return teams_setup(cast)


@pytest.fixture
def alice(acme: Any) -> Any:
    return acme.principal(acme.alice)


@pytest.fixture
def sources(alice: Any) -> list[Memory]:
    return [lesson(alice, "web-app", 1, usage_count=3), lesson(alice, "api", 2)]


@pytest.fixture
def pending(alice: Any, sources: list[Memory]) -> ReviewItem:
    promotions_propose(principal=alice)
    return ReviewItem.objects.select_related("first").get(kind=ReviewItem.KIND_PROMOTION)


def found(principal: Any, mode: str) -> set[str]:
    """Every memory id a search in ``mode`` returns, near copies folded into a hit included."""
    search = SearchQuery(query="Pin the database driver version", limit=20, min_confidence=0, mode=mode)
    hits = memory_search(principal, search, query_vector=vec({0: 1.0})).hits
    return {h.memory.id for h in hits} | {d for h in hits for d in h.duplicates}


def listed(principal: Any, state: str | None) -> set[str]:
    return set(memory_list(principal, MemoryFilters(state=state)).values_list("id", flat=True))


def test_a_pending_proposal_is_proposed_and_served_by_no_search_mode_not_even_exhaustive(alice, sources, pending):
    assert pending.first.state == Memory.STATE_PROPOSED
    for mode in ("reflexive", "standard", "deep", "exhaustive"):
        hits = found(alice, mode)
        assert pending.first_id not in hits, mode
        assert {s.id for s in sources} <= hits  # the sources keep serving their projects


def test_a_pending_proposal_is_in_no_session_context(acme, alice, pending):
    chosen = context_memories(alice, acme.project_a, limit=20, min_confidence=0, prioritize="confidence")
    assert chosen and pending.first_id not in {m.id for m in chosen}


def test_a_pending_proposal_is_in_no_memory_list_but_its_own_and_in_no_count(alice, sources, pending):
    assert pending.first_id not in listed(alice, "active") | listed(alice, "archived") | listed(alice, None)
    assert listed(alice, Memory.STATE_PROPOSED) == {pending.first_id}
    assert memory_total(alice) == len(sources)
    counts = {name: {b.title: b.count for b in buckets} for name, buckets in memory_counts(alice).items()}
    assert counts["state"] == {"active": 2, "archived": 0, "proposed": 1, "quarantined": 0}
    assert counts["tier"]["archived"] == 0 and sum(counts["kind"].values()) == 2


def test_the_rest_list_shows_a_pending_proposal_only_when_asked_for_by_state(acme, token_client, pending):
    client = token_client(acme.org_a, scopes=["memories:read"])
    for state in ("active", "archived", "any"):
        ids = {m["id"] for m in client.get(MEMORIES, {"state": state}).json()["results"]}
        assert pending.first_id not in ids, state
    (proposed,) = client.get(MEMORIES, {"state": "proposed"}).json()["results"]
    assert (proposed["id"], proposed["state"]) == (pending.first_id, "proposed")
    assert client.get(f"{MEMORIES}/{pending.first_id}").json()["state"] == "proposed"


def test_restoring_a_pending_proposal_is_a_409_pointing_to_the_review_queue(acme, token_client, alice, pending):
    response = token_client(acme.org_a).post(f"{MEMORIES}/{pending.first_id}/restore", format="json")

    assert response.status_code == 409, response.json()
    assert "awaiting review" in json.dumps(response.json()) and "review queue" in json.dumps(response.json())
    with pytest.raises(Conflict, match="promotion proposal awaiting review"):
        memory_restore(principal=alice, memory=pending.first)
    assert Memory.objects.get(pk=pending.first_id).state == Memory.STATE_PROPOSED
    assert not AuditEvent.objects.filter(verb="memory.restore").exists()


def test_archiving_or_un_merging_a_pending_proposal_is_a_409_too(alice, pending):
    with pytest.raises(Conflict, match="cannot be archived"):
        memory_archive(principal=alice, memory=pending.first)
    with pytest.raises(Conflict, match="cannot be un-merged"):
        memory_unmerge(principal=alice, memory=pending.first)
    assert Memory.objects.get(pk=pending.first_id).state == Memory.STATE_PROPOSED


def test_the_detail_page_says_it_awaits_review_links_the_queue_and_offers_no_restore(client, acme, pending):
    client.force_login(acme.alice)
    html = client.get(f"/memories/{pending.first_id}/").content.decode()
    assert "Proposed — awaiting review" in html and 'href="/consolidation/reviews/#promotions-title"' in html
    assert f"/memories/{pending.first_id}/restore/" not in html
    assert f"/memories/{pending.first_id}/archive/" not in html


def test_an_export_leaves_a_pending_proposal_and_its_links_out_and_counts_it(cast, alice, sources, pending):
    lines = [json.loads(line) for line in export_lines(export_scope(system_principal(cast.org_a)))]

    memories = {line["id"] for line in lines if line["type"] == "memory"}
    assert memories == {s.id for s in sources}
    links = [line for line in lines if line["type"] == "link"]
    assert all(pending.first_id not in (link["source"], link["target"]) for link in links)
    assert MemoryLink.objects.filter(source_id=pending.first_id).count() == 2  # left out, not lost
    assert lines[-1]["dropped"] == {"proposals": 1}


def test_accepting_makes_the_proposal_searchable_listed_and_counted(alice, sources, pending):
    review_decide(principal=alice, item=pending, decision="accept")

    assert pending.first_id in found(alice, "standard")
    assert pending.first_id in listed(alice, "active")
    assert memory_total(alice) == len(sources) + 1


def test_rejecting_archives_the_proposal_like_any_archived_memory(alice, pending):
    review_decide(principal=alice, item=pending, decision="reject")

    proposal = Memory.objects.get(pk=pending.first_id)
    assert (proposal.state, proposal.archived_reason) == (Memory.STATE_ARCHIVED, Memory.ARCHIVED_MANUAL)
    assert pending.first_id in listed(alice, "archived") and pending.first_id in found(alice, "exhaustive")
    assert pending.first_id not in found(alice, "deep")
