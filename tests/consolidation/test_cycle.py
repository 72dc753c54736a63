"""The consolidation cycle end to end on the real database (docs/consolidation.md): its acceptance
scenarios and the integration tests of its phases; similarity from pgvector with pinned embeddings, a
scripted LLM."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from consolidation import events, retention
from consolidation.models import ConsolidationRun, ReviewItem
from consolidation.prompts.synthesis import consolidated_confidence
from memories.core.selectors import memory_lineage
from memories.models import Memory, MemoryLink
from memories.moderation.selectors import disputed_list
from memories.moderation.services import contradiction_resolve, memory_unmerge
from memories.search.selectors import SearchQuery, memory_search
from reasoningbank.models import LlmCall
from tests.consolidation.vectors import (
    CONTRADICTION_PREFIX,
    PATTERN_PREFIX,
    SYNTHESIS_PREFIX,
    contradiction_reply,
    cosine,
    cycle_llm,
    disputed_pair,
    prompts_of,
    remember,
    run_cycle,
    source_titles,
    spoke,
    supersession_reply,
    synthesis_reply,
    vec,
)
from tests.fakes import ScriptedLLM

DAY = timedelta(days=1)
# the fields a run reports (docs/consolidation.md#what-a-run-reports), and whether it was a dry run
RESULT_FIELDS = {
    "created_memories",
    "archived_memories",
    "skipped_count",
    "total_processed",
    "duration_seconds",
    "dry_run",
}


@pytest.fixture
def caught():
    """Every consolidation event sent during the test, by signal name."""
    names = ("run_completed", "pattern_extracted", "contradiction_detected")
    seen: dict[str, list[dict[str, Any]]] = {name: [] for name in names}

    def listener(name: str):
        def receive(sender: Any, **kwargs: Any) -> None:
            seen[name].append(kwargs)

        return receive

    for name in names:
        getattr(events, name).connect(listener(name), weak=False, dispatch_uid=f"test-cycle-{name}")
    yield seen
    for name in names:
        getattr(events, name).disconnect(dispatch_uid=f"test-cycle-{name}")


def refreshed(*memories: Memory) -> list[Memory]:
    return [Memory.objects.get(pk=m.pk) for m in memories]


def consolidated() -> list[Memory]:
    return list(Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED))


def long_idle(agent, *, axis: int) -> Memory:
    """Importance 0, created 120 days ago, last used 90 days ago: retention 0.5 × 2^(-90/30) = 0.0625."""
    now = timezone.now()
    return remember(
        agent,
        "Old deploy trick",
        vec({axis: 1.0}),
        importance=0.0,
        created_at=now - 120 * DAY,
        last_used_at=now - 90 * DAY,
    )


def family(agent, hub: int, titles: list[str], similarity: float, **fields: Any) -> list[Memory]:
    """Memories on one hub whose pairwise cosine is exactly ``similarity``."""
    return [remember(agent, title, spoke(hub, hub + n, similarity), **fields) for n, title in enumerate(titles, 1)]


# --- the acceptance scenarios: patterns, contradictions, merges, stale archival ---------------------


def test_ten_episodic_memories_about_testing_before_commits_yield_a_semantic_pattern_memory(cast, agent, caught):
    episodes = [
        remember(
            agent,
            f"Ran the tests before commit {n}",
            vec({100 + n: 1.0}),
            content=f"Ran the full test suite before committing change {n}; it caught a regression.",
            kind=Memory.KIND_EPISODIC,
        )
        for n in range(10)
    ]
    llm = cycle_llm(patterns='["User runs tests before committing"]')

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    (prompt,) = prompts_of(llm, PATTERN_PREFIX)
    assert all(episode.content in prompt for episode in episodes)
    pattern = Memory.objects.get(origin=Memory.ORIGIN_EXTRACTED)
    assert pattern.kind == Memory.KIND_SEMANTIC
    assert pattern.title == pattern.content == "User runs tests before committing"
    assert pattern.state == Memory.STATE_ACTIVE and pattern.project == cast.project_a
    references = MemoryLink.objects.filter(source=pattern, kind=MemoryLink.KIND_REFERENCES)
    assert set(references.values_list("target_id", flat=True)) == {e.id for e in episodes}
    assert all(m.state == Memory.STATE_ACTIVE for m in refreshed(*episodes))
    assert run.counters["patterns"] == 1
    assert pattern.id in run.result["created_memories"]
    (event,) = caught["pattern_extracted"]
    assert event["memory"].id == pattern.id and event["source_count"] == 10 and event["run"].id == run.id


@pytest.mark.parametrize("batch_pairs", [20, 1], ids=["batched judge", "judge per pair"])
def test_postgresql_and_mysql_memories_are_linked_as_contradicting_and_both_stay_active(
    cast, agent, caught, settings, batch_pairs
):
    settings.CONSOLIDATION_JUDGE_BATCH_PAIRS = batch_pairs
    postgres = remember(agent, "Project database", spoke(0, 1, 0.75), content="Project uses PostgreSQL")
    mysql = remember(agent, "Project database engine", spoke(0, 2, 0.75), content="Project uses MySQL server")
    llm = cycle_llm(supersession=supersession_reply(False), contradiction=contradiction_reply(True, 0.9))

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    if batch_pairs == 1:
        (asked,) = prompts_of(llm, CONTRADICTION_PREFIX)
        assert "Statement 1: Project uses PostgreSQL" in asked and "Statement 2: Project uses MySQL server" in asked
        assert len(llm.calls) == 2, "one supersession check, then one contradiction check"
    else:
        ((_, asked),) = llm.calls  # one call: the pair's verdict in the batched prompt
        assert "Content: Project uses PostgreSQL" in asked and "Content: Project uses MySQL server" in asked
        assert "P1: M1 → M2" in asked
    link = MemoryLink.objects.get(kind=MemoryLink.KIND_CONTRADICTS)
    assert (link.source_id, link.target_id) == (mysql.id, postgres.id)
    assert link.weight == pytest.approx(0.9)
    assert link.run_id == run.id and link.resolved_at is None
    assert all(m.state == Memory.STATE_ACTIVE for m in refreshed(postgres, mysql))
    assert not MemoryLink.objects.filter(kind=MemoryLink.KIND_SUPERSEDES).exists()
    assert [d.id for d in disputed_list(agent)] == [link.id]
    assert run.counters["contradictions"] == 1
    (event,) = caught["contradiction_detected"]
    (pair,) = event["contradictions"]
    assert (pair["first"], pair["second"], pair["confidence"]) == (mysql.id, postgres.id, 0.9)


def test_a_contradicting_pair_above_the_cluster_threshold_is_flagged_not_merged_into_one_memory(cast, agent):
    """The judge reads pairs from 0.7 up to the duplicate threshold 0.95 (docs/consolidation.md#the-judge);
    with the default cluster threshold 0.8 a pair at 0.9 is also a cluster."""
    postgres = remember(agent, "Project database", spoke(0, 1, 0.9), content="Project uses PostgreSQL")
    mysql = remember(agent, "Project database engine", spoke(0, 2, 0.9), content="Project uses MySQL server")
    llm = cycle_llm(supersession=supersession_reply(False), contradiction=contradiction_reply(True, 0.9))

    run = run_cycle(agent, cast.project_a, llm, similarity_threshold=0.8)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert all(m.state == Memory.STATE_ACTIVE for m in refreshed(postgres, mysql)), (
        "contradicting memories were synthesized into one memory instead of being flagged for a moderator"
    )
    assert MemoryLink.objects.filter(kind=MemoryLink.KIND_CONTRADICTS).count() == 1
    assert consolidated() == []


def test_near_identical_memories_merge_without_an_llm_call_keeping_the_more_confident_one(cast, agent):
    rest = remember(agent, "API uses REST", spoke(0, 1, 0.97), content="API uses REST and JSON", confidence=0.6)
    restful = remember(agent, "The API is RESTful", spoke(0, 2, 0.97), content="The API is all RESTful", confidence=0.9)
    llm = ScriptedLLM()  # no replies scripted: any LLM call would fail the run

    run = run_cycle(agent, cast.project_a, llm)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert llm.calls == [] and not LlmCall.objects.for_subject(run).exists() and run.llm_calls == 0
    rest, restful = refreshed(rest, restful)
    assert (rest.state, rest.archived_reason, rest.tier) == ("archived", Memory.ARCHIVED_DUPLICATE, "archived")
    assert rest.consolidated_into is None
    assert restful.state == Memory.STATE_ACTIVE
    link = MemoryLink.objects.get(kind=MemoryLink.KIND_DUPLICATES)
    assert (link.source_id, link.target_id) == (restful.id, rest.id)
    assert link.weight == pytest.approx(0.97, abs=1e-4)
    assert run.counters["duplicates_merged"] == 1
    assert run.result["archived_memories"] == [rest.id] and run.result["created_memories"] == []
    assert consolidated() == []


def test_an_unimportant_memory_idle_for_months_falls_below_retention_0_1_and_is_archived_as_stale(cast, agent):
    # importance 0 and 90 idle days: 0.5 × 2^(-90/30) = 0.0625. (60 idle days would give 0.125:
    # with the 30-day half-life and weights 0.5/0.3/0.2 of docs/memory-model.md#tiers-and-retention that
    # is not below 0.1.)
    now = timezone.now()
    stale = long_idle(agent, axis=1)
    fresh = remember(agent, "Current deploy routine", vec({2: 1.0}), importance=0.0)

    run = run_cycle(agent, cast.project_a, ScriptedLLM())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    stale, fresh = refreshed(stale, fresh)
    expected = retention.compute_retention_score(
        created_at=stale.created_at, last_used_at=stale.last_used_at, activation_count=0, importance=0.0, now=now
    )
    assert stale.retention == pytest.approx(expected.overall, abs=1e-3)
    assert stale.retention < 0.1
    assert (stale.state, stale.archived_reason, stale.tier) == ("archived", Memory.ARCHIVED_STALE, "archived")
    assert fresh.state == Memory.STATE_ACTIVE
    assert run.result["archived_memories"] == [stale.id]


def test_an_episodic_memory_nobody_has_used_for_a_year_is_archived_as_stale(cast, agent):
    """Low-salience, old memories are archived (docs/memory-model.md#tiers-and-retention), for a memory at its
    kind's default importance: episodic 0.5, a year idle, never retrieved."""
    old = remember(
        agent,
        "Deployed release 1.2 on a Friday",
        vec({1: 1.0}),
        kind=Memory.KIND_EPISODIC,
        created_at=timezone.now() - 365 * DAY,
    )

    run = run_cycle(agent, cast.project_a, ScriptedLLM())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    old.refresh_from_db()
    assert (old.state, old.archived_reason) == ("archived", Memory.ARCHIVED_STALE), (
        f"retention {old.retention:.4f} never drops below 0.1: the importance term alone is 0.2 × 0.5"
    )


# --- integration tests of the cycle --------------------------------------------------------------


def test_a_pair_at_exactly_the_threshold_clusters_and_a_pair_just_below_it_stays_separate(cast, agent):
    at = family(agent, 0, ["Cache invalidation on deploy", "Invalidate caches after release"], 0.80)
    below = family(agent, 10, ["Rotate logs daily", "Log rotation schedule"], 0.79)
    llm = cycle_llm()

    run = run_cycle(agent, cast.project_a, llm, similarity_threshold=0.8)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    (merged,) = consolidated()
    assert sorted(merged.consolidated_sources.values_list("id", flat=True)) == sorted(m.id for m in at)
    (prompt,) = prompts_of(llm, SYNTHESIS_PREFIX)
    assert sorted(source_titles(prompt)) == sorted(m.title for m in at)
    assert all(m.state == "archived" and m.archived_reason == "consolidated" for m in refreshed(*at))
    assert all(m.state == Memory.STATE_ACTIVE and m.consolidated_into is None for m in refreshed(*below))


PRESERVED_FIELDS = (
    "title", "description", "content", "outcome", "tags", "kind", "confidence", "alpha", "beta", "usage_count",
    "last_used_at", "created_at", "origin", "importance", "project_id", "organization_id", "created_by_token_id",
)  # fmt: skip


def snapshot(memory: Memory) -> dict[str, Any]:
    return {name: getattr(memory, name) for name in PRESERVED_FIELDS} | {"embedding": list(memory.embedding)}


def test_sources_keep_every_original_field_and_the_consolidated_memory_holds_the_synthesis(cast, agent):
    sources = family(
        agent,
        0,
        ["Use context.WithTimeout for database calls", "Always set DB query timeouts", "Database timeout practices"],
        0.87,
        tags=["go", "database"],
    )
    before = {m.id: snapshot(m) for m in sources}
    reply = synthesis_reply(
        "Database Timeout Management in Go",
        "Always use context.WithTimeout for database operations.\n1) Set a timeout. 2) Handle DeadlineExceeded.",
        tags="go, database, timeout",
        attribution="Synthesized from 3 source memories about database timeout handling",
    )

    run = run_cycle(agent, cast.project_a, cycle_llm(synthesis=reply))

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    for source in refreshed(*sources):
        assert snapshot(source) == before[source.id]
        assert (source.state, source.archived_reason) == ("archived", Memory.ARCHIVED_CONSOLIDATED)
    (merged,) = consolidated()
    assert merged.title == "Database Timeout Management in Go"
    assert merged.content == (
        "Always use context.WithTimeout for database operations.\n1) Set a timeout. 2) Handle DeadlineExceeded."
    )
    assert merged.description == "Synthesized from 3 source memories about database timeout handling"
    assert merged.tags == ["go", "database", "timeout"]
    assert merged.outcome == "success" and merged.state == Memory.STATE_ACTIVE
    assert merged.project == cast.project_a and merged.consolidated_into is None
    assert all(merged.content != s.content for s in sources)


def test_the_consolidated_confidence_is_the_usage_weighted_average_plus_the_consensus_bonus(cast, agent):
    pairs = [(0.75, 10), (0.82, 8), (0.70, 15)]
    titles = ["Use context.WithTimeout for database calls", "Always set DB query timeouts", "DB timeout practices"]
    sources = [
        remember(agent, title, spoke(0, n, 0.87), confidence=c, usage_count=u)
        for n, (title, (c, u)) in enumerate(zip(titles, pairs, strict=True), 1)
    ]

    run = run_cycle(agent, cast.project_a, cycle_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    (merged,) = consolidated()
    expected = consolidated_confidence(pairs)
    assert expected.weighted == pytest.approx(0.745, abs=5e-4)  # docs/confidence.md#consolidated-memories
    assert expected.bonus > 0
    assert merged.confidence == pytest.approx(expected.final, abs=1e-6)
    assert merged.usage_count == 33
    assert sorted(merged.consolidated_sources.values_list("id", flat=True)) == sorted(s.id for s in sources)


def test_sources_point_to_the_consolidated_memory_and_it_links_back_to_each_source(cast, agent):
    sources = family(agent, 0, ["Retry with backoff", "Backoff on retries", "Jittered retries"], 0.87)

    run = run_cycle(agent, cast.project_a, cycle_llm())

    (merged,) = consolidated()
    source_ids = sorted(s.id for s in sources)
    assert all(s.consolidated_into_id == merged.id for s in refreshed(*sources))
    links = MemoryLink.objects.filter(source=merged, kind=MemoryLink.KIND_CONSOLIDATES)
    assert sorted(links.values_list("target_id", flat=True)) == source_ids
    assert all(link.run_id == run.id for link in links)
    lineage = memory_lineage(agent, merged)
    assert lineage["sources"] == source_ids
    assert sorted(o["memory"]["id"] for o in lineage["outgoing"] if o["kind"] == "consolidates") == source_ids
    assert all(o["memory"]["state"] == "archived" for o in lineage["outgoing"])
    for source in refreshed(*sources):
        back = memory_lineage(agent, source)
        assert back["consolidated_into"] == merged.id
        assert [(i["kind"], i["memory"]["id"]) for i in back["incoming"]] == [("consolidates", merged.id)]


def memory_states() -> dict[str, tuple[Any, ...]]:
    return {
        m.id: (m.state, m.archived_reason, m.tier, m.retention, m.kind, m.consolidated_into_id, m.confidence)
        for m in Memory.objects.all()
    }


def test_a_dry_run_changes_nothing_and_previews_the_clusters_duplicates_and_stale_memories(cast, agent):
    now = timezone.now()
    cluster = family(agent, 0, ["Pin dependency versions", "Lock dependency versions"], 0.87)
    keep = remember(agent, "API uses REST", spoke(10, 11, 0.97), confidence=0.9)
    duplicate = remember(agent, "The API is RESTful", spoke(10, 12, 0.97), confidence=0.6)
    stale = long_idle(agent, axis=20)
    aging = remember(agent, "Month-old lesson", vec({21: 1.0}), created_at=now - 40 * DAY)  # hot → warm
    scratch = remember(agent, "Scratch note", vec({22: 1.0}), kind="working", created_at=now - timedelta(minutes=20))
    before = memory_states()

    llm = cycle_llm()
    run = run_cycle(agent, cast.project_a, llm, dry_run=True)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert run.dry_run is True
    assert memory_states() == before
    assert not MemoryLink.objects.exists() and not ReviewItem.objects.exists()
    # the judge decides what may merge, so a dry run asks it too; it synthesises nothing
    assert prompts_of(llm, SYNTHESIS_PREFIX) == []
    assert set(LlmCall.objects.values_list("purpose", flat=True)) == {"judge"}  # batched: one verdict a pair
    (previewed,) = run.preview["clusters"]
    assert sorted(previewed["members"]) == sorted(m.id for m in cluster)
    assert sorted(previewed["titles"]) == sorted(m.title for m in cluster)
    assert previewed["average_similarity"] == pytest.approx(0.87, abs=1e-4)
    (dup,) = run.preview["duplicates"]
    assert (dup["keep"], dup["archive"]) == (keep.id, [duplicate.id])
    assert Memory.objects.get(pk=aging.pk).tier == "hot" and Memory.objects.get(pk=scratch.pk).kind == "working"
    assert run.preview.get("stale") == [stale.id], "the preview must list what a real run would archive as stale"


def test_max_clusters_1_processes_the_biggest_cluster_and_counts_the_rest_as_skipped(cast, agent):
    big = family(agent, 0, ["Timeout rule A", "Timeout rule B", "Timeout rule C"], 0.87)
    small = family(agent, 20, ["Retry rule A", "Retry rule B"], 0.87)
    llm = cycle_llm()

    run = run_cycle(agent, cast.project_a, llm, max_clusters=1)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert len(prompts_of(llm, SYNTHESIS_PREFIX)) == 1
    (merged,) = consolidated()
    assert sorted(merged.consolidated_sources.values_list("id", flat=True)) == sorted(m.id for m in big)
    assert all(m.state == Memory.STATE_ACTIVE for m in refreshed(*small))
    assert run.counters["clusters"] == 2
    assert run.result["skipped_count"] == 2
    assert run.result["total_processed"] == 5


def test_search_hides_archived_sources_and_boosts_the_consolidated_memory_by_1_2(cast, agent, settings):
    # the two memories share one vector on purpose: rank by the vector leg alone, and do not fold them
    settings.SEARCH_LEXICAL_WEIGHT = 0.0
    settings.SEARCH_COLLAPSE_DUPLICATES = False
    sources = family(
        agent,
        0,
        ["Database timeouts in Go", "Set database query timeouts", "Timeouts for database calls"],
        0.87,
        content="Wrap database calls with a timeout context.",
    )
    run_cycle(agent, cast.project_a, cycle_llm())
    (merged,) = consolidated()
    hub = vec({0: 1.0})
    Memory.objects.filter(pk=merged.pk).update(embedding=hub)
    merged.refresh_from_db()
    plain = remember(agent, "A plain memory on the same topic", hub, confidence=merged.confidence)

    result = memory_search(
        agent, SearchQuery(query="database timeout context", project="web-app", limit=10), query_vector=hub
    )

    found = [hit.memory.id for hit in result.hits]
    assert not {s.id for s in sources} & set(found)
    assert found[:2] == [merged.id, plain.id]
    top, second = result.hits[:2]
    assert top.breakdown.consolidated_boost == 1.2 and second.breakdown.consolidated_boost == 1.0
    assert top.breakdown.score == pytest.approx(1.2 * second.breakdown.score, rel=1e-6)


def test_the_run_result_carries_the_fields_memory_consolidate_reports(cast, agent):
    cluster = family(agent, 0, ["Timeout rule A", "Timeout rule B", "Timeout rule C"], 0.87)
    keep = remember(agent, "API uses REST", spoke(10, 11, 0.97), confidence=0.9)
    duplicate = remember(agent, "The API is RESTful", spoke(10, 12, 0.97), confidence=0.6)
    remember(agent, "An unrelated lesson", vec({30: 1.0}))

    run = run_cycle(agent, cast.project_a, cycle_llm())

    result = ConsolidationRun.objects.get(pk=run.pk).result
    assert set(result) == RESULT_FIELDS
    (merged,) = consolidated()
    assert result["created_memories"] == [merged.id]
    assert sorted(result["archived_memories"]) == sorted([duplicate.id, *(m.id for m in cluster)])
    assert result["skipped_count"] == 2  # the kept duplicate and the unrelated lesson
    assert result["total_processed"] == 6
    assert isinstance(result["duration_seconds"], float) and result["duration_seconds"] >= 0
    assert Memory.objects.get(pk=keep.pk).state == Memory.STATE_ACTIVE


def test_the_run_writes_retention_scores_and_tier_transitions(cast, agent):
    now = timezone.now()
    aging = remember(agent, "Month-old lesson", vec({1: 1.0}), created_at=now - 40 * DAY)
    fresh = remember(agent, "Fresh lesson", vec({2: 1.0}))
    assert aging.tier == fresh.tier == "hot"

    run = run_cycle(agent, cast.project_a, ScriptedLLM())

    aging, fresh = refreshed(aging, fresh)
    expected = retention.compute_retention_score(
        created_at=aging.created_at, last_used_at=None, activation_count=0, importance=aging.importance, now=now
    )
    assert aging.retention == pytest.approx(expected.overall, abs=1e-3)
    assert aging.tier == "warm" == retention.tier_for(expected.overall, archived=False)
    assert fresh.tier == "hot" and fresh.retention > 0.6
    assert run.counters["tier_transitions"] == 1
    # the change is in the memory's history (a memory.tier audit row), and only the change
    (event,) = AuditEvent.objects.filter(verb="memory.tier")
    assert (event.target_id, event.data) == (aging.id, {"from": "hot", "to": "warm", "run": run.id})
    assert event.organization_id == cast.org_a.id


def test_working_memories_older_than_15_minutes_are_promoted_to_semantic(cast, agent):
    now = timezone.now()
    old = remember(
        agent,
        "Scratch: the flaky test is test_upload",
        vec({1: 1.0}),
        kind="working",
        created_at=now - timedelta(minutes=20),
        expires_at=now + timedelta(minutes=10),
    )
    recent = remember(
        agent, "Scratch: checking the migration", vec({2: 1.0}), kind="working", created_at=now - timedelta(minutes=5)
    )

    run = run_cycle(agent, cast.project_a, ScriptedLLM())

    old, recent = refreshed(old, recent)
    assert (old.kind, old.expires_at, old.state) == (Memory.KIND_SEMANTIC, None, Memory.STATE_ACTIVE)
    assert old.importance == retention.importance_for_kind(Memory.KIND_SEMANTIC)
    assert recent.kind == Memory.KIND_WORKING and recent.expires_at is not None
    assert run.counters["promoted"] == 1
    # provenance and history, as for the rest of the promotion ladder
    assert (old.promoted_from, old.promotion_reason) == ("working", "working memory older than 15 min (20 min)")
    (event,) = AuditEvent.objects.filter(verb="memory.promote")
    assert (event.target_id, event.data["from"], event.data["to"]) == (old.id, "working", "semantic")


def test_a_working_memory_past_its_expiry_is_promoted_by_the_run_not_also_archived_as_stale(cast, agent):
    now = timezone.now()
    expired = remember(
        agent,
        "Scratch: the cache key includes the locale",
        vec({3: 1.0}),
        kind="working",
        created_at=now - timedelta(minutes=40),
        expires_at=now - timedelta(minutes=10),
    )

    preview = run_cycle(agent, cast.project_a, ScriptedLLM(), dry_run=True)
    run = run_cycle(agent, cast.project_a, ScriptedLLM())

    expired.refresh_from_db()
    assert (expired.kind, expired.state) == (Memory.KIND_SEMANTIC, Memory.STATE_ACTIVE)
    assert run.counters["promoted"] == 1 and run.counters["archived"] == 0
    assert preview.counters["promoted"] == 1 and preview.counters["archived"] == 0


def test_running_again_on_the_same_data_creates_and_archives_nothing_more(cast, agent):
    family(agent, 0, ["Timeout rule A", "Timeout rule B", "Timeout rule C"], 0.87)
    remember(agent, "API uses REST", spoke(10, 11, 0.97), confidence=0.9)
    remember(agent, "The API is RESTful", spoke(10, 12, 0.97), confidence=0.6)
    family(agent, 20, ["Deploy on Tuesdays", "Deploy after standup"], 0.75)  # judged once, not contradicting
    long_idle(agent, axis=30)
    first = run_cycle(agent, cast.project_a, cycle_llm())
    assert first.status == ConsolidationRun.STATUS_COMPLETED, first.errors
    assert len(first.result["created_memories"]) == 1 and len(first.result["archived_memories"]) == 5
    states, links, count = memory_states(), MemoryLink.objects.count(), Memory.objects.count()
    llm = ScriptedLLM()  # nothing is left to ask an LLM about

    second = run_cycle(agent, cast.project_a, llm)

    assert second.status == ConsolidationRun.STATUS_COMPLETED, second.errors
    assert second.result["created_memories"] == [] and second.result["archived_memories"] == []
    assert Memory.objects.count() == count and MemoryLink.objects.count() == links
    assert {mid: s[:3] for mid, s in memory_states().items()} == {mid: s[:3] for mid, s in states.items()}
    assert llm.calls == []


def test_unmerging_restores_the_sources_and_archives_the_consolidated_memory(cast, agent):
    sources = family(agent, 0, ["Retry with backoff", "Backoff on retries", "Jittered retries"], 0.87)
    run_cycle(agent, cast.project_a, cycle_llm())
    (merged,) = consolidated()

    restored = memory_unmerge(principal=agent, memory=merged)

    assert sorted(m.id for m in restored) == sorted(s.id for s in sources)
    for source in refreshed(*sources):
        assert (source.state, source.archived_reason, source.consolidated_into) == ("active", "", None)
        assert source.archived_at is None
    merged.refresh_from_db()
    assert merged.state == Memory.STATE_ARCHIVED and merged.archived_reason == Memory.ARCHIVED_MANUAL
    assert MemoryLink.objects.filter(source=merged, kind=MemoryLink.KIND_CONSOLIDATES).count() == 3  # history kept


def test_resolving_a_dispute_with_keep_first_archives_the_second_as_superseded(cast, agent):
    first, second, link = disputed_pair(agent)

    resolved = contradiction_resolve(principal=agent, link=link, resolution="keep_first")

    assert resolved.resolved_at is not None
    first, second = refreshed(first, second)
    assert first.state == Memory.STATE_ACTIVE
    assert (second.state, second.archived_reason) == ("archived", Memory.ARCHIVED_SUPERSEDED)
    assert MemoryLink.objects.filter(source=first, target=second, kind=MemoryLink.KIND_SUPERSEDES).exists()
    assert list(disputed_list(agent)) == []


def test_resolving_a_dispute_with_keep_both_only_marks_it_resolved(cast, agent):
    first, second, link = disputed_pair(agent)

    contradiction_resolve(principal=agent, link=link, resolution="keep_both")

    assert all(m.state == Memory.STATE_ACTIVE for m in refreshed(first, second))
    assert MemoryLink.objects.get(pk=link.pk).resolved_at is not None
    assert not MemoryLink.objects.filter(kind=MemoryLink.KIND_SUPERSEDES).exists()
    assert list(disputed_list(agent)) == [] and list(disputed_list(agent, include_resolved=True)) == [link]


def test_the_spoke_vectors_have_the_cosines_the_tests_rely_on():
    assert cosine(spoke(0, 1, 0.8), spoke(0, 2, 0.8)) == pytest.approx(0.8, abs=1e-12)
    assert cosine(spoke(0, 1, 0.87), spoke(5, 6, 0.87)) == 0.0
    assert cosine(vec({0: 1.0}), spoke(0, 1, 0.81)) == pytest.approx(0.9, abs=1e-12)
