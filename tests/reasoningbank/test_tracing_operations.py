"""The spans of the operations (docs/observability.md#traces: their hierarchy and attributes): a search,
a record, a consolidation run and a session-start injection, captured with an in-memory exporter. The
hierarchy is asserted through parent ids, and no memory text, query or prompt may appear in any attribute
or event. (The distillation is captured through the queue in tests/reasoningbank/test_tracing.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from consolidation.models import ConsolidationRun
from memories.context.contracts import ContextInput, memory_context_run
from memories.models import Memory
from memories.search.contracts import SearchInput, memory_search_run
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke, synthesis_reply
from tests.factories import MemoryFactory
from tests.tracing_capture import Captured, attributes, spans_fixture  # noqa: F401  (the fixture "spans")

# words that only ever appear in the memories' text and the queries: none may reach a span
SECRET_WORDS = ("quokka", "zanzibar", "flamingo", "marmalade")


def assert_no_content(captured: Captured) -> None:
    text = captured.attribute_text().lower()
    leaked = [word for word in SECRET_WORDS if word in text]
    assert not leaked, f"content in span attributes: {leaked}"


def test_a_search_is_one_memory_search_span_over_its_embedding_legs_fusion_and_collapse(
    spans: Captured, agent: Any, cast: Any
) -> None:
    for n in range(3):
        MemoryFactory(
            principal=agent,
            title=f"Quokka deploy checklist {n}",
            description="When shipping the zanzibar service",
            content=f"Run the flamingo smoke tests before step {n}; marmalade flags stay off.",
        )
    spans.exporter.clear()
    query = "quokka zanzibar deploy"

    output = memory_search_run(agent, SearchInput(query=query, limit=2))

    assert len(output.memories) == 2
    search = spans.one("memory.search")
    assert search.parent is None
    assert {k: attributes(search)[k] for k in ("query_length", "mode", "limit", "result_count", "project_id")} == {
        "query_length": len(query),
        "mode": SearchInput(query=query).mode,
        "limit": 2,
        "result_count": 2,
        "project_id": cast.project_a.id,
    }
    assert attributes(search)["total_found"] == output.total_found and attributes(search)["org_id"] == cast.org_a.id
    children = {span.name: span for span in spans.children(search)}
    embed = children["embedding.embed"]
    assert attributes(embed)["embedder"] == "hashing-v1" and attributes(embed)["texts"] == 1
    assert attributes(embed)["characters"] == len(query)
    for name in ("memory.search.terms", "memory.search.fusion", "memory.search.collapse"):
        assert spans.is_descendant(spans.one(name), search), name
    # without the connection pool (tests) both legs run as one statement; with it, beside each other
    (legs,) = [s for s in spans.all() if s.name.startswith("memory.search.vector")]
    assert legs.name == "memory.search.vector+lexical" and spans.is_descendant(legs, search)
    assert attributes(legs)["rows"] >= 3
    assert attributes(spans.one("memory.search.fusion"))["kept"] == output.total_found
    # its SQL, named by the statement's leading tag; the text has placeholders, not the query
    (sql,) = spans.children(legs)
    assert sql.name == "search:vector" and attributes(sql)["db.query.text"].startswith("(/* search:vector */ SELECT")
    assert_no_content(spans)


def test_with_the_pool_the_lexical_leg_runs_on_another_thread_inside_the_search_trace(
    spans: Captured, agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memories.search import selectors as selectors_search

    MemoryFactory(
        principal=agent,
        title="Quokka rollout",
        description="When zanzibar",
        content="Flamingo steps before every rollout.",
    )
    monkeypatch.setattr(selectors_search, "other_connections_usable", lambda **_: True)  # as with DB_POOL
    spans.exporter.clear()

    memory_search_run(agent, SearchInput(query="quokka rollout"))

    search = spans.one("memory.search")
    vector, lexical = spans.one("memory.search.vector"), spans.one("memory.search.lexical")
    assert spans.parent_of(vector) == spans.parent_of(lexical) and spans.is_descendant(lexical, search)
    assert [s.name for s in spans.children(lexical)] == ["search:text"]  # its SQL, on the other connection
    assert_no_content(spans)


def test_recording_over_rest_is_a_memory_record_span_inside_the_request(
    spans: Captured, cast: Any, token_client: Any
) -> None:
    client = token_client(cast.org_a, projects=[cast.project_a])
    body = {
        "title": "Quokka migrations need a lock timeout",
        "description": "When a zanzibar migration hangs on a busy table",
        "content": "Set lock_timeout before ALTER TABLE so the flamingo deploy fails fast instead of queueing.",
        "outcome": "success",
        "tags": ["marmalade"],
    }

    response = client.post("/api/v1/memories", body, format="json")

    assert response.status_code == 201, response.content
    record = spans.one("memory.record")
    (server,) = [s for s in spans.all() if s.name == "POST api/v1/memories"]
    assert spans.is_descendant(record, server)
    assert {
        k: attributes(record)[k] for k in ("memory_id", "project_id", "org_id", "kind", "outcome", "duplicate")
    } == {
        "memory_id": response.json()["id"],
        "project_id": cast.project_a.id,
        "org_id": cast.org_a.id,
        "kind": Memory.KIND_PROCEDURAL,
        "outcome": "success",
        "duplicate": False,
    }
    assert attributes(record)["content_length"] == len(body["content"])
    assert spans.parent_of(spans.one("embedding.embed")) == record
    assert any(s.name == "INSERT memories_memory" and spans.is_descendant(s, record) for s in spans.all())
    assert_no_content(spans)


@pytest.mark.django_db(transaction=True)  # outside a transaction the LLM calls fan out over threads
def test_a_consolidation_run_is_one_trace_of_its_phases_and_their_llm_calls(
    spans: Captured, cast: Any, agent: Any, settings: Any
):
    # a synthesis call and a summary call per cluster, so two calls of each fan out over threads
    settings.CONSOLIDATION_SYNTHESIS_BATCH_CLUSTERS = 1
    for hub, words in ((0, "quokka"), (20, "zanzibar")):
        for n, title in enumerate(("timeouts", "deadlines", "budgets"), 1):
            remember(
                agent,
                f"{words} {title}",
                spoke(hub, hub + n, 0.87),
                content=f"The {words} service keeps its flamingo {title} under marmalade limits ({n}).",
            )
    reply = synthesis_reply("Service limits", "Keep limits explicit and checked.", attribution="Synthesized from 3")
    spans.exporter.clear()

    run = run_cycle(agent, cast.project_a, cycle_llm(synthesis=reply))

    assert run.status == ConsolidationRun.STATUS_COMPLETED, run.errors
    root = spans.one("consolidation.run")
    assert root.parent is None
    assert {k: attributes(root)[k] for k in ("run_id", "org_id", "project_id", "mode", "dry_run", "status")} == {
        "run_id": run.id,
        "org_id": cast.org_a.id,
        "project_id": cast.project_a.id,
        "mode": "full",
        "dry_run": False,
        "status": "completed",
    }
    assert attributes(root)["created"] == 2 and attributes(root)["llm_calls"] == run.llm_calls
    phases = [s for s in spans.children(root) if s.name.startswith("consolidation.")]
    assert sorted(s.name for s in phases) == sorted(f"consolidation.{name}" for name in run.phase_durations)
    assert {s.context.trace_id for s in spans.all()} == {root.context.trace_id}  # one trace, threads too
    synthesize = spans.one("consolidation.synthesize")
    calls = spans.named("llm.synthesize")
    assert len(calls) == 2 and all(spans.parent_of(call) == synthesize for call in calls)
    summarize = spans.one("consolidation.summarize")
    assert spans.named("llm.summarize") and all(spans.parent_of(c) == summarize for c in spans.named("llm.summarize"))
    for call in calls:
        assert {k: attributes(call)[k] for k in ("provider", "model", "purpose")} == {
            "provider": "fake",
            "model": "scripted-1",
            "purpose": "synthesize",
        }
        assert attributes(call)["prompt_tokens"] > 0 and attributes(call)["prompt_length"] > 0
    assert attributes(spans.one("consolidation.scan"))["processed"] == 6
    assert_no_content(spans)


def test_a_session_start_injection_is_a_session_inject_summaries_span_with_its_attributes(
    spans: Captured, agent: Any
) -> None:
    for title in ("Quokka timeouts", "Zanzibar flags"):
        MemoryFactory(principal=agent, title=title, description="When flamingo", content=f"{title}: marmalade rules.")
    spans.exporter.clear()

    first = memory_context_run(agent, ContextInput(project="web-app", context="flamingo agent preamble"))
    second = memory_context_run(agent, ContextInput(project="web-app", context=first.context, task="zanzibar work"))

    injected = spans.named("session.inject_summaries")
    assert len(injected) == 2
    by_replaced = {attributes(s)["existing_replaced"]: attributes(s) for s in injected}
    assert by_replaced[False]["entries_count"] == first.summaries_injected == 2
    assert by_replaced[False]["summaries_count"] == 0 and by_replaced[False]["source"] == "procedural_memories"
    assert by_replaced[False]["tokens_used"] == first.tokens_used
    assert by_replaced[False]["context_length"] == len("flamingo agent preamble")
    assert by_replaced[True]["context_length"] == len(first.context) and by_replaced[True]["task_length"] == 13
    assert second.replaced_existing is True
    assert_no_content(spans)
