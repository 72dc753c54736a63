"""The promotion ladder (docs/consolidation.md#the-promotion-ladder) as a phase of the consolidation
cycle, on the real database: promotions keep their provenance, link and history; a dry run writes
nothing; other tenants are untouched; the cycle's promotions commit or roll back as one, and a lost
race is retried."""

from __future__ import annotations

import html
import logging
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import OperationalError
from django.utils import timezone

from accounts.models import AuditEvent
from consolidation import ladder
from consolidation.contracts import ConsolidateOutput
from consolidation.models import ConsolidationRun
from consolidation.phases import ladder as ladder_phase
from consolidation.retention import importance_for_kind
from memories.dashboard.selectors import memory_audit_trail
from memories.models import Memory, MemoryLink, MemorySignal, MemorySignalAggregate
from tests.consolidation.vectors import remember, run_cycle, spoke, vec
from tests.factories import ProjectFactory
from tests.fakes import ScriptedLLM

HOUR, DAY = timedelta(hours=1), timedelta(days=1)
# three ways to say one fact, with no conflict cue between them (consolidation.cues)
STAGING = ["Staging runs in eu-west", "Staging runs in eu-west region", "Staging always runs in eu-west"]


def no_llm() -> ScriptedLLM:
    """No LLM configured: similar memories wait for synthesis, so the ladder sees them (and nothing
    else may call a model)."""
    return ScriptedLLM(provider="none")


def confident_fact(principal: Any, title: str, axis: int, *, age: timedelta = 3 * HOUR, **fields: Any) -> Memory:
    now = timezone.now()
    fields = {"confidence": 0.9, **fields}
    return remember(principal, title, vec({axis: 1.0}), kind="semantic", created_at=now - age, **fields)


def similar(principal: Any, hub: int, titles: list[str], kind: str, *, ages: list[timedelta], **fields: Any):
    """Memories of one kind on one hub (pairwise cosine 0.9, above the tests' 0.85), of the given ages."""
    now = timezone.now()
    return [
        remember(principal, title, spoke(hub, hub + n, 0.9), kind=kind, created_at=now - age, **fields)
        for n, (title, age) in enumerate(zip(titles, ages, strict=True), 1)
    ]


def promotions() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(verb="memory.promote").order_by("id"))


def states() -> dict[str, tuple[Any, ...]]:
    return {
        m.id: (m.kind, m.state, m.importance, m.promoted_from, m.promoted_at, m.promotion_reason)
        for m in Memory.objects.all()
    }


# --- semantic → episodic -----------------------------------------------------------------------------


def test_the_rest_api_reports_a_memorys_promotion_provenance(cast, agent, token_client):
    fact = confident_fact(agent, "The billing API paginates with cursors", 1)
    run_cycle(agent, cast.project_a, no_llm())

    body = token_client(cast.org_a).get(f"/api/v1/memories/{fact.id}").json()

    assert (body["kind"], body["promoted_from"]) == ("episodic", "semantic")
    assert body["promotion_reason"] == "confidence 0.9 > 0.8 and age 3 h > 2 h" and body["promoted_at"]


