"""The sharding keys migration fills the new organization columns from the parent row
(docs/operations.md#what-the-sharding-keys-migrations-cost).

It runs on a scratch database of its own with only the accounts app's chain (and what it depends on):
migrating the test database back to before it would unapply and reapply every later migration of
every app, minutes of the suite for one data migration."""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations.executor import MigrationExecutor

from accounts.models import ApiTokenProject, ApiTokenTeam

BEFORE = [("accounts", "0006_organization_auto_promote_institutional")]
SCRATCH = "sharding_scratch"


@pytest.fixture
def scratch(db, settings) -> Iterator[BaseDatabaseWrapper]:
    """An empty database on the tests' server, as its own connection alias."""
    settings.DATABASE_ROUTERS = []  # the replica router lets only the default alias migrate
    name = f"rb_sharding_{os.getpid()}"
    params = connection.settings_dict
    admin = {"host": params["HOST"], "port": params["PORT"] or None, "user": params["USER"], "dbname": "postgres"}
    with psycopg.connect(**admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    wrapper = type(connections["default"])({**params, "NAME": name}, alias=SCRATCH)
    connections[SCRATCH] = wrapper
    try:
        yield wrapper
    finally:
        wrapper.close()
        del connections[SCRATCH]
        with psycopg.connect(**admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_tokens_existing_restrictions_take_the_tokens_organization_when_migrated(scratch) -> None:
    old = MigrationExecutor(scratch)
    old.migrate(BEFORE)
    apps = old.loader.project_state(BEFORE).apps
    organizations = apps.get_model("accounts", "Organization").objects.using(SCRATCH)
    organization = organizations.create(slug="acme", name="Acme")
    other = organizations.create(slug="globex", name="Globex")
    project = apps.get_model("accounts", "Project").objects.using(SCRATCH).create(
        organization=organization, slug="web", name="W"
    )
    team = apps.get_model("accounts", "Team").objects.using(SCRATCH).create(
        organization=organization, slug="core", name="Core"
    )
    tokens = apps.get_model("accounts", "ApiToken").objects.using(SCRATCH)
    token = tokens.create(organization=organization, label="ci", prefix="rb_", digest="a" * 64)
    tokens.create(organization=other, label="other", prefix="rb_", digest="b" * 64)
    token.projects.add(project)  # the plain many-to-many of before: no organization on the row
    token.teams.add(team)

    latest = MigrationExecutor(scratch)
    latest.migrate([node for node in latest.loader.graph.leaf_nodes() if node[0] == "accounts"])

    assert [(r.token_id, r.project_id, r.organization_id) for r in ApiTokenProject.objects.using(SCRATCH)] == [
        (token.id, project.id, organization.id)
    ]
    assert [(r.token_id, r.team_id, r.organization_id) for r in ApiTokenTeam.objects.using(SCRATCH)] == [
        (token.id, team.id, organization.id)
    ]
