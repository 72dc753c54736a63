"""Provenance of what consolidation makes from other memories (docs/security/memory-poisoning.md#provenance):
a synthesis, a pattern, a memory of the promotion ladder and an institutional promotion name the run and
list their sources with how each came to be and who wrote it; each is trusted only when every source is."""

from __future__ import annotations

from typing import Any

import pytest

from consolidation.models import ConsolidationRun, ReviewItem
from consolidation.promotion.services import promotions_propose
from memories.models import Memory
from tests.consolidation.promotion_setup import lesson, teams_setup
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke, synthesis_reply, vec

TITLES = ["Use context.WithTimeout for database calls", "Always set DB query timeouts", "Database timeout practices"]


def family(principal: Any, titles: list[str], *, first_axis: int = 1) -> list[Memory]:
    """Memories on one hub, pairwise cosine 0.87: one cluster (each on its own tilt axis)."""
    return [remember(principal, title, spoke(0, n, 0.87)) for n, title in enumerate(titles, first_axis)]


def merged_memory() -> Memory:
    return Memory.objects.get(origin=Memory.ORIGIN_CONSOLIDATED, state=Memory.STATE_ACTIVE)


def test_a_synthesis_names_its_run_and_each_source_with_how_and_by_whom(cast, agent):
    alice = cast.principal(cast.alice)
    sources = family(agent, TITLES[:2]) + family(alice, TITLES[2:], first_axis=3)

    run = run_cycle(agent, cast.project_a, cycle_llm(synthesis=synthesis_reply("Database timeouts in Go")))

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    merged = merged_memory()
    assert merged.provenance["how"] == "synthesised" and merged.provenance["run"] == run.id
    assert merged.provenance["by"] == {"kind": "system"} and merged.provenance["client"] == {"transport": "internal"}
    assert sorted(merged.provenance["sources"], key=lambda s: s["id"]) == sorted(
        [{"id": m.id, "how": "recorded", "by": "token test"} for m in sources[:2]]
        + [{"id": sources[2].id, "how": "recorded", "by": "alice@acme.test"}],
        key=lambda s: s["id"],
    )
    assert merged.trust == "trusted"


def test_a_synthesis_with_one_source_waiting_for_review_waits_too(cast, agent):
    sources = family(agent, TITLES)
    Memory.objects.filter(pk=sources[1].pk).update(trust=Memory.TRUST_PENDING)

    run_cycle(agent, cast.project_a, cycle_llm(synthesis=synthesis_reply("Database timeouts in Go")))

    assert merged_memory().trust == "pending"


def test_a_pattern_lists_the_episodes_it_was_drawn_from(cast, agent):
    episodes = [
        remember(agent, f"Ran the tests before commit {n}", vec({100 + n: 1.0}), kind=Memory.KIND_EPISODIC,
                 content=f"Ran the full test suite before committing change {n}; it caught a regression.")
        for n in range(10)
    ]  # fmt: skip
    llm = cycle_llm(patterns='["User runs tests before committing"]')

    run = run_cycle(agent, cast.project_a, llm)

    pattern = Memory.objects.get(origin=Memory.ORIGIN_EXTRACTED)
    assert pattern.provenance["how"] == "pattern" and pattern.provenance["run"] == run.id
    assert {s["id"] for s in pattern.provenance["sources"]} == {e.id for e in episodes}
    assert pattern.trust == "trusted"
    assert pattern.provenance.get("sources_total") is None  # ten: all listed


@pytest.fixture
def acme(cast: Any) -> Any:
    return teams_setup(cast)


def test_an_institutional_promotion_lists_the_project_memories_it_was_promoted_from(acme):
    alice = acme.principal(acme.alice)
    web = lesson(alice, "web-app", 1, usage_count=4)
    api = lesson(alice, "api", 2, confidence=0.85)
    Memory.objects.filter(pk=api.pk).update(trust=Memory.TRUST_PENDING)

    promotions_propose(principal=alice)

    proposal = ReviewItem.objects.get(kind=ReviewItem.KIND_PROMOTION).first
    assert proposal.provenance["how"] == "promoted" and "run" not in proposal.provenance
    assert {s["id"]: s["by"] for s in proposal.provenance["sources"]} == {
        web.id: "alice@acme.test",
        api.id: "alice@acme.test",
    }
    assert proposal.trust == "pending"  # one of its sources waits for review