def test_a_confident_fact_older_than_two_hours_becomes_episodic_in_place_with_its_provenance(cast, agent):
    fact = confident_fact(agent, "The billing API paginates with cursors", 1)
    young = confident_fact(agent, "Deploys go through the release train", 2, age=HOUR)
    unsure = confident_fact(agent, "The cache is warmed at startup", 3, confidence=0.8)

    run = run_cycle(agent, cast.project_a, no_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    fact.refresh_from_db()
    assert (fact.kind, fact.state, fact.promoted_from) == (Memory.KIND_EPISODIC, Memory.STATE_ACTIVE, "semantic")
    assert fact.importance == importance_for_kind(Memory.KIND_EPISODIC)
    assert fact.promoted_at == run.started_at or abs(fact.promoted_at - run.started_at) < timedelta(seconds=5)
    assert fact.promotion_reason == "confidence 0.9 > 0.8 and age 3 h > 2 h"
    assert Memory.objects.get(pk=young.pk).kind == Memory.objects.get(pk=unsure.pk).kind == Memory.KIND_SEMANTIC
    assert run.counters["promoted_episodic"] == 1 and run.counters["promoted_procedural"] == 0
    assert ConsolidateOutput.of(run).counters["promoted_episodic"] == 1  # the MCP and REST result
    (event,) = promotions()
    assert (event.target_type, event.target_id, event.organization_id) == ("memory", fact.id, cast.org_a.id)
    assert event.data == {
        "from": "semantic",
        "to": "episodic",
        "criterion": "confidence_and_age",
        "reason": fact.promotion_reason,
        "title": fact.title,
        "run": run.id,
    }


def test_the_memory_page_shows_the_promotion_in_its_facts_and_its_history(client, cast, agent):
    fact = confident_fact(agent, "The billing API paginates with cursors", 1)
    run_cycle(agent, cast.project_a, no_llm())

    client.force_login(cast.alice)
    body = html.unescape(client.get(f"/memories/{fact.id}/").content.decode())

    assert "<dt>Promoted</dt><dd>from semantic" in body
    assert "memory.promote" in body and "semantic → episodic" in body
    assert "confidence 0.9 > 0.8 and age 3 h > 2 h" in body


def test_three_similar_facts_within_a_week_make_a_new_episodic_memory_linked_to_each(cast, agent):
    facts = similar(
        agent,
        10,
        STAGING,
        "semantic",
        ages=[6 * DAY, 2 * DAY, HOUR],
        confidence=0.7,
        tags=["staging"],
    )

    run = run_cycle(agent, cast.project_a, no_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    (episode,) = Memory.objects.filter(promoted_from="semantic", kind=Memory.KIND_EPISODIC)
    assert episode.origin == Memory.ORIGIN_EXTRACTED and episode.project == cast.project_a
    assert episode.promotion_reason == (
        "3 similar semantic facts within 7 days (average similarity 0.900, threshold 0.85)"
    )
    assert episode.confidence == pytest.approx(0.7) and "staging" in episode.tags
    assert all(f.title in episode.content for f in facts)
    links = MemoryLink.objects.filter(source=episode, kind=MemoryLink.KIND_REFERENCES)
    assert set(links.values_list("target_id", flat=True)) == {f.id for f in facts}
    assert {link.run_id for link in links} == {run.id}
    # the facts stay facts (a pattern's sources are flagged, never changed; the link is that flag)
    assert {(m.kind, m.state) for m in Memory.objects.filter(pk__in=[f.id for f in facts])} == {("semantic", "active")}
    assert run.result["created_memories"] == [episode.id] and run.counters["promoted_episodic"] == 1
    (event,) = promotions()
    assert event.target_id == episode.id and event.data["sources"] == [f.id for f in facts]
    # each source's history shows the promotion it took part in
    assert event in memory_audit_trail(agent, facts[0])

    again = run_cycle(agent, cast.project_a, no_llm())

    assert again.result["created_memories"] == [] and again.counters["promoted_episodic"] == 0
    assert len(promotions()) == 1


def test_a_fact_eight_days_old_does_not_complete_a_pattern(cast, agent):
    similar(
        agent,
        10,
        STAGING,
        "semantic",
        ages=[8 * DAY, 2 * DAY, HOUR],
        confidence=0.7,
    )

    run = run_cycle(agent, cast.project_a, no_llm())

    assert run.counters["promoted_episodic"] == 0 and not Memory.objects.exclude(promoted_from="").exists()


# --- episodic → procedural --------------------------------------------------------------------------------


def test_recurring_successful_episodes_make_a_new_procedural_memory_from_the_latest(cast, agent):
    episodes = similar(
        agent,
        20,
        [
            "Rolled back the deploy after alerts",
            "Rolled back a deploy on alert",
            "Alerts fired, rolled the deploy back",
        ],
        "episodic",
        ages=[20 * DAY, 5 * DAY, DAY],
    )
    # the middle one was recorded as a failure, but two tasks that applied it later succeeded (one
    # report rolled up, one still in the event log): its success is (0 + 2) / 3
    Memory.objects.filter(pk=episodes[1].pk).update(outcome=Memory.OUTCOME_FAILURE)
    MemorySignalAggregate.objects.create(memory=episodes[1], organization=cast.org_a, outcome_pos=1)
    MemorySignal.objects.create(
        organization=cast.org_a, memory=episodes[1], project=cast.project_a, type="outcome", positive=True
    )

    run = run_cycle(agent, cast.project_a, no_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    (procedure,) = Memory.objects.filter(promoted_from="episodic")
    assert procedure.kind == Memory.KIND_PROCEDURAL and procedure.outcome == Memory.OUTCOME_SUCCESS
    assert procedure.promotion_reason == (
        "observed 3 times within 30 days: 3 successes > 0 failures, average success 0.889 > 0.6"
    )
    assert procedure.content.startswith(episodes[-1].content)  # what was done last: the latest event's text
    assert procedure.confidence == pytest.approx(8 / 9, abs=1e-6)
    assert set(
        MemoryLink.objects.filter(source=procedure, kind=MemoryLink.KIND_REFERENCES).values_list("target_id", flat=True)
    ) == {e.id for e in episodes}
    assert run.counters["promoted_procedural"] == 1 and procedure.id in run.result["created_memories"]
    (event,) = promotions()
    assert (event.data["from"], event.data["to"], event.data["criterion"]) == ("episodic", "procedural", "pattern")


def test_recurring_episodes_that_mostly_failed_stay_episodes(cast, agent):
    episodes = similar(
        agent, 20, ["Deploy failed on Friday", "Deploy failed again", "Friday deploy broke"], "episodic",
        ages=[3 * DAY, 2 * DAY, DAY],
    )  # fmt: skip
    Memory.objects.filter(pk__in=[e.pk for e in episodes[:2]]).update(outcome=Memory.OUTCOME_FAILURE)

    run = run_cycle(agent, cast.project_a, no_llm())

    assert run.counters["promoted_procedural"] == 0 and not Memory.objects.filter(promoted_from="episodic").exists()


def test_a_fact_promoted_in_place_counts_as_an_event_in_the_same_cycle(cast, agent):
    """Episodic → procedural runs after semantic → episodic, in the same transaction."""
    now = timezone.now()
    fact = remember(
        agent, "Rolled back the deploy after alerts", spoke(20, 21, 0.9), kind="semantic", confidence=0.9,
        created_at=now - 3 * HOUR,
    )  # fmt: skip
    episodes = [
        remember(agent, title, spoke(20, 20 + n, 0.9), kind="episodic", created_at=now - n * DAY)
        for n, title in ((2, "Rolled back a deploy on alert"), (3, "Alerts fired, rolled the deploy back"))
    ]

    run = run_cycle(agent, cast.project_a, no_llm())

    (procedure,) = Memory.objects.filter(promoted_from="episodic")
    targets = set(MemoryLink.objects.filter(source=procedure).values_list("target_id", flat=True))
    assert targets == {fact.id, *(e.id for e in episodes)}
    assert Memory.objects.get(pk=fact.pk).kind == Memory.KIND_EPISODIC
    assert (run.counters["promoted_episodic"], run.counters["promoted_procedural"]) == (1, 1)


# --- dry run, tenancy ---------------------------------------------------------------------------------------


def test_a_dry_run_previews_every_promotion_and_writes_nothing(client, cast, agent):
    fact = confident_fact(agent, "The billing API paginates with cursors", 1)
    facts = similar(
        agent, 10, STAGING,
        "semantic", ages=[6 * DAY, 2 * DAY, HOUR], confidence=0.7,
    )  # fmt: skip
    before = (states(), MemoryLink.objects.count(), AuditEvent.objects.filter(verb="memory.promote").count())

    run = run_cycle(agent, cast.project_a, no_llm(), dry_run=True)

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert (states(), MemoryLink.objects.count(), len(promotions())) == before
    assert run.counters["promoted_episodic"] == 2 and run.result["created_memories"] == []
    in_place, pattern = run.preview["ladder"]
    assert in_place == {
        "from": "semantic",
        "to": "episodic",
        "memory": fact.id,
        "reason": "confidence 0.9 > 0.8 and age 3 h > 2 h",
    }
    assert (pattern["from"], pattern["to"], pattern["sources"]) == ("semantic", "episodic", [f.id for f in facts])

    client.force_login(cast.alice)
    body = html.unescape(client.get(f"/consolidation/runs/{run.id}/").content.decode())
    assert "Would promote to episodic" in body and "Promotions — the promotion ladder" in body
    assert "semantic → episodic" in body and fact.id in body and facts[0].id in body


def test_the_ladder_promotes_only_the_runs_project(cast, agent):
    alice = cast.principal(cast.alice)
    ProjectFactory(organization=cast.org_a, slug="api")
    charlie = cast.principal(cast.charlie)
    here = confident_fact(agent, "The billing API paginates with cursors", 1)
    other_project = confident_fact(alice, "The API paginates with offsets", 2, project="api")
    other_org = confident_fact(charlie, "Invoices are paginated by month", 3, project="billing")
    for principal, project, hub in ((alice, "api", 30), (charlie, "billing", 40)):
        for n, title in enumerate(["Queue workers scale on depth", "Workers scale by queue depth", "Scale on depth"]):
            remember(
                principal, title, spoke(hub, hub + n + 1, 0.9), kind="semantic", project=project,
                created_at=timezone.now() - DAY,
            )  # fmt: skip

    run = run_cycle(agent, cast.project_a, no_llm())

    assert run.counters["promoted_episodic"] == 1
    assert Memory.objects.get(pk=here.pk).kind == Memory.KIND_EPISODIC
    for memory in (other_project, other_org):
        memory.refresh_from_db()
        assert (memory.kind, memory.promoted_from) == (Memory.KIND_SEMANTIC, "")
    assert not Memory.objects.exclude(project=cast.project_a).exclude(promoted_from="").exists()
    assert not AuditEvent.objects.filter(verb="memory.promote").exclude(organization=cast.org_a).exists()


# --- one transaction, retried on a lost race, and logged ----------------------------------------------------


@pytest.fixture
def ladder_work(agent):
    """Two facts promoted in place and a pattern of three facts: four promotions in one cycle."""
    first = confident_fact(agent, "The billing API paginates with cursors", 1)
    second = confident_fact(agent, "Feature flags live in LaunchDarkly", 2)
    facts = similar(
        agent, 10, STAGING,
        "semantic", ages=[6 * DAY, 2 * DAY, HOUR], confidence=0.7,
    )  # fmt: skip
    return first, second, facts


def deadlock() -> OperationalError:
    """What Django raises when PostgreSQL aborts the transaction to break a deadlock."""
    error = OperationalError("deadlock detected")
    error.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")
    return error


def test_the_cycles_promotions_roll_back_as_one_when_a_write_fails(cast, agent, ladder_work, monkeypatch, caplog):
    first, second, facts = ladder_work
    before = (states(), MemoryLink.objects.count(), Memory.objects.count())

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the link table is gone")

    monkeypatch.setattr(ladder_phase, "link_add", broken)  # after both in-place promotions were written
    with caplog.at_level(logging.INFO, logger="consolidation"):
        run = run_cycle(agent, cast.project_a, no_llm())

    assert run.status == ConsolidationRun.STATUS_FAILED
    assert run.errors == ["RuntimeError: the link table is gone"]
    assert (states(), MemoryLink.objects.count(), Memory.objects.count()) == before
    assert promotions() == []
    lines = [r.getMessage() for r in caplog.records if r.name == "consolidation"]
    assert any(line.startswith("Consolidation transaction failed: RuntimeError. Rolled back") for line in lines)
    assert not any("Retrying" in line for line in lines)  # not a lost race: no retry
    texts = [m.title for m in (first, second, *facts)] + [m.content for m in (first, second, *facts)]
    assert not [line for line in lines for text in texts if text in line]  # no memory text in the log


def test_a_deadlock_is_retried_and_the_promotions_are_written_once(
    cast, agent, ladder_work, monkeypatch, caplog, settings
):
    settings.CONSOLIDATION_LADDER_RETRY_DELAY = 0
    real, calls = ladder_phase.audit_record, []

    def first_call_deadlocks(**kwargs: Any) -> Any:
        calls.append(kwargs["verb"])
        if len(calls) == 2:  # the second promotion's row: the first one's writes are rolled back too
            raise deadlock()
        return real(**kwargs)

    monkeypatch.setattr(ladder_phase, "audit_record", first_call_deadlocks)
    with caplog.at_level(logging.INFO, logger="consolidation"):
        run = run_cycle(agent, cast.project_a, no_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert run.counters["promoted_episodic"] == 3  # two in place, one pattern
    assert len(promotions()) == 3 and Memory.objects.filter(promoted_from="semantic").count() == 3
    lines = [r.getMessage() for r in caplog.records if r.name == "consolidation"]
    assert any(
        line.startswith("Consolidation attempt 1 failed: OperationalError (SQLSTATE 40P01). Retrying in 0 seconds")
        for line in lines
    )
    assert any(line.startswith("Promoted 3 semantic facts to episodic events (2 in place, 1 new") for line in lines)
    assert any(line.startswith("Created 0 procedural patterns from episodic events") for line in lines)


def test_a_deadlock_on_every_attempt_fails_the_run_after_three_attempts(
    cast, agent, ladder_work, monkeypatch, caplog, settings
):
    settings.CONSOLIDATION_LADDER_RETRY_DELAY = 0
    before = states()
    attempts: list[int] = []

    def always(**kwargs: Any) -> Any:
        attempts.append(1)
        raise deadlock()

    monkeypatch.setattr(ladder_phase, "audit_record", always)
    with caplog.at_level(logging.INFO, logger="consolidation"):
        run = run_cycle(agent, cast.project_a, no_llm())

    assert run.status == ConsolidationRun.STATUS_FAILED and len(attempts) == 3
    assert states() == before and promotions() == []
    lines = [r.getMessage() for r in caplog.records if r.name == "consolidation"]
    assert sum(line.startswith("Consolidation attempt") for line in lines) == 2
    assert any(line.startswith("Consolidation failed after 3 attempts") for line in lines)


def test_the_retry_waits_five_seconds_times_the_attempt_by_default(cast, agent, ladder_work, monkeypatch):
    waits: list[float] = []
    real, calls = ladder_phase.audit_record, []

    def deadlocks_twice(**kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) <= 2:
            raise deadlock()
        return real(**kwargs)

    monkeypatch.setattr(ladder_phase, "audit_record", deadlocks_twice)
    monkeypatch.setattr(ladder_phase.time, "sleep", waits.append)

    run = run_cycle(agent, cast.project_a, no_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    assert waits == [5.0, 10.0]


def test_the_settings_default_to_the_documented_criteria(settings):
    criteria = ladder_phase.ladder_criteria()

    assert criteria == ladder.LadderCriteria(similarity=settings.CONSOLIDATION_LADDER_SIMILARITY)
