"""Fixtures of the search tests (test_search.py, test_search_reach.py, test_search_hybrid.py)."""

from __future__ import annotations

import pytest

from tests.factories import ProjectFactory, TeamFactory
from tests.memories.search.search_setup import record


@pytest.fixture
def every_memory_its_own_result(settings):
    """These tests record the same text in several places on purpose (to compare scopes, confidence,
    recency): near-identical hits are not folded here, except in the tests of that folding, and the
    write gate records near copies instead of answering with the first (tests/memories/core/test_gate.py)."""
    settings.SEARCH_COLLAPSE_DUPLICATES = False
    settings.WRITE_GATE_NEAR_COPY_SIMILARITY = 1.0


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


@pytest.fixture
def token(cast, make_token):
    return make_token(cast.org_a, projects=[cast.project_a])[1]
