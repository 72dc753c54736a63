# Connected apps' project/team restrictions kept inside the connection's org by PostgreSQL
# (docs/tenancy.md#the-access-layer), as memories/0002 does for memories: the many-to-many tables gain
# the org, and composite foreign keys tie (connection, org) to the connection and (project or team, org)
# to the project or team.

import django.db.models.deletion
from django.db import migrations, models

TABLES = [
    ("accounts_oauthconnection_projects", "project", "accounts_project"),
    ("accounts_oauthconnection_teams", "team", "accounts_team"),
]


def _through(name: str, target: str) -> migrations.CreateModel:
    """The plain many-to-many's table as an explicit model, without the org yet: the same table,
    columns, foreign keys, indexes and unique pair, so the database is left as it is."""
    return migrations.CreateModel(
        name=name,
        fields=[
            ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
            (
                "connection",
                models.ForeignKey(
                    db_column="oauthconnection_id",
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="+",
                    to="accounts.oauthconnection",
                ),
            ),
            (
                target,
                models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE, related_name="+", to=f"accounts.{target}"
                ),
            ),
        ],
        options={"db_table": f"accounts_oauthconnection_{target}s", "unique_together": {("connection", target)}},
    )


def _organization(null: bool) -> models.ForeignKey:
    return models.ForeignKey(
        null=null, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="accounts.organization"
    )


class Migration(migrations.Migration):
    dependencies = [("accounts", "0004_oauth_connections")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                _through("OAuthConnectionProject", "project"),
                _through("OAuthConnectionTeam", "team"),
                migrations.AlterField(
                    model_name="oauthconnection",
                    name="projects",
                    field=models.ManyToManyField(
                        blank=True,
                        related_name="oauth_connections",
                        through="accounts.OAuthConnectionProject",
                        to="accounts.project",
                    ),
                ),
                migrations.AlterField(
                    model_name="oauthconnection",
                    name="teams",
                    field=models.ManyToManyField(
                        blank=True,
                        related_name="oauth_connections",
                        through="accounts.OAuthConnectionTeam",
                        to="accounts.team",
                    ),
                ),
            ],
        ),
        migrations.AddField(model_name="oauthconnectionproject", name="organization", field=_organization(True)),
        migrations.AddField(model_name="oauthconnectionteam", name="organization", field=_organization(True)),
        *[
            migrations.RunSQL(
                f"UPDATE {table} AS r SET organization_id = c.organization_id "
                f"FROM accounts_oauthconnection AS c WHERE c.id = r.oauthconnection_id",
                migrations.RunSQL.noop,
            )
            for table, _column, _target in TABLES
        ],
        migrations.AlterField(model_name="oauthconnectionproject", name="organization", field=_organization(False)),
        migrations.AlterField(model_name="oauthconnectionteam", name="organization", field=_organization(False)),
        migrations.AddConstraint(
            model_name="oauthconnection",
            constraint=models.UniqueConstraint(fields=("id", "organization"), name="oauth_connection_id_org_unique"),
        ),
        *[
            migrations.RunSQL(
                f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({column}, organization_id) "
                f"REFERENCES {target} (id, organization_id) DEFERRABLE INITIALLY DEFERRED",
                f"ALTER TABLE {table} DROP CONSTRAINT {name}",
            )
            for table, column, target, name in [
                (
                    TABLES[0][0],
                    "oauthconnection_id",
                    "accounts_oauthconnection",
                    "oauth_connection_project_connection_same_org",
                ),
                (TABLES[0][0], "project_id", "accounts_project", "oauth_connection_project_same_org"),
                (
                    TABLES[1][0],
                    "oauthconnection_id",
                    "accounts_oauthconnection",
                    "oauth_connection_team_connection_same_org",
                ),
                (TABLES[1][0], "team_id", "accounts_team", "oauth_connection_team_same_org"),
            ]
        ],
    ]
