# Every tenant row carries its organization, and every reference between tenant rows is checked with it
# (reasoningbank/sharding.py; docs/operations.md#distributed-by-organization). Here: a token's project and
# team restrictions become explicit tables with the org (as the OAuth connection's did in 0005), the OAuth
# grant and token links gain the connection's org (backfilled from the parent row). Small tables, in one
# transaction; the keys that check them come in 0008, which holds no lock for long.

import django.db.models.deletion
from django.db import migrations, models

from reasoningbank.sharding import SameOrganization

RESTRICTIONS = [("ApiTokenProject", "project"), ("ApiTokenTeam", "team")]
NEW_ORGANIZATION = [  # (model, table, parent table, parent column)
    ("apitokenproject", "accounts_apitoken_projects", "accounts_apitoken", "apitoken_id"),
    ("apitokenteam", "accounts_apitoken_teams", "accounts_apitoken", "apitoken_id"),
    ("oauthgrantlink", "accounts_oauthgrantlink", "accounts_oauthconnection", "connection_id"),
    ("oauthtokenlink", "accounts_oauthtokenlink", "accounts_oauthconnection", "connection_id"),
]
# composite keys made by RunSQL in 0002 and 0005: now declared on the models, the database already has them
EXISTING = [
    ("project", "team", "project_team_same_org"),
    ("oauthconnectionproject", "connection", "oauth_connection_project_connection_same_org"),
    ("oauthconnectionproject", "project", "oauth_connection_project_same_org"),
    ("oauthconnectionteam", "connection", "oauth_connection_team_connection_same_org"),
    ("oauthconnectionteam", "team", "oauth_connection_team_same_org"),
]


def _through(name: str, target: str) -> migrations.CreateModel:
    """The plain many-to-many's table as an explicit model, without the org yet: the same table,
    columns, foreign keys, indexes and unique pair, so the database is left as it is."""
    return migrations.CreateModel(
        name=name,
        fields=[
            ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
            (
                "token",
                models.ForeignKey(
                    db_column="apitoken_id",
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="+",
                    to="accounts.apitoken",
                ),
            ),
            (
                target,
                models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE, related_name="+", to=f"accounts.{target}"
                ),
            ),
        ],
        options={"db_table": f"accounts_apitoken_{target}s", "unique_together": {("token", target)}},
    )


def _organization(null: bool) -> models.ForeignKey:
    return models.ForeignKey(
        null=null, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="accounts.organization"
    )


class Migration(migrations.Migration):
    dependencies = [("accounts", "0006_organization_auto_promote_institutional")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                *[_through(name, target) for name, target in RESTRICTIONS],
                *[
                    migrations.AlterField(
                        model_name="apitoken",
                        name=f"{target}s",
                        field=models.ManyToManyField(
                            blank=True,
                            related_name="api_tokens",
                            through=f"accounts.{name}",
                            to=f"accounts.{target}",
                        ),
                    )
                    for name, target in RESTRICTIONS
                ],
                *[
                    migrations.AddConstraint(model_name=model, constraint=SameOrganization(field=field, name=name))
                    for model, field, name in EXISTING
                ],
            ],
        ),
        *[
            migrations.AddField(model_name=model, name="organization", field=_organization(True))
            for model, *_ in NEW_ORGANIZATION
        ],
        # the backfill: each row takes its parent's org (a few rows per token or connection)
        *[
            migrations.RunSQL(
                f"UPDATE {table} AS r SET organization_id = p.organization_id "
                f"FROM {parent} AS p WHERE p.id = r.{column}",
                migrations.RunSQL.noop,
            )
            for _model, table, parent, column in NEW_ORGANIZATION
        ],
        *[
            migrations.AlterField(model_name=model, name="organization", field=_organization(False))
            for model, *_ in NEW_ORGANIZATION
        ],
        migrations.AlterUniqueTogether(name="apitokenproject", unique_together={("token", "project", "organization")}),
        migrations.AlterUniqueTogether(name="apitokenteam", unique_together={("token", "team", "organization")}),
        migrations.AlterUniqueTogether(
            name="oauthconnectionproject", unique_together={("connection", "project", "organization")}
        ),
        migrations.AlterUniqueTogether(
            name="oauthconnectionteam", unique_together={("connection", "team", "organization")}
        ),
    ]
