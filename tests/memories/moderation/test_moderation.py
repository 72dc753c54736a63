"""Moderation services (memories/moderation/services.py): every archive — by a person or by the
consolidation cycle — goes through ``memories_archive`` and writes its ``memory.archive`` audit row
(docs/tenancy.md#the-audit-log)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from accounts.models import AuditEvent
from consolidation.models import ConsolidationRun
from memories.models import Memory
from memories.moderation.services import contradiction_resolve, memories_archive, memory_archive
from tests.consolidation.vectors import cycle_llm, disputed_pair, remember, run_cycle, spoke, vec
from tests.fakes import ScriptedLLM

DAY = timedelta(days=1)


def archive_rows(memory: Memory) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(verb="memory.archive", target_type="memory", target_id=memory.id))


def test_archiving_by_hand_writes_one_audit_row_naming_the_actor_and_the_reason(cast, agent):
    memory = remember(agent, "Pin the Node version", vec({1: 1.0}))

    memory_archive(principal=agent, memory=memory, reason=Memory.ARCHIVED_STALE)

    (row,) = archive_rows(memory)
    assert row.organization == cast.org_a and row.actor == agent.actor_label
    assert row.data == {"reason": Memory.ARCHIVED_STALE}


def test_the_cycles_duplicate_merge_audits_the_archived_duplicate_with_its_run(cast, agent):
    rest = remember(agent, "API uses REST", spoke(0, 1, 0.97), content="API uses REST and JSON", confidence=0.6)
    remember(agent, "The API is RESTful", spoke(0, 2, 0.97), content="The API is all RESTful", confidence=0.9)

    run = run_cycle(agent, cast.project_a, ScriptedLLM())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    (row,) = archive_rows(rest)
    assert row.actor == "system"
    assert row.data == {"reason": Memory.ARCHIVED_DUPLICATE, "run": run.id}


def test_the_cycles_synthesis_audits_every_source_it_archives_into_the_consolidated_memory(cast, agent):
    sources = [
        remember(agent, title, spoke(0, axis, 0.87))
        for axis, title in enumerate(["Set DB query timeouts", "Use context.WithTimeout", "Timeouts on queries"], 1)
    ]

    run = run_cycle(agent, cast.project_a, cycle_llm())

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    merged = Memory.objects.get(origin=Memory.ORIGIN_CONSOLIDATED)
    for source in sources:
        (row,) = archive_rows(source)
        assert row.data == {"reason": Memory.ARCHIVED_CONSOLIDATED, "into": merged.id, "run": run.id}


def test_the_cycles_stale_archival_audits_each_stale_memory(cast, agent):
    now = timezone.now()
    stale = remember(
        agent,
        "Old deploy trick",
        vec({1: 1.0}),
        importance=0.0,
        created_at=now - 120 * DAY,
        last_used_at=now - 90 * DAY,
    )

    run = run_cycle(agent, cast.project_a, ScriptedLLM())

    assert run.result["archived_memories"] == [stale.id]
    (row,) = archive_rows(stale)
    assert row.data == {"reason": Memory.ARCHIVED_STALE, "run": run.id}


def test_a_dry_run_archives_nothing_and_writes_no_audit_row(cast, agent):
    rest = remember(agent, "API uses REST", spoke(0, 1, 0.97), content="API uses REST and JSON", confidence=0.6)
    remember(agent, "The API is RESTful", spoke(0, 2, 0.97), content="The API is all RESTful", confidence=0.9)

    run_cycle(agent, cast.project_a, ScriptedLLM(), dry_run=True)

    assert Memory.objects.get(pk=rest.pk).state == Memory.STATE_ACTIVE
    assert archive_rows(rest) == []


def test_resolving_a_dispute_audits_the_archive_of_the_memory_it_drops(cast, agent):
    first, second, link = disputed_pair(agent)

    contradiction_resolve(principal=agent, link=link, resolution="keep_first")

    (row,) = archive_rows(second)
    assert row.actor == agent.actor_label
    assert row.data == {"reason": Memory.ARCHIVED_SUPERSEDED, "kept": first.id}


def test_archiving_in_the_name_of_another_org_changes_nothing_and_audits_nothing(cast, agent):
    memory = remember(agent, "Pin the Node version", vec({1: 1.0}))

    archived = memories_archive(organization=cast.org_b, memory_ids=[memory.id], reason=Memory.ARCHIVED_MANUAL)

    assert archived == []
    assert Memory.objects.get(pk=memory.pk).state == Memory.STATE_ACTIVE
    assert archive_rows(memory) == []
