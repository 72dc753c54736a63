"""Hybrid search (DESIGN §7, seed 001): the scope cascade, filters, ranking and usage signals."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from memories.core.services import memories_create, memory_draft
from memories.embedding import embed_texts as services_embed
from memories.models import Memory, MemorySignal
from memories.moderation.services import memory_archive
from memories.search.contracts import SearchInput
from memories.search.ranking import estimate_tokens
from memories.search.services import memory_search_use
from reasoningbank.db_threads import write_behind, write_behind_wait
from reasoningbank.errors import NotFound
from tests.factories import ProjectFactory, TeamFactory, memory_recorder

TITLE = "Retry flaky network calls with jittered backoff"
DESCRIPTION = "When an HTTP client call to a third-party API times out intermittently"
CONTENT = "Wrap the call in a retry loop with exponential backoff and random jitter, capped at five tries."
QUERY = "retry flaky network calls with backoff"


@pytest.fixture(autouse=True)
def every_memory_its_own_result(settings):
    """These tests record the same text in several places on purpose (to compare scopes, confidence,
    recency): near-identical hits are not folded here, except in the tests of that folding, and the
    write gate records near copies instead of answering with the first (tests/memories/test_gate.py)."""
    settings.SEARCH_COLLAPSE_DUPLICATES = False
    settings.WRITE_GATE_NEAR_COPY_SIMILARITY = 1.0


record = memory_recorder(title=TITLE, description=DESCRIPTION, content=CONTENT)


def search(principal, query=QUERY, **kwargs):
    return memory_search_use(principal=principal, search=SearchInput(query=query, **kwargs).to_query())


def ids(result):
    return [hit.memory.id for hit in result.hits]


# --- the scope cascade ---------------------------------------------------------------------------


@pytest.fixture
def cascade(cast, make_token):
    """Org A on Teams: team T holds P1 (web-app) and P2; P3 has no team; team T2 holds P4."""
    cast.org_a.plan = "teams"
    cast.org_a.save()
    team = TeamFactory(organization=cast.org_a, slug="platform")
    other_team = TeamFactory(organization=cast.org_a, slug="data")
    p1 = cast.project_a
    p1.team = team
    p1.save()
    p2 = ProjectFactory(organization=cast.org_a, slug="api", team=team)
    p3 = ProjectFactory(organization=cast.org_a, slug="tools")
    p4 = ProjectFactory(organization=cast.org_a, slug="etl", team=other_team)
    _, admin = make_token(cast.org_a)
    memories = {
        "p1": record(admin, project="web-app"),
        "p2": record(admin, project="api"),
        "p3": record(admin, project="tools"),
        "team": record(admin, project="web-app", scope="team"),
        "other_team": record(admin, project="etl", scope="team"),
        "org": record(admin, scope="org"),
    }
    assert memories["team"].team == team and memories["other_team"].team == other_team
    return {"admin": admin, "team": team, "p1": p1, "p2": p2, "p3": p3, "p4": p4, "memories": memories}


def test_a_search_for_a_project_finds_its_project_its_team_and_org_memories_only(cascade):
    m = cascade["memories"]
    result = search(cascade["admin"], project="web-app")
    assert set(ids(result)) == {m["p1"].id, m["team"].id, m["org"].id}
    assert result.total_found == 3
    assert result.project == cascade["p1"]


def test_a_project_restricted_token_gets_the_same_cascade_without_naming_its_project(cast, make_token, cascade):
    m = cascade["memories"]
    _, restricted = make_token(cast.org_a, projects=[cascade["p1"]])
    result = search(restricted)
    assert set(ids(result)) == {m["p1"].id, m["team"].id, m["org"].id}


def test_a_project_without_a_team_sees_its_own_and_org_memories_only(cascade):
    m = cascade["memories"]
    result = search(cascade["admin"], project="tools")
    assert set(ids(result)) == {m["p3"].id, m["org"].id}


@pytest.mark.parametrize(
    ("scope", "expected"), [("project", {"p1"}), ("team", {"team"}), ("org", {"org"}), ("all", {"p1", "team", "org"})]
)
def test_the_scope_filter_restricts_results_to_that_level(cascade, scope, expected):
    m = cascade["memories"]
    result = search(cascade["admin"], project="web-app", scope=scope)
    assert set(ids(result)) == {m[name].id for name in expected}
    assert {hit.breakdown.scope for hit in result.hits} == {m[name].scope for name in expected}


def test_equal_memories_rank_project_before_team_before_org(cascade):
    m = cascade["memories"]
    result = search(cascade["admin"], project="web-app")
    assert ids(result) == [m["p1"].id, m["team"].id, m["org"].id]
    assert [hit.breakdown.scope_weight for hit in result.hits] == [1.0, 0.9, 0.8]
    similarities = {round(hit.breakdown.similarity, 6) for hit in result.hits}
    assert len(similarities) == 1  # identical text: only the scope weight separates them
    scores = [hit.breakdown.score for hit in result.hits]
    assert scores[1] / scores[0] == pytest.approx(0.9, rel=1e-3)
    assert scores[2] / scores[0] == pytest.approx(0.8, rel=1e-3)


def test_an_unrestricted_token_without_a_project_searches_the_whole_org(cascade):
    result = search(cascade["admin"], limit=20)
    assert set(ids(result)) == {memory.id for memory in cascade["memories"].values()}
    assert result.project is None


def test_a_project_restricted_token_cannot_find_another_projects_memories(cast, make_token, cascade):
    m = cascade["memories"]
    _, restricted = make_token(cast.org_a, projects=[cascade["p1"]])
    assert m["p2"].id not in ids(search(restricted, scope="project"))
    with pytest.raises(NotFound) as excinfo:
        search(restricted, project="api")
    assert excinfo.value.field == "project"
    assert Memory.objects.get(pk=m["p2"].pk).usage_count == 0


def test_a_team_restricted_token_without_a_project_finds_its_teams_memories_but_not_other_teams(
    cast, make_token, cascade
):
    m = cascade["memories"]
    _, restricted = make_token(cast.org_a, teams=[cascade["team"]])
    found = set(ids(search(restricted, limit=20)))
    assert found == {m["p1"].id, m["p2"].id, m["team"].id, m["org"].id}


# --- tenancy -------------------------------------------------------------------------------------


def test_another_orgs_principal_never_sees_identical_memories(cast, make_token):
    _, token_a = make_token(cast.org_a)
    theirs = record(token_a, project="web-app")
    theirs_org = record(token_a, scope="org")
    _, token_b = make_token(cast.org_b)

    empty = search(token_b, project="billing")
    assert empty.hits == [] and empty.total_found == 0

    ours = record(token_b, project="billing")
    result = search(token_b, limit=20)
    assert ids(result) == [ours.id]
    assert not MemorySignal.objects.filter(memory__in=[theirs, theirs_org]).exists()
    assert Memory.objects.get(pk=theirs.pk).usage_count == 0


def test_another_orgs_project_slug_is_not_found(cast, make_token):
    _, token_a = make_token(cast.org_a)
    with pytest.raises(NotFound):
        search(token_a, project="billing")


def test_a_project_slug_with_a_nul_byte_is_refused_by_the_contract_naming_the_field(cast, make_token):
    _, token_a = make_token(cast.org_a)
    with pytest.raises(ValidationError) as excinfo:
        search(token_a, project="web\x00app")
    assert [error["loc"] for error in excinfo.value.errors()] == [("project",)]


# --- filters -------------------------------------------------------------------------------------


@pytest.fixture
def token(cast, make_token):
    return make_token(cast.org_a, projects=[cast.project_a])[1]


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


def test_search_defaults_follow_seed_000(settings):
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


@pytest.mark.django_db(transaction=True)  # the writer thread uses its own connection
def test_a_searchs_usage_signals_are_written_behind_with_the_values_it_returned(cast, make_token, monkeypatch):
    from memories.signals import services

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



@pytest.mark.parametrize("scope", ["project", "team", "org", "all"])
def test_the_raw_sql_reach_selects_exactly_what_the_orm_reach_does(cascade, cast, make_token, scope):
    from django.db import connection

    from memories.core.selectors import Reach
    from memories.search.selectors import _reach_sql

    p1, p2, team = cascade["p1"], cascade["p2"], cascade["team"]
    reaches = [
        Reach(None, None),  # an org-wide token
        Reach(frozenset({p1.id}), frozenset({team.id})),  # one project (and its team)
        Reach(frozenset({p1.id, p2.id}), frozenset()),  # two projects, no team
        Reach(frozenset(), frozenset({team.id})),  # a team token
    ]
    selected: set[str] = set()
    for reach in reaches:
        in_org = Memory.objects.filter(organization=cast.org_a)
        orm = set(in_org.filter(reach.memory_q(scope)).values_list("id", flat=True))
        params = {
            "org": cast.org_a.id,
            "projects": sorted(reach.project_ids or ()),
            "teams": sorted(reach.team_ids or ()),
        }
        where = _reach_sql(reach, scope)
        sql_text = f"SELECT m.id FROM memories_memory m WHERE m.organization_id = %(org)s AND ({where})"
        with connection.cursor() as cursor:
            cursor.execute(sql_text, params)
            sql = {row[0] for row in cursor.fetchall()}
        assert sql == orm, (reach, scope)
        selected |= sql
    assert selected  # the cascade has memories in every scope


# --- hybrid ranking: BM25 with OR semantics, fusion, folding, usage floor (issue 13) ---------------


def test_a_question_that_shares_only_some_words_with_a_memory_finds_it_first(token):
    wanted = record(
        token, title="Pin the Postgres major version in docker compose",
        description="Upgrades broke local databases", content="Set image: postgres:16 explicitly, never latest.",
    )
    record(token, title="Use feature flags for risky frontend changes", description="Releases",
           content="Wrap the new checkout UI in a flag and roll out gradually.")
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


def test_relevance_is_the_fusion_of_both_legs_and_ranks_by_seed_001s_formula(token, settings):
    record(token)
    other = record(token, title="Jittered backoff for queue consumers", description="Workers",
                   content="Consumers back off with jitter when the broker is down.")
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
        memories_create(principal=token, project=cast.project_a, drafts=[
            memory_draft(title=TITLE.upper(), description=DESCRIPTION, content=CONTENT + "  ", outcome="success")
        ])[0]
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
    different = record(token, title="Retry budget per request", description="Clients",
                       content="Cap total retries per request at three across layers.")
    settings.SEARCH_COLLAPSE_SIMILARITY = 0.9
    result = search(token, min_confidence=0, limit=5)
    folded = {h.memory.id: h.duplicates for h in result.hits}
    assert folded[different.id] == []  # a different memory stays its own result
    (kept,) = {original.id, reworded.id} & set(folded)
    assert folded[kept] == list({original.id, reworded.id} - {kept})


def test_hits_below_the_relevance_floor_get_no_usage_signal(token, settings):
    strong = record(token)
    weak = record(token, title="Jittered sleeps in integration tests", description="Tests",
                  content="Sleep with jitter between polls.")
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

    from memories.search import selectors

    plans: dict[str, list[dict]] = {"terms": [], "text": []}
    real_rows = selectors._rows

    def explained(sql, params):
        kind = "terms" if "/* search:terms */" in sql else "text" if "/* search:text */" in sql else None
        if kind:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
                plans[kind].append(cursor.fetchone()[0][0]["Plan"])
        return real_rows(sql, params)

    monkeypatch.setattr(selectors, "_rows", explained)
    return run(), plans


def _limit_rows(node):
    found = [node["Actual Rows"]] if node["Node Type"] == "Limit" else []
    for child in node.get("Plans", []):
        found += _limit_rows(child)
    return found


def _many(principal, project, word: str, n: int) -> None:
    with transaction.atomic():
        memories_create(principal=principal, project=project, drafts=[
            memory_draft(title=f"{word.title()} policy {i}", description=word, content=f"{word} case {i}",
                         outcome="success")
            for i in range(n)
        ])


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
    from memories.search import selectors as selectors_search

    _many(token, cast.project_a, "kustomize", 40)
    settings.SEARCH_TERM_DF_CAP = 50
    settings.SEARCH_PARALLEL_LEGS = False
    monkeypatch.setattr(selectors_search, "TEXT_MATCH_CAP", 25)
    result, plans = _plans_of_search(monkeypatch, lambda: search(token, "kustomize", min_confidence=0, limit=5))

    assert len(result.hits) == 5
    (text,) = plans["text"]
    assert max(_limit_rows(text)) <= 25  # 40 memories hold the word; 25 are ranked


def test_planner_statistics_give_the_idf_once_the_table_is_analysed(cast, token, settings):
    from django.db import connection

    from memories.search import selectors as selectors_search

    _many(token, cast.project_a, "deploy", 30)
    rare = record(
        token, title="Deploy with Kustomize overlays", description="Deploy", content="Kustomize per env, always."
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")
    settings.SEARCH_TERM_STATISTICS = "auto"
    stats = selectors_search.collection_stats(refresh=True)
    try:
        assert stats is not None and stats.documents >= 31
        assert stats.document_frequency("deploy") > stats.document_frequency("kustomiz")
        result = search(token, "deploy kustomize", explain=True, limit=3, min_confidence=0)
        assert ids(result)[0] == rare.id and result.hits[0].breakdown.lexical_rank == 1
    finally:
        selectors_search._stats_cache = None


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


# --- retrieval modes (seed 002 RetrievalMode) -------------------------------------------------------


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
    assert "state" not in body[tiered["hot"].id]  # seed 000's shape for active memories
    assert Memory.objects.get(pk=tiered["archived"].pk).usage_count == 0
    assert Memory.objects.get(pk=tiered["hot"].pk).usage_count == 1


def test_an_unknown_mode_is_refused_naming_the_field(token):
    with pytest.raises(ValidationError) as excinfo:
        search(token, mode="everything")
    assert [error["loc"] for error in excinfo.value.errors()] == [("mode",)]
