"""The commands run.sh's banner prints, as written, in a second shell beside run.sh: the organization, project and
tokens they create work against the running service."""

from __future__ import annotations

from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, rest


def test_the_readme_commands_create_an_org_a_project_and_tokens_beside_run_sh(readme_setup: Setup) -> None:
    assert not readme_setup.failures, "\n".join(readme_setup.failures)
    assert readme_setup.project_token.startswith("rb_")
    assert readme_setup.org_token.startswith("rb_")
    assert readme_setup.project_token != readme_setup.org_token


def test_the_printed_tokens_work_against_the_running_service(service: Service, acme: Setup) -> None:
    with rest(service, acme.project_token) as client:
        me = client.get("/api/v1/me")
        assert me.status_code == 200, me.text
        assert me.json()["organization"]["slug"] == "acme"
        assert [p["slug"] for p in me.json()["projects"]] == ["web-app"]
    with rest(service, acme.org_token) as client:
        me = client.get("/api/v1/me")
        assert me.status_code == 200, me.text
        assert me.json()["organization"] == {"slug": "acme", "name": me.json()["organization"]["name"], "plan": "pro"}
        assert me.json()["token"]["restricted"] is False
