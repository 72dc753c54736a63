"""The sharding keys migration fills the new organization columns from the parent row
(docs/operations.md#what-the-sharding-keys-migrations-cost), and can be undone."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.models import ApiTokenProject, ApiTokenTeam

BEFORE = [("accounts", "0006_organization_auto_promote_institutional")]


def migrate(targets: list[tuple[str, str]]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor


@pytest.mark.django_db(transaction=True)
def test_a_tokens_existing_restrictions_take_the_tokens_organization_when_migrated() -> None:
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old = migrate(BEFORE).loader.project_state(BEFORE).apps
    try:
        organization = old.get_model("accounts", "Organization").objects.create(slug="acme", name="Acme")
        other = old.get_model("accounts", "Organization").objects.create(slug="globex", name="Globex")
        project = old.get_model("accounts", "Project").objects.create(organization=organization, slug="web", name="W")
        team = old.get_model("accounts", "Team").objects.create(organization=organization, slug="core", name="Core")
        token_model = old.get_model("accounts", "ApiToken")
        token = token_model.objects.create(organization=organization, label="ci", prefix="rb_", digest="a" * 64)
        token_model.objects.create(organization=other, label="other", prefix="rb_", digest="b" * 64)
        token.projects.add(project)  # the plain many-to-many of before: no organization on the row
        token.teams.add(team)
    finally:
        migrate(latest)

    assert [(r.token_id, r.project_id, r.organization_id) for r in ApiTokenProject.objects.all()] == [
        (token.id, project.id, organization.id)
    ]
    assert [(r.token_id, r.team_id, r.organization_id) for r in ApiTokenTeam.objects.all()] == [
        (token.id, team.id, organization.id)
    ]
