"""The shared factories make valid tenant rows: memories through the real service, the rest in the
organization of their project or memory."""

from __future__ import annotations

import pytest

from consolidation.models import ConsolidationRun
from memories.core.fingerprint import memory_content_hash
from memories.models import AgentSession, Memory, MemoryLink
from tests.factories import (
    AgentSessionFactory,
    ConsolidationRunFactory,
    MemoryFactory,
    MemoryLinkFactory,
    memory_recorder,
)


def test_memories_are_recorded_through_the_service_with_unique_titles(cast, agent):
    first, second = MemoryFactory(principal=agent), MemoryFactory(principal=agent)

    assert first.pk != second.pk and first.title != second.title
    for memory in (first, second):
        assert (memory.organization, memory.project, memory.created_by_token) == (
            cast.org_a,
            cast.project_a,
            agent.token,
        )
        assert memory.embedding is not None and memory.embedding_model
        assert memory.content_hash == memory_content_hash(memory.title, memory.description, memory.content)
        assert memory.confidence == pytest.approx(0.8)


def test_a_fixed_text_records_once_and_other_fields_are_written_to_the_row(agent):
    record = memory_recorder(title="Pin flaky test seeds")
    first = record(agent)

    again = record(agent, confidence=0.3, usage_count=4)

    assert again.pk == first.pk and Memory.objects.count() == 1
    assert (again.confidence, again.usage_count) == (pytest.approx(0.3), 4)


def test_sessions_runs_and_links_belong_to_the_org_of_their_project_or_memory(cast, agent):
    session = AgentSessionFactory(project=cast.project_b)
    run = ConsolidationRunFactory(project=cast.project_b)
    source, target = MemoryFactory(principal=agent), MemoryFactory(principal=agent)
    link = MemoryLinkFactory(source=source, target=target)
    by_id = MemoryLinkFactory(source_id=target.pk, target_id=source.pk, kind=MemoryLink.KIND_CONTRADICTS)

    assert (session.organization, session.status) == (cast.org_b, AgentSession.STATUS_QUEUED)
    assert (run.organization, run.status) == (cast.org_b, ConsolidationRun.STATUS_QUEUED)
    assert (link.organization, link.kind) == (cast.org_a, MemoryLink.KIND_REFERENCES)
    assert by_id.organization == cast.org_a
