"""Who a search reaches (docs/search.md, docs/tenancy.md): the scope cascade (project, team, org),
another organization's memories never, and the raw SQL reach of the hybrid legs selecting exactly what
the ORM's does."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from memories.models import Memory, MemorySignal
from reasoningbank.errors import NotFound
from tests.memories.search.search_setup import ids, record, search

pytestmark = pytest.mark.usefixtures("every_memory_its_own_result")


# --- the scope cascade ---------------------------------------------------------------------------


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
