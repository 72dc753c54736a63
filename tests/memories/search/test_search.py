"""Hybrid search (docs/search.md): filters, ranking factors, usage signals, validation and retrieval
modes. Who a search reaches: test_search_reach.py; the two legs and their fusion: test_search_hybrid.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from memories.core.services import memories_create, memory_draft
from memories.models import Memory, MemorySignal
from memories.moderation.services import memory_archive
from memories.search.contracts import SearchInput
from memories.search.ranking import estimate_tokens
from reasoningbank.db_threads import write_behind, write_behind_wait
from tests.memories.search.search_setup import CONTENT, DESCRIPTION, QUERY, TITLE, ids, record, search

pytestmark = pytest.mark.usefixtures("every_memory_its_own_result")


def test_archived_memories_are_excluded(token):
    kept = record(token)
    gone = record(token, title="Retry flaky network calls with jittered backoff (old)")
    memory_archive(principal=token, memory=gone)
    result = search(token)
    assert ids(result) == [kept.id]
    assert result.total_found == 1
    assert Memory.objects.get(pk=gone.pk).usage_count == 0


def test_the_outcome_filter_returns_only_that_outcome(token):
    success = record(token, outcome="success")
    failure = record(token, outcome="failure", title="Retry flaky network calls forever without backoff")
    mixed = record(token, outcome="mixed", title="Retry flaky network calls with fixed backoff")
    assert ids(search(token, outcome="failure")) == [failure.id]
    assert ids(search(token, outcome="success")) == [success.id]
    assert set(ids(search(token, outcome="all"))) == {success.id, failure.id, mixed.id}


def test_min_confidence_excludes_less_trusted_memories(token):
    trusted = record(token)
    doubtful = record(token, title="Retry flaky network calls with jittered backoff, maybe")
    Memory.objects.filter(pk=doubtful.pk).update(confidence=0.3)
    assert ids(search(token)) == [trusted.id]  # default min_confidence 0.5
    assert set(ids(search(token, min_confidence=0.2))) == {trusted.id, doubtful.id}
    assert ids(search(token, min_confidence=0.95)) == []


def test_the_limit_caps_hits_while_total_found_counts_every_candidate(token):
    made = [record(token, title=f"{TITLE} variant {n}") for n in range(6)]
    result = search(token, limit=2)
    assert len(result.hits) == 2
    assert result.total_found == 6
    assert set(ids(result)) <= {m.id for m in made}
    expected_tokens = sum(
        estimate_tokens(f"{h.memory.title}\n{h.memory.description}\n{h.memory.content}") for h in result.hits
    )
    assert result.tokens_used == expected_tokens


def test_the_default_limit_is_five(token):
    for n in range(7):
        record(token, title=f"{TITLE} variant {n}")
    result = search(token)
    assert len(result.hits) == 5
    assert result.total_found == 7


def test_a_keyword_match_is_found_even_when_vector_similarity_is_low(token, settings):
    settings.SEARCH_MIN_SIMILARITY = 0.99  # no vector candidate clears this on its own
    keyword = record(token, content=f"{CONTENT} Known culprit: the zxqvplugh proxy drops idle sockets.")
    record(token, title="Cache invalidation for product listings")
    result = search(token, query="zxqvplugh")
    assert ids(result) == [keyword.id]
    hit = result.hits[0]
    assert "text" in hit.matched_by
    assert hit.breakdown.similarity < 0.99


def test_vector_candidates_below_the_minimum_similarity_are_dropped(token, settings):
    record(token)
    settings.SEARCH_MIN_SIMILARITY = 0.99
    result = search(token, query="database schema migration rollback plan")
    assert result.hits == [] and result.total_found == 0


def test_hits_say_which_leg_found_them(token):
    memory = record(token)
    hit = search(token, query="jittered backoff").hits[0]
    assert hit.memory.id == memory.id
    assert hit.matched_by == ("text", "vector")


# --- ranking factors -----------------------------------------------------------------------------


def test_consolidated_memories_get_the_1_2_boost(token, cast):
    recorded = record(token)
    with transaction.atomic():
        (consolidated,) = memories_create(
            principal=token,
            drafts=[memory_draft(title=TITLE, description=DESCRIPTION, content=CONTENT, outcome="success")],
            project=cast.project_a,
            origin=Memory.ORIGIN_CONSOLIDATED,
        )
    result = search(token)
    assert ids(result) == [consolidated.id, recorded.id]
    boosted, plain = result.hits
    assert boosted.breakdown.consolidated_boost == 1.2
    assert plain.breakdown.consolidated_boost == 1.0
    assert boosted.breakdown.score / plain.breakdown.score == pytest.approx(1.2, rel=1e-3)


def test_a_memory_last_used_long_ago_gets_less_recency_boost(token):
    fresh = record(token)
    stale = record(token, title=f"{TITLE}!")
    half = record(token, title=f"{TITLE}?")
    now = timezone.now()
    Memory.objects.filter(pk=stale.pk).update(last_used_at=now - timedelta(days=400))
    Memory.objects.filter(pk=half.pk).update(last_used_at=now - timedelta(days=365 / 2))
    result = search(token)
    boosts = {hit.memory.id: hit.breakdown.recency_boost for hit in result.hits}
    assert boosts[fresh.id] == pytest.approx(1.1, abs=1e-4)
    assert boosts[half.id] == pytest.approx(1.05, abs=1e-3)
    assert boosts[stale.id] == pytest.approx(1.0)


def test_an_old_memory_never_used_is_dated_by_its_creation(token):
    old = record(token)
    Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=730))
    assert search(token).hits[0].breakdown.recency_boost == pytest.approx(1.0)


def test_higher_confidence_ranks_first_among_equal_texts(cast, token):
    low = record(token)
    # an identical record would return ``low`` itself: the twin comes the way distillation makes one
    (high,) = memories_create(
        principal=token,
        drafts=[memory_draft(title=TITLE, description=DESCRIPTION, content=CONTENT, outcome="success")],
        project=cast.project_a,
    )
    Memory.objects.filter(pk=low.pk).update(confidence=0.6)
    Memory.objects.filter(pk=high.pk).update(confidence=0.95)
    result = search(token)
    assert ids(result) == [high.id, low.id]
    assert result.hits[0].breakdown.confidence == pytest.approx(0.95)


def test_the_breakdown_multiplies_to_the_score(token):
    record(token)
    b = search(token).hits[0].breakdown
    assert b.score == pytest.approx(
        b.relevance * b.confidence * b.recency_boost * b.scope_weight * b.consolidated_boost
    )
    assert 0 < b.similarity <= 1 and 0 < b.relevance <= 1


# --- usage signals -------------------------------------------------------------------------------


def test_each_returned_memory_is_marked_used_with_a_usage_signal(cast, token):
    returned = record(token)
    left_out = record(token, title="Cache invalidation for product listings", content="Purge by surrogate key.")
    Memory.objects.filter(pk=left_out.pk).update(confidence=0.55)
    before = timezone.now()

    result = search(token, limit=1)

    assert ids(result) == [returned.id]
    stored = Memory.objects.get(pk=returned.pk)
    assert stored.usage_count == 1
    assert stored.last_used_at is not None and stored.last_used_at >= before
    signal = MemorySignal.objects.get(memory=returned)
    assert (signal.type, signal.positive) == ("usage", True)
    assert signal.project == cast.project_a
    assert signal.organization == cast.org_a
    untouched = Memory.objects.get(pk=left_out.pk)
    assert untouched.usage_count == 0 and untouched.last_used_at is None
    assert not MemorySignal.objects.filter(memory=left_out).exists()


def test_usage_accumulates_and_nudges_confidence_up(token):
    memory = record(token)
    first = search(token)
    search(token)
    stored = Memory.objects.get(pk=memory.pk)
    assert stored.usage_count == 2
    assert MemorySignal.objects.filter(memory=memory, type="usage").count() == 2
    assert stored.confidence > 0.8
    assert first.hits[0].memory.usage_count == 1  # the returned object reflects the mark


def test_usage_signals_stamp_the_confidence_they_led_to(token):
    memory = record(token)
    search(token)
    signal = MemorySignal.objects.get(memory=memory, type="usage")
    assert signal.confidence_after == pytest.approx(Memory.objects.get(pk=memory.pk).confidence)


def test_usage_signals_on_team_memories_carry_the_searching_project(cascade):
    m = cascade["memories"]
    search(cascade["admin"], project="web-app")
    signal = MemorySignal.objects.get(memory=m["team"])
    assert signal.project == cascade["p1"]


@pytest.mark.django_db(transaction=True)  # the writer thread uses its own connection
def test_a_searchs_usage_signals_are_written_behind_with_the_values_it_returned(cast, make_token, monkeypatch):
    from memories.confidence import services

    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    memory = record(principal)
    queued = []
    monkeypatch.setattr(services, "other_connections_usable", lambda: True)
    monkeypatch.setattr(services, "db_write_behind", lambda fn, *args: queued.append(fn) or write_behind(fn, *args))

    hit = search(principal).hits[0]
    write_behind_wait()

    assert queued == [services.usage_signals_write]
    stored = Memory.objects.get(pk=memory.pk)
    assert stored.usage_count == hit.memory.usage_count == 1
    assert stored.confidence == hit.memory.confidence
    assert stored.last_used_at == hit.memory.last_used_at
    signal = MemorySignal.objects.get(memory=memory, type="usage")
    assert signal.confidence_after == pytest.approx(hit.memory.confidence) and signal.project_id == cast.project_a.id


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 21}, "limit"),
        ({"limit": "5"}, "limit"),
        ({"limit": True}, "limit"),
        ({"limit": 2.5}, "limit"),
        ({"min_confidence": 1.5}, "min_confidence"),
        ({"min_confidence": -0.1}, "min_confidence"),
        ({"min_confidence": "0.5"}, "min_confidence"),
        ({"min_confidence": float("nan")}, "min_confidence"),
        ({"scope": "galaxy"}, "scope"),
        ({"outcome": "mixed"}, "outcome"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": None}, "query"),
        ({"query": "x" * 2001}, "query"),
        ({"project": 7}, "project"),
    ],
)
def test_invalid_search_input_names_the_field(kwargs, field):
    with pytest.raises(ValidationError) as excinfo:
        SearchInput.model_validate({"query": QUERY, **kwargs})
    assert {error["loc"][0] for error in excinfo.value.errors()} == {field}


def test_search_defaults_are_the_documented_ones(settings):
    query = SearchInput(query="  timeouts  ").to_query()
    assert (query.query, query.scope, query.outcome, query.limit) == ("timeouts", "all", "all", 5)
    assert query.min_confidence == settings.SEARCH_MIN_CONFIDENCE
    assert query.project is None
    assert SearchInput(query="q", limit=20, min_confidence=0, project="").to_query().limit == 20


# --- degenerate embeddings ------------------------------------------------------------------------


def test_a_query_without_any_word_characters_returns_no_hits_instead_of_crashing(token):
    record(token)
    result = search(token, query="?!")
    assert result.hits == []
    assert result.total_found == 0


def test_a_memory_without_any_word_characters_does_not_break_search_for_the_project(token):
    good = record(token)
    # the write gate refuses such a memory now; one stored before it must not break search either
    odd = record(token, title="Odd one", description="Odd", content="Refused by the gate today")
    Memory.objects.filter(pk=odd.pk).update(title="???", description="...", content="!!!")
    result = search(token)
    assert ids(result) == [good.id]


# --- retrieval modes (docs/search.md#retrieval-modes) -----------------------------------------------


@pytest.fixture
def tiered(token):
    """One memory per tier, and one archived: the same topic, distinct texts."""
    memories = {
        tier: record(token, title=f"Retry flaky network calls ({tier} copy)", content=f"{CONTENT} Kept {tier}.")
        for tier in ("hot", "warm", "cold")
    }
    for tier, memory in memories.items():
        Memory.objects.filter(pk=memory.pk).update(tier=tier)
    memories["archived"] = record(token, title="Retry flaky network calls (old)", content=f"{CONTENT} Old.")
    memory_archive(principal=token, memory=memories["archived"])
    return memories


@pytest.mark.parametrize(
    ("mode", "reached"),
    [
        ("reflexive", {"hot"}),
        ("standard", {"hot", "warm"}),
        ("deep", {"hot", "warm", "cold"}),
        ("exhaustive", {"hot", "warm", "cold", "archived"}),
    ],
)
def test_each_retrieval_mode_searches_its_tiers(token, tiered, mode, reached):
    result = search(token, mode=mode, min_confidence=0, limit=10)
    assert set(ids(result)) == {tiered[name].id for name in reached}


def test_the_default_mode_is_standard_so_cold_memories_wait_for_a_deeper_search(token, tiered):
    assert set(ids(search(token, min_confidence=0, limit=10))) == {tiered["hot"].id, tiered["warm"].id}


def test_an_exhaustive_search_marks_archived_memories_and_records_no_use_of_them(token, tiered):
    from memories.search.contracts import memory_search_run

    output = memory_search_run(token, SearchInput(query=QUERY, mode="exhaustive", min_confidence=0, limit=10))
    write_behind_wait()
    body = {hit["id"]: hit for hit in output.model_dump(mode="json")["memories"]}
    assert body[tiered["archived"].id]["state"] == "archived"
    assert "state" not in body[tiered["hot"].id]  # an active hit has no state key (docs/search.md#the-request)
    assert Memory.objects.get(pk=tiered["archived"].pk).usage_count == 0
    assert Memory.objects.get(pk=tiered["hot"].pk).usage_count == 1


def test_an_unknown_mode_is_refused_naming_the_field(token):
    with pytest.raises(ValidationError) as excinfo:
        search(token, mode="everything")
    assert [error["loc"] for error in excinfo.value.errors()] == [("mode",)]


# --- time-aware relevance (docs/search.md#time-aware-relevance) ------------------------------------


def test_a_when_question_ranks_the_memory_that_states_a_time_first(token, settings):
    record(token)  # off topic: the vector leg's min-max normalisation needs a floor
    # the undated memory matches the question's words more often: the legs alone put it first
    undated = record(
        token,
        title="Support group",
        description="Caroline and the support group",
        content="Caroline went to the LGBTQ support group; the support group was powerful.",
    )
    dated = record(
        token,
        title="Support group",
        description="Caroline",
        content="Caroline went to the LGBTQ support group yesterday.",
    )
    question = "When did Caroline go to the LGBTQ support group?"
    result = search(token, question, min_confidence=0, explain=True)  # the default configuration
    assert ids(result)[:2] == [dated.id, undated.id]
    first, second = (hit.breakdown for hit in result.hits[:2])
    assert (first.time_expression, first.time_period) == (1.0, 0.0)
    assert (second.time_expression, second.time_period) == (0.0, 0.0)
    w = settings.SEARCH_TIME_WEIGHT
    # the time-adjusted relevance, before the neighbour stage blends the three memories recorded in a row
    assert first.own_relevance == pytest.approx((first.fused + w) / (1 + w))
    assert second.own_relevance == pytest.approx(second.fused / (1 + w))
    settings.SEARCH_TIME_WEIGHT = 0.0  # off: the legs' fusion alone
    assert ids(search(token, question, min_confidence=0))[:2] == [undated.id, dated.id]


def test_a_query_naming_a_date_ranks_the_memory_recorded_that_day_first(token, settings):
    # near the topic only by the name: a floor for the vector leg's min-max normalisation
    record(token, title="Melanie", description="Melanie", content="Melanie fixed the flaky network retries.")
    other_day = record(
        token,
        title="Painting",
        description="Melanie",
        content="What a painting Melanie shared: a painting she painted of the lake.",
    )
    that_day = record(token, title="Painting", description="Melanie", content="Melanie shared a painting of a horse.")
    Memory.objects.filter(pk=other_day.pk).update(created_at=datetime(2023, 7, 6, 18, 0, tzinfo=UTC))
    Memory.objects.filter(pk=that_day.pk).update(created_at=datetime(2023, 7, 7, 9, 30, tzinfo=UTC))
    query = "What painting did Melanie share on 7 July, 2023?"
    result = search(token, query, min_confidence=0)  # the default configuration
    assert ids(result)[:2] == [that_day.id, other_day.id]
    assert result.hits[0].breakdown.time_period == 1.0 and result.hits[1].breakdown.time_period == 0.0
    settings.SEARCH_TIME_WEIGHT = 0.0  # off: the legs' fusion alone
    assert ids(search(token, query, min_confidence=0))[:2] == [other_day.id, that_day.id]


def test_a_query_without_time_cues_ranks_by_the_fusion_alone(token):
    record(token)
    b = search(token).hits[0].breakdown
    assert (b.time_expression, b.time_period) == (0.0, 0.0)
    assert b.relevance == pytest.approx(b.fused)
