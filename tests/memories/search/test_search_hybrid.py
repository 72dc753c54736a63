"""The hybrid search's two legs (docs/search.md): BM25 with OR semantics and its bounds, the fusion of both
legs into one relevance, folding near-identical hits, the usage floor; the HNSW scan's ef_search, and the
lexical leg run beside the vector leg on a second connection."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.utils import timezone

from memories.core.services import memories_create, memory_draft
from memories.embedding import embed_texts as services_embed
from memories.models import Memory, MemorySignal
from memories.search.contracts import SearchInput
from reasoningbank.db_threads import write_behind_wait
from tests.memories.search.search_setup import CONTENT, DESCRIPTION, QUERY, TITLE, ids, record, search

pytestmark = pytest.mark.usefixtures("every_memory_its_own_result")


# --- hybrid ranking: BM25 with OR semantics, fusion, folding, usage floor (docs/search.md) -----------


def test_a_question_that_shares_only_some_words_with_a_memory_finds_it_first(token):
    wanted = record(
        token,
        title="Pin the Postgres major version in docker compose",
        description="Upgrades broke local databases",
        content="Set image: postgres:16 explicitly, never latest.",
    )
    record(
        token,
        title="Use feature flags for risky frontend changes",
        description="Releases",
        content="Wrap the new checkout UI in a flag and roll out gradually.",
    )
    # most words of the question are in no memory: an AND of them would match nothing lexically
    result = search(token, "why did my local postgres database break after pulling the newest image?")
    assert ids(result)[0] == wanted.id
    assert "text" in result.hits[0].matched_by and result.hits[0].breakdown.lexical > 0


def test_a_rare_word_outweighs_a_word_every_memory_holds(token):
    for n in range(6):
        record(token, title=f"Deploy checklist step {n}", description="Deploy", content=f"Deploy stage {n} of the app.")
    rare = record(
        token, title="Deploy with Kustomize overlays", description="Deploy", content="Kustomize per env, always."
    )
    result = search(token, "deploy kustomize", explain=True, limit=3)
    assert ids(result)[0] == rare.id
    assert result.hits[0].breakdown.lexical_rank == 1


def test_relevance_is_the_fusion_of_both_legs_and_ranks_by_the_ranking_formula(token, settings):
    record(token)
    other = record(
        token,
        title="Jittered backoff for queue consumers",
        description="Workers",
        content="Consumers back off with jitter when the broker is down.",
    )
    settings.SEARCH_NEIGHBOURS = False  # fusion alone (the neighbour stage blends it: test_search_neighbours.py)
    settings.SEARCH_LEXICAL_WEIGHT = 1.0  # lexical only: the vector leg no longer counts
    lexical_only = {h.memory.id: h.breakdown for h in search(token, min_confidence=0).hits}
    settings.SEARCH_LEXICAL_WEIGHT = 0.0
    vector_only = {h.memory.id: h.breakdown for h in search(token, min_confidence=0).hits}
    for breakdowns in (lexical_only, vector_only):
        for b in breakdowns.values():
            assert 0 <= b.relevance <= 1
            assert b.score == pytest.approx(b.relevance * b.confidence * b.recency_boost * b.scope_weight)
    best_lexical = max(lexical_only.values(), key=lambda b: b.lexical)
    assert best_lexical.relevance == pytest.approx(1.0)
    assert lexical_only[other.id].relevance == pytest.approx(lexical_only[other.id].lexical / best_lexical.lexical)


def test_reciprocal_rank_fusion_can_be_chosen_instead(token, settings):
    record(token)
    settings.SEARCH_FUSION = "rrf"
    (hit,) = search(token).hits
    assert (hit.breakdown.vector_rank, hit.breakdown.lexical_rank) == (1, 1)
    assert hit.breakdown.relevance == pytest.approx(1.0)


def test_identical_texts_in_several_places_fold_into_the_best_hit_which_lists_the_others(cast, token, settings):
    settings.SEARCH_COLLAPSE_DUPLICATES = True
    first = record(token)
    twins = [
        memories_create(
            principal=token,
            project=cast.project_a,
            drafts=[
                memory_draft(title=TITLE.upper(), description=DESCRIPTION, content=CONTENT + "  ", outcome="success")
            ],
        )[0]
        for _ in range(2)
    ]
    other = record(
        token, title="Cache invalidation by surrogate key", description="CDN", content="Purge them by the key."
    )
    result = search(token, min_confidence=0, limit=5)
    best = result.hits[0]
    assert best.memory.id in {first.id, *(t.id for t in twins)}
    assert sorted([best.memory.id, *best.duplicates]) == sorted([first.id, *(t.id for t in twins)])
    assert [h.memory.id for h in result.hits[1:]] in ([other.id], [])
    assert result.total_found >= 3  # counted before folding


def test_near_identical_embeddings_fold_too_but_different_memories_do_not(cast, token, settings):
    settings.SEARCH_COLLAPSE_DUPLICATES = True
    original = record(token)
    reworded = record(token, content=CONTENT + " Log each retry.")  # not the same text, nearly the same vector
    different = record(
        token,
        title="Retry budget per request",
        description="Clients",
        content="Cap total retries per request at three across layers.",
    )
    settings.SEARCH_COLLAPSE_SIMILARITY = 0.9
    result = search(token, min_confidence=0, limit=5)
    folded = {h.memory.id: h.duplicates for h in result.hits}
    assert folded[different.id] == []  # a different memory stays its own result
    (kept,) = {original.id, reworded.id} & set(folded)
    assert folded[kept] == list({original.id, reworded.id} - {kept})


def test_hits_below_the_relevance_floor_get_no_usage_signal(token, settings):
    strong = record(token)
    weak = record(
        token,
        title="Jittered sleeps in integration tests",
        description="Tests",
        content="Sleep with jitter between polls.",
    )
    settings.SEARCH_USAGE_MIN_RELEVANCE = 0.99
    result = search(token, min_confidence=0, explain=True, limit=5)
    write_behind_wait()
    by_id = {h.memory.id: h for h in result.hits}
    assert by_id[strong.id].breakdown.relevance >= 0.99 > by_id[weak.id].breakdown.relevance
    assert Memory.objects.get(pk=strong.pk).usage_count == 1
    assert Memory.objects.get(pk=weak.pk).usage_count == 0
    assert not MemorySignal.objects.filter(memory_id=weak.pk).exists()


def _plans_of_search(monkeypatch, run):
    """EXPLAIN ANALYZE of the statistics and text-leg statements a search runs (as JSON plans)."""
    from django.db import connection

    from memories.search import selectors, statistics

    plans: dict[str, list[dict]] = {"terms": [], "text": []}
    real_rows = statistics.sql_rows

    def explained(sql, params):
        kind = "terms" if "/* search:terms */" in sql else "text" if "/* search:text */" in sql else None
        if kind:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
                plans[kind].append(cursor.fetchone()[0][0]["Plan"])
        return real_rows(sql, params)

    monkeypatch.setattr(selectors, "sql_rows", explained)  # the legs
    monkeypatch.setattr(statistics, "sql_rows", explained)  # the term statistics
    return run(), plans


def _limit_rows(node):
    found = [node["Actual Rows"]] if node["Node Type"] == "Limit" else []
    for child in node.get("Plans", []):
        found += _limit_rows(child)
    return found


def _many(principal, project, word: str, n: int) -> None:
    with transaction.atomic():
        memories_create(
            principal=principal,
            project=project,
            drafts=[
                memory_draft(
                    title=f"{word.title()} policy {i}", description=word, content=f"{word} case {i}", outcome="success"
                )
                for i in range(n)
            ],
        )


def test_a_one_word_query_over_many_matches_stays_bounded_by_its_caps(cast, token, settings, monkeypatch):
    """EXPLAIN ANALYZE: every count stops at its cap through the GIN index, and a word in more
    memories than the cap picks no lexical candidates at all (the vector leg's still get its score)."""
    _many(token, cast.project_a, "retry", 300)
    settings.SEARCH_TERM_DF_CAP = 50
    settings.SEARCH_COLLECTION_CAP = 120
    settings.SEARCH_PARALLEL_LEGS = False
    result, plans = _plans_of_search(monkeypatch, lambda: search(token, "retry", min_confidence=0, limit=5))

    assert len(result.hits) == 5 and all(h.breakdown.lexical > 0 for h in result.hits)
    (terms,) = plans["terms"]
    counted = _limit_rows(terms)
    assert max(counted) <= 200  # the df count stops at 51, the collection count at 120, the sample at 200
    assert 51 in counted and 120 in counted
    assert plans["text"] == []  # 300 memories hold the word: no enumeration of them


def test_a_rare_words_matches_are_enumerated_up_to_the_match_cap(cast, token, settings, monkeypatch):
    from memories.search import statistics as search_statistics

    _many(token, cast.project_a, "kustomize", 40)
    settings.SEARCH_TERM_DF_CAP = 50
    settings.SEARCH_PARALLEL_LEGS = False
    monkeypatch.setattr(search_statistics, "TEXT_MATCH_CAP", 25)
    result, plans = _plans_of_search(monkeypatch, lambda: search(token, "kustomize", min_confidence=0, limit=5))

    assert len(result.hits) == 5
    (text,) = plans["text"]
    assert max(_limit_rows(text)) <= 25  # 40 memories hold the word; 25 are ranked


def test_planner_statistics_give_the_idf_once_the_table_is_analysed(cast, token, settings):
    from django.db import connection

    from memories.search import statistics as search_statistics

    _many(token, cast.project_a, "deploy", 30)
    rare = record(
        token, title="Deploy with Kustomize overlays", description="Deploy", content="Kustomize per env, always."
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")
    settings.SEARCH_TERM_STATISTICS = "auto"
    stats = search_statistics.collection_stats(refresh=True)
    try:
        assert stats is not None and stats.documents >= 31
        assert stats.document_frequency("deploy") > stats.document_frequency("kustomiz")
        result = search(token, "deploy kustomize", explain=True, limit=3, min_confidence=0)
        assert ids(result)[0] == rare.id and result.hits[0].breakdown.lexical_rank == 1
    finally:
        search_statistics._stats_cache = None


def test_when_no_pooled_connection_comes_the_lexical_leg_runs_inline_and_the_search_answers(token, monkeypatch):
    from concurrent.futures import Future

    from django.db import OperationalError

    from memories.search import selectors as selectors_search

    wanted = record(token)
    refused: Future = Future()
    refused.set_exception(OperationalError("couldn't get a connection after 3.00 sec"))
    monkeypatch.setattr(selectors_search, "_legs_in_parallel", lambda: True)
    monkeypatch.setattr(selectors_search, "run_beside", lambda *args: refused)
    result = search(token, min_confidence=0)
    assert ids(result) == [wanted.id]
    assert set(result.hits[0].matched_by) == {"vector", "text"}


# --- the legs' execution ---------------------------------------------------------------------------


def test_every_database_session_scans_the_hnsw_graph_iteratively_with_the_configured_ef(db, settings):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('hnsw.iterative_scan'), current_setting('hnsw.ef_search')")
        assert cursor.fetchone() == ("relaxed_order", str(settings.SEARCH_HNSW_EF_SEARCH))


def test_a_search_for_more_candidates_than_ef_search_widens_it_and_fills_its_limit(cast, make_token):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    for i in range(25):
        record(principal, title=f"{TITLE} variant {i}", content=f"{CONTENT} case {i}")
    # limit 20 → 80 candidates per leg, more than ef_search 40: the search widens ef_search for itself
    with CaptureQueriesContext(connection) as wide:
        result = search(principal, limit=20, min_confidence=0.0)
    assert len(result.hits) == 20 and result.total_found == 25
    assert any("set_config('hnsw.ef_search', '80', true)" in q["sql"] for q in wide.captured_queries)
    with CaptureQueriesContext(connection) as narrow:
        search(principal, limit=5, min_confidence=0.0)  # 20 candidates: the session's setting suffices
    assert not any("hnsw.ef_search" in q["sql"] for q in narrow.captured_queries)


@pytest.mark.django_db(transaction=True)  # the second leg runs on another connection: rows must be committed
def test_running_the_two_legs_at_once_ranks_exactly_like_one_statement(cast, make_token, monkeypatch):
    from memories.search import selectors

    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    record(principal)
    record(principal, title="Pin the Postgres image tag in CI", content="Avoid surprise upgrades; retry later.")
    record(
        principal, title="Backoff for flaky uploads", description="Retry S3 uploads", content="Add jitter to retries."
    )
    search = SearchInput(query=QUERY, min_confidence=0.0).to_query()
    (vector,), _ = services_embed([search.query])
    now = timezone.now()
    together = selectors.memory_search(principal, search, query_vector=vector, now=now)
    beside = []

    def spy(fn, sql, params):
        beside.append(sql)
        return original(fn, sql, params)

    original = selectors.run_beside
    monkeypatch.setattr(selectors, "run_beside", spy)
    monkeypatch.setattr(selectors, "other_connections_usable", lambda **_: True)
    apart = selectors.memory_search(principal, search, query_vector=vector, now=now)

    assert len(beside) == 1 and "search:text" in beside[0]
    summary = [(h.memory.id, h.matched_by, h.breakdown.score) for h in together.hits]
    assert summary == [(h.memory.id, h.matched_by, h.breakdown.score) for h in apart.hits]
    assert {matched for _, matched, _ in summary} >= {("text", "vector")} and apart.total_found == together.total_found
