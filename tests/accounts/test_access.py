import pytest
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404

from accounts.access import access_get, access_project, reachable_projects
from accounts.api_base import OrgAPIView
from accounts.models import Project
from tests.factories import ProjectFactory, TeamFactory


def test_another_orgs_object_is_a_404_like_a_missing_one(cast):
    assert access_get(Project, cast.org_a, pk=cast.project_a.pk) == cast.project_a
    with pytest.raises(Http404):
        access_get(Project, cast.org_a, pk=cast.project_b.pk)
    with pytest.raises(Http404):
        access_get(Project, cast.org_a, pk=999_999)
    with pytest.raises(Http404):
        access_get(Project, cast.org_a, pk="not-a-number")


def test_an_unrestricted_token_reaches_every_project_of_its_org_only(cast, make_token):
    ProjectFactory(organization=cast.org_a, slug="mobile")
    _, principal = make_token(cast.org_a)
    assert sorted(p.slug for p in reachable_projects(principal)) == ["mobile", "web-app"]


def test_a_project_restricted_token_reaches_only_its_projects(cast, make_token):
    other = ProjectFactory(organization=cast.org_a, slug="mobile")
    _, principal = make_token(cast.org_a, projects=[cast.project_a])
    assert [p.slug for p in reachable_projects(principal)] == ["web-app"]
    with pytest.raises(Http404):
        access_project(principal, other.slug)


def test_a_team_restricted_token_reaches_the_teams_projects(cast, make_token):
    cast.org_a.plan = "teams"
    team = TeamFactory(organization=cast.org_a, slug="platform")
    ProjectFactory(organization=cast.org_a, slug="infra", team=team)
    _, principal = make_token(cast.org_a, teams=[team])
    assert [p.slug for p in reachable_projects(principal)] == ["infra"]


def test_a_viewer_can_read_but_not_write(cast):
    bob = cast.principal(cast.bob)
    assert bob.has_scope("memories:read")
    assert not bob.has_scope("memories:write")
    assert cast.principal(cast.alice).has_scope("memories:write")


def test_a_view_that_forgets_to_declare_a_scope_fails_when_defined():
    with pytest.raises(ImproperlyConfigured, match="required_scopes"):

        class Careless(OrgAPIView):
            required_scopes = {"GET": "memories:read"}

            def post(self, request):  # no scope declared for POST
                return None
