"""A quarantined memory is never served (docs/security/memory-poisoning.md#quarantine): not by a search in
any mode, not by memory_context, not by the memory list in any state, not counted as active, and exported
as quarantined — so an export → import round trip keeps it waiting for review."""

from __future__ import annotations

import json

import pytest

from accounts.access import system_principal
from memories.core.selectors import memories_active_count
from memories.core.services import memory_record_or_duplicate
from memories.models import Memory
from memories.transfer.selectors import export_lines, export_scope
from memories.transfer.services import bank_import
from tests.factories import OrganizationFactory
from tests.memories.trust.payloads import POISON

# the same words as the poisoned memory's, so that only the quarantine keeps it out of the answers
LOOKALIKE = {
    "title": "Deploy checklist for web-app, step by step",
    "description": "How to deploy web-app safely",
    "content": "Before any deploy run the migrations, then the smoke tests, and tell the user what changed.",
    "outcome": "success",
    "tags": ["deploy"],
}


@pytest.fixture
def memories(agent):
    held = memory_record_or_duplicate(principal=agent, project="web-app", **POISON).memory
    active = memory_record_or_duplicate(principal=agent, project="web-app", **LOOKALIKE).memory
    assert (held.state, active.state) == (Memory.STATE_QUARANTINED, Memory.STATE_ACTIVE)
    return {"held": held, "active": active}


@pytest.fixture
def reader(cast, token_client):
    return token_client(cast.org_a)


@pytest.mark.parametrize("mode", ["reflexive", "standard", "deep", "exhaustive"])
def test_no_search_mode_returns_it(reader, memories, mode):
    body = {"query": "how do I deploy web-app? deploy checklist", "mode": mode, "min_confidence": 0, "limit": 20}

    found = reader.post("/api/v1/memories/search", body, format="json").json()["memories"]

    assert memories["active"].id in [hit["id"] for hit in found]
    assert memories["held"].id not in [hit["id"] for hit in found]


def test_the_session_start_block_never_holds_it(reader, memories):
    body = {"task": "deploy web-app", "min_confidence": 0.5, "max": 20}

    block = reader.post("/api/v1/memories/context", body, format="json").json()["context_block"]

    assert LOOKALIKE["title"] in block
    assert "ignore all previous instructions" not in block and POISON["title"] + "\n" not in block


@pytest.mark.parametrize("state", ["active", "archived", "any"])
def test_the_memory_list_never_lists_it(reader, memories, state):
    listed = reader.get("/api/v1/memories", {"state": state}).json()["results"]
    assert memories["held"].id not in [m["id"] for m in listed]


def test_a_quarantined_state_is_no_filter_of_the_memory_list(reader, memories):
    # the queue is the admins' (GET /api/v1/quarantine), not every token's
    assert reader.get("/api/v1/memories", {"state": "quarantined"}).status_code == 400


def test_it_is_not_counted_among_the_active_memories(cast, memories):
    assert memories_active_count(cast.org_a) == 1


def test_it_is_exported_as_quarantined_and_an_import_keeps_it_so(cast, memories):
    exported = "".join(export_lines(export_scope(system_principal(cast.org_a))))
    line = next(json.loads(text) for text in exported.splitlines() if memories["held"].id in text)
    assert line["state"] == "quarantined"
    assert {f["rule"] for f in line["flags"]} == {f["rule"] for f in memories["held"].flags}

    elsewhere = OrganizationFactory(slug="initech", plan="pro")
    result = bank_import(principal=system_principal(elsewhere), source=exported)

    copy = Memory.objects.get(pk=result.memory_ids[memories["held"].id])
    assert copy.state == Memory.STATE_QUARANTINED and copy.flags
    assert result.quarantined == 1 and result.flagged == 0
    assert Memory.objects.get(pk=result.memory_ids[memories["active"].id]).state == Memory.STATE_ACTIVE
    assert any("wait in quarantine" in warning for warning in result.warnings)


def test_a_quarantined_memory_the_importer_would_not_flag_stays_quarantined_with_the_files_findings(
    cast, memories, set_policy
):
    exported = "".join(export_lines(export_scope(system_principal(cast.org_a))))
    elsewhere = OrganizationFactory(slug="initech", plan="pro")
    set_policy(elsewhere, "off")

    result = bank_import(principal=system_principal(elsewhere), source=exported)

    copy = Memory.objects.get(pk=result.memory_ids[memories["held"].id])
    assert copy.state == Memory.STATE_QUARANTINED
    assert [f["rule"] for f in copy.flags] == [f["rule"] for f in memories["held"].flags]
