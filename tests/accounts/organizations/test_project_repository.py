"""A project tied to its repository's remote (docs/code-memory.md#projects-by-repository): set over REST
(`PATCH /api/v1/projects/<slug>`, admin scope) and from the dashboard's project settings (admins), stored
normalised, unique in the organization (a 409 naming the other project), untied with an empty value; another
organization's project is a 404 and is left as it was."""

from __future__ import annotations

import html
from typing import Any

import pytest

from accounts.models import AuditEvent, Project
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(cast: Any, token_client: Any) -> Any:
    return token_client(cast.org_a, scopes=["admin", "memories:read"])


def patch(client: Any, slug: str, repository: Any) -> Any:
    return client.patch(f"/api/v1/projects/{slug}", {"repository": repository}, format="json")


def test_an_admin_token_ties_a_project_to_its_remote_stored_normalised(cast: Any, admin_client: Any) -> None:
    response = patch(admin_client, "web-app", "git@github.com:Acme/web.git")
    assert response.status_code == 200, response.json()
    assert response.json()["repository"] == "github.com/Acme/web"
    cast.project_a.refresh_from_db()
    assert cast.project_a.repository == "github.com/Acme/web"
    assert admin_client.get("/api/v1/projects/web-app").json()["repository"] == "github.com/Acme/web"
    assert admin_client.get("/api/v1/projects").json()["results"][0]["repository"] == "github.com/Acme/web"
    event = AuditEvent.objects.get(organization=cast.org_a, verb="project.repository")
    assert event.data == {"before": "", "after": "github.com/Acme/web"}


def test_an_empty_value_unties_it(cast: Any, admin_client: Any) -> None:
    patch(admin_client, "web-app", "https://github.com/acme/web")
    assert patch(admin_client, "web-app", "").json()["repository"] == ""
    cast.project_a.refresh_from_db()
    assert cast.project_a.repository == ""


def test_a_remote_tied_elsewhere_is_a_409_naming_that_project(cast: Any, admin_client: Any) -> None:
    ProjectFactory(organization=cast.org_a, slug="api")
    patch(admin_client, "api", "ssh://git@github.com:22/acme/web.git")
    response = patch(admin_client, "web-app", "https://alice@github.com/acme/web/")
    assert response.status_code == 409
    assert list(response.json()["errors"]) == ["repository"]
    assert "'api'" in response.json()["detail"]
    cast.project_a.refresh_from_db()
    assert cast.project_a.repository == ""


def test_another_org_may_tie_the_same_remote(cast: Any, admin_client: Any, token_client: Any) -> None:
    patch(admin_client, "web-app", "github.com/acme/web")
    theirs = token_client(cast.org_b, scopes=["admin", "memories:read"])
    assert patch(theirs, "billing", "git@github.com:acme/web.git").status_code == 200


@pytest.mark.parametrize(
    ("repository", "status"),
    [("/home/alice/web", 422), ("not a remote", 422), (42, 400), (None, 400), ("x" * 601, 400)],
)
def test_what_is_not_a_remote_is_refused_naming_repository(admin_client: Any, repository: Any, status: int) -> None:
    response = patch(admin_client, "web-app", repository)
    assert response.status_code == status
    assert list(response.json()["errors"]) == ["repository"]


def test_an_unknown_field_is_refused(admin_client: Any) -> None:
    response = admin_client.patch("/api/v1/projects/web-app", {"repo": "github.com/a/b"}, format="json")
    assert response.status_code == 400 and "repo" in response.json()["errors"]


def test_tying_needs_the_admin_scope(cast: Any, token_client: Any) -> None:
    agent = token_client(cast.org_a)  # the default scopes: read, write, consolidation
    assert patch(agent, "web-app", "github.com/acme/web").status_code == 403
    assert agent.get("/api/v1/projects/web-app").status_code == 200
    cast.project_a.refresh_from_db()
    assert cast.project_a.repository == ""


@pytest.mark.cross_tenant("api-project")
def test_another_orgs_project_is_a_404_and_stays_as_it_was(cast: Any, admin_client: Any) -> None:
    assert patch(admin_client, "billing", "github.com/acme/web").status_code == 404
    assert admin_client.get("/api/v1/projects/billing").status_code == 404
    cast.project_b.refresh_from_db()
    assert cast.project_b.repository == ""


# --- the dashboard -------------------------------------------------------------------------------------


def test_an_admin_ties_a_project_from_the_project_settings(client: Any, cast: Any) -> None:
    client.force_login(cast.alice)
    page = html.unescape(client.get("/settings/projects/").content.decode())
    assert f'action="/settings/projects/{cast.project_a.pk}/repository/"' in page
    url = f"/settings/projects/{cast.project_a.pk}/repository/"
    response = client.post(url, {"repository": "git@github.com:acme/web.git"})
    assert response.status_code == 302
    cast.project_a.refresh_from_db()
    assert cast.project_a.repository == "github.com/acme/web"
    page = html.unescape(client.get("/settings/projects/").content.decode())
    assert "is tied to github.com/acme/web" in page and 'value="github.com/acme/web"' in page


def test_the_dashboard_shows_a_clash_or_a_bad_remote_as_an_error(client: Any, cast: Any) -> None:
    other = ProjectFactory(organization=cast.org_a, slug="api", repository="github.com/acme/web")
    client.force_login(cast.alice)
    clash = client.post(f"/settings/projects/{cast.project_a.pk}/repository/", {"repository": "github.com/acme/web"})
    assert clash.status_code == 409 and "already tied to project 'api'" in html.unescape(clash.content.decode())
    bad = client.post(f"/settings/projects/{cast.project_a.pk}/repository/", {"repository": "/home/me/web"})
    assert bad.status_code == 422 and "is not a git remote" in html.unescape(bad.content.decode())
    assert Project.objects.get(pk=cast.project_a.pk).repository == "" and other.repository == "github.com/acme/web"


def test_a_viewer_sees_the_remote_but_may_not_change_it(client: Any, cast: Any) -> None:
    Project.objects.filter(pk=cast.project_a.pk).update(repository="github.com/acme/web")
    client.force_login(cast.bob)
    page = html.unescape(client.get("/settings/projects/").content.decode())
    assert "github.com/acme/web" in page and "/repository/" not in page
    response = client.post(f"/settings/projects/{cast.project_a.pk}/repository/", {"repository": ""})
    assert response.status_code == 403
    assert Project.objects.get(pk=cast.project_a.pk).repository == "github.com/acme/web"


@pytest.mark.cross_tenant("settings-project-repository")
def test_another_orgs_project_is_a_404_from_the_dashboard(client: Any, cast: Any) -> None:
    client.force_login(cast.alice)
    response = client.post(f"/settings/projects/{cast.project_b.pk}/repository/", {"repository": "github.com/a/b"})
    assert response.status_code == 404
    assert Project.objects.get(pk=cast.project_b.pk).repository == ""
