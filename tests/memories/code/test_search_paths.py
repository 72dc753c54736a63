"""Search's ``paths`` (docs/code-memory.md#browse-by-code): memories anchored on the files or under the
directories an agent names rank higher by the documented factor, shown in explain; with ``paths_only``
nothing else is returned."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memories.code.paths import ANCHOR_PATH_BOOST
from memories.embedding import query_embed
from memories.models import Memory
from memories.models_code import MemoryAnchor
from memories.search.contracts import SearchInput, memory_search_run
from memories.search.selectors import memory_search_rank
from reasoningbank.errors import Rejected
from tests.memories.search.search_setup import CONTENT, DESCRIPTION, QUERY, TITLE, ids, record, search


@pytest.fixture(autouse=True)
def every_memory_its_own_result(settings):
    """One text recorded several times on purpose: near copies are neither folded nor refused."""
    settings.SEARCH_COLLAPSE_DUPLICATES = False
    settings.WRITE_GATE_NEAR_COPY_SIMILARITY = 1.0


@pytest.fixture
def token(cast, make_token):
    return make_token(cast.org_a, projects=[cast.project_a])[1]


def anchor(memory: Memory, path: str, **fields) -> MemoryAnchor:
    return MemoryAnchor.objects.create(organization=memory.organization, memory=memory, path=path, **fields)


def test_a_memory_anchored_on_a_named_file_ranks_first_by_the_documented_factor(token):
    plain = record(token)
    anchored = record(token, title=f"{TITLE} in the client")
    anchor(anchored, "src/http/client.py", symbol="Client.send")
    without = search(token)
    assert ids(without)[0] == plain.id  # the closer title wins on words alone

    result = search(token, paths=["src/http/client.py"], explain=True)
    assert ids(result)[0] == anchored.id
    boosted = {hit.memory.id: hit.breakdown for hit in result.hits}
    assert boosted[anchored.id].path_boost == ANCHOR_PATH_BOOST
    assert boosted[plain.id].path_boost == 1.0
    for b in boosted.values():  # the boost is one more factor of the score, nothing else
        factors = b.relevance * b.confidence * b.recency_boost * b.scope_weight * b.consolidated_boost
        assert b.score == pytest.approx(factors * b.path_boost, rel=1e-6)


def test_a_directory_with_a_trailing_slash_boosts_everything_under_it_and_nothing_beside_it(token):
    deep = record(token, title=f"{TITLE} deep in the api")
    beside = record(token, title=f"{TITLE} next to the api")
    anchor(deep, "src/api/v1/views.py")
    anchor(beside, "src/api_old/views.py")
    breakdowns = {hit.memory.id: hit.breakdown for hit in search(token, paths=["src/api/"]).hits}
    assert breakdowns[deep.id].path_boost == ANCHOR_PATH_BOOST
    assert breakdowns[beside.id].path_boost == 1.0


def test_paths_only_returns_only_anchored_memories_even_past_the_vector_legs_candidates(token):
    # many closer memories than the anchored one: it would not be among the vector leg's candidates
    for n in range(30):
        record(token, title=f"{TITLE} variant {n}")
    far = record(
        token,
        title="Backoff for the payments client",
        description="When the payments provider answers slowly",
        content="Retry the payment call with jittered backoff; never more than three attempts.",
    )
    anchor(far, "billing/payments.py")
    assert far.id not in ids(search(token, limit=5))

    only = search(token, paths=["billing/payments.py"], paths_only=True)
    assert ids(only) == [far.id]
    assert "path" in only.hits[0].matched_by
    # without paths_only the path leg brings it among the candidates the many closer ones crowd out
    query = SearchInput(query=QUERY, paths=["billing/payments.py"], limit=5).to_query()
    ranked = memory_search_rank(token, query, query_vector=query_embed(QUERY)).hits
    assert "path" in next(hit for hit in ranked if hit.memory.id == far.id).matched_by
    plain = memory_search_rank(token, SearchInput(query=QUERY, limit=5).to_query(), query_vector=query_embed(QUERY))
    assert far.id not in {hit.memory.id for hit in plain.hits}


def test_an_anchored_memory_unrelated_to_the_query_is_not_brought_in(token):
    unrelated = record(
        token,
        title="Colour palette of the marketing site",
        description="When choosing brand colours",
        content="Use the teal from the style guide for every primary button on the landing page.",
    )
    anchor(unrelated, "src/http/client.py")
    assert unrelated.id not in ids(search(token, paths=["src/http/client.py"]))
    assert ids(search(token, paths=["src/http/client.py"], paths_only=True)) == []


def test_paths_only_without_paths_is_refused_naming_the_field(token):
    with pytest.raises(Rejected) as refused:
        memory_search_run(token, SearchInput(query=QUERY, paths_only=True))
    assert refused.value.field == "paths_only"


def test_a_path_outside_the_repository_is_refused_naming_paths():
    with pytest.raises(ValidationError) as refused:
        SearchInput(query=QUERY, paths=["src/ok.py", "../../etc/passwd"])
    assert refused.value.errors()[0]["loc"][0] == "paths"
    assert "repository-relative" in str(refused.value)


def test_the_contract_shows_the_path_boost_in_explain(token):
    anchored = record(token)
    anchor(anchored, "src/http/client.py")
    out = memory_search_run(token, SearchInput(query=QUERY, paths=["src/http/"], explain=True))
    assert out.memories[0].id == anchored.id
    assert out.memories[0].explain is not None and out.memories[0].explain.path_boost == ANCHOR_PATH_BOOST


def test_another_organizations_anchor_on_the_same_path_boosts_nothing_and_is_never_returned(cast, token, make_token):
    _, charlie = make_token(cast.org_b, projects=[cast.project_b])
    theirs = record(charlie, title=TITLE, description=DESCRIPTION, content=CONTENT)
    anchor(theirs, "src/http/client.py")
    ours = record(token, title=f"{TITLE} here")
    result = search(token, paths=["src/http/client.py"])
    assert ids(result) == [ours.id]
    assert result.hits[0].breakdown.path_boost == 1.0
    assert ids(search(token, paths=["src/http/client.py"], paths_only=True)) == []
