"""Consolidation of an imported bank: a bank exported with an open dispute, consolidation lineage, a
summary and a promotion proposal, imported into another organization, consolidates there — the
judge meets pairs the file already links (their verdicts, kept as review items, are not part of
the format) and must neither crash on an empty list of pairs left to judge nor merge a disputed
pair."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.access import system_principal
from accounts.models import Membership, Organization, Project
from consolidation.models import ConsolidationRun, ReviewItem
from consolidation.promotion.services import promotions_propose
from memories.models import Memory, MemoryLink, MemorySummary
from memories.transfer.selectors import export_lines, export_scope
from memories.transfer.services import bank_import
from tests.consolidation.promotion_setup import lesson, teams_setup
from tests.consolidation.vectors import contradiction_reply, cycle_llm, remember, run_cycle, spoke
from tests.factories import OrganizationFactory

# committed transactions, as in the worker: inside a test's transaction the judge's LLM calls run one
# after another instead of in a thread pool, and an empty list of pairs never reached the pool
pytestmark = pytest.mark.django_db(transaction=True)

CLUSTER_TITLES = ["Timeout rule A", "Timeout rule B", "Timeout rule C"]


def pool_contradiction(prompt: str) -> str:
    """The judge finds the two pool sizes contradictory, every other pair compatible."""
    return contradiction_reply("connections" in prompt)


@pytest.fixture
def exported_bank(cast: Any) -> dict[str, Any]:
    """Org A after real runs: a cluster merged (consolidates links, a summary), an open dispute the
    judge linked, a lesson proposed for the platform team; exported with its embeddings."""
    teams_setup(cast)
    alice = cast.principal(cast.alice)
    older = remember(alice, "Connection pool size", spoke(40, 41, 0.75), content="Keep the pool at 10 connections")
    newer = remember(alice, "Connection pool sizing", spoke(40, 42, 0.75), content="Keep the pool at 50 connections")
    for n, title in enumerate(CLUSTER_TITLES, 1):
        remember(alice, title, spoke(0, n, 0.87))
    lesson(alice, "web-app", 61, hub=60)
    lesson(alice, "api", 62, hub=60)

    run = run_cycle(alice, cast.project_a, cycle_llm(contradiction=pool_contradiction))
    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    promotions_propose(principal=alice)

    dispute = MemoryLink.objects.get(kind=MemoryLink.KIND_CONTRADICTS, organization=cast.org_a)
    assert dispute.resolved_at is None and {dispute.source_id, dispute.target_id} == {older.id, newer.id}
    assert MemoryLink.objects.filter(organization=cast.org_a, kind=MemoryLink.KIND_CONSOLIDATES).count() >= 3
    assert MemorySummary.objects.filter(organization=cast.org_a).exists()
    assert ReviewItem.objects.filter(organization=cast.org_a, kind=ReviewItem.KIND_PROMOTION).exists()
    text = "".join(export_lines(export_scope(system_principal(cast.org_a), embeddings=True)))
    return {"text": text, "older": older, "newer": newer}


@pytest.fixture
def initech(cast: Any) -> Organization:
    org = OrganizationFactory(slug="initech", name="Initech", plan="teams")
    Membership.objects.create(organization=org, user=cast.alice, role=Membership.ROLE_OWNER)
    return org


def test_an_imported_bank_with_an_open_dispute_links_summaries_and_proposals_consolidates(cast, exported_bank, initech):
    result = bank_import(principal=system_principal(initech), source=exported_bank["text"])
    assert result.created["link"] >= 4 and result.created["summary"] >= 1
    principal = system_principal(initech)

    for slug in ("web-app", "api"):
        project = Project.objects.get(organization=initech, slug=slug)
        for _ in range(2):  # and again: nothing the first run left makes the next one fail
            run = run_cycle(principal, project, cycle_llm(contradiction=pool_contradiction))
            assert run.status == ConsolidationRun.STATUS_COMPLETED, (slug, run.errors)
            assert run.errors == []

    # the imported dispute is still for a moderator: neither side merged nor archived
    new = result.memory_ids
    for side in ("older", "newer"):
        copy = Memory.objects.get(pk=new[exported_bank[side].id])
        assert (copy.state, copy.consolidated_into_id) == (Memory.STATE_ACTIVE, None)
    assert (
        MemoryLink.objects.filter(
            organization=initech, kind=MemoryLink.KIND_CONTRADICTS, resolved_at__isnull=True
        ).count()
        == 1
    )


def test_the_judge_passes_when_every_close_pair_is_already_linked_as_a_contradiction(cast, agent):
    """The smallest form of the imported dispute: one close pair with conflict cues, linked as
    contradicting, and no verdict kept for it. Nothing is left to judge, so nothing is asked."""
    older = remember(agent, "Connection pool size", spoke(40, 41, 0.75), content="Keep the pool at 10 connections")
    newer = remember(agent, "Connection pool sizing", spoke(40, 42, 0.75), content="Keep the pool at 50 connections")
    MemoryLink.objects.create(
        organization=cast.org_a, source=newer, target=older, kind=MemoryLink.KIND_CONTRADICTS, weight=0.9
    )
    llm = cycle_llm()

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert llm.calls == []  # the linked pair is settled: not judged again, not synthesised
    assert Memory.objects.filter(pk__in=[older.pk, newer.pk], state=Memory.STATE_ACTIVE).count() == 2
