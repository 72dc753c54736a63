# The keys of the accounts' tenant tables (reasoningbank/sharding.py; docs/operations.md#distributed-by-organization):
# the token digest becomes unique with the org, tokens gain the (id, organization) key their references
# use, and Django's single-column foreign keys between tenant tables give way to composite ones, which
# check the same and more.
#
# Not atomic: every request reads tokens and projects, so no lock may be held across the migration. Each
# unique index is built CONCURRENTLY (new before old, so uniqueness never lapses), each key is added
# NOT VALID and validated while reads and writes go on (the audit log grows with every write), and every
# step commits on its own (docs/operations.md#what-the-sharding-keys-migrations-cost).

import django.db.models.deletion
from django.db import migrations, models

from reasoningbank.sharding import SameOrganization, SameOrganizationAddWithoutLock, UniqueAddWithoutLock

NEW = [
    ("apitokenproject", "token", "apitoken_project_token_same_org"),
    ("apitokenproject", "project", "apitoken_project_same_org"),
    ("apitokenteam", "token", "apitoken_team_token_same_org"),
    ("apitokenteam", "team", "apitoken_team_same_org"),
    ("oauthgrantlink", "connection", "oauth_grant_link_same_org"),
    ("oauthtokenlink", "connection", "oauth_token_link_same_org"),
    ("auditevent", "actor_token", "audit_actor_token_same_org"),
]


def _unconstrained(to: str, **options: object) -> models.ForeignKey:
    return models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, db_constraint=False, to=to, **options)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("accounts", "0007_sharding_keys")]

    operations = [
        UniqueAddWithoutLock(
            model_name="apitoken",
            constraint=models.UniqueConstraint(fields=("digest", "organization"), name="apitoken_digest_unique"),
        ),
        UniqueAddWithoutLock(
            model_name="apitoken",
            constraint=models.UniqueConstraint(fields=("id", "organization"), name="apitoken_id_org_unique"),
        ),
        migrations.AlterField(model_name="apitoken", name="digest", field=models.CharField(max_length=64)),
        # Django's single-column keys between tenant tables: the composite ones check the same and more
        migrations.AlterField(
            model_name="project",
            name="team",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="projects",
                to="accounts.team",
            ),
        ),
        *[
            migrations.AlterField(
                model_name=model,
                name="connection",
                field=_unconstrained("accounts.oauthconnection", db_column="oauthconnection_id", related_name="+"),
            )
            for model in ("oauthconnectionproject", "oauthconnectionteam")
        ],
        migrations.AlterField(
            model_name="oauthconnectionproject",
            name="project",
            field=_unconstrained("accounts.project", related_name="+"),
        ),
        migrations.AlterField(
            model_name="oauthconnectionteam", name="team", field=_unconstrained("accounts.team", related_name="+")
        ),
        migrations.AlterField(
            model_name="oauthgrantlink",
            name="connection",
            field=_unconstrained("accounts.oauthconnection", related_name="+"),
        ),
        migrations.AlterField(
            model_name="oauthtokenlink",
            name="connection",
            field=_unconstrained("accounts.oauthconnection", related_name="token_links"),
        ),
        *[
            migrations.AlterField(
                model_name=model,
                name="token",
                field=_unconstrained("accounts.apitoken", db_column="apitoken_id", related_name="+"),
            )
            for model in ("apitokenproject", "apitokenteam")
        ],
        migrations.AlterField(
            model_name="apitokenproject", name="project", field=_unconstrained("accounts.project", related_name="+")
        ),
        migrations.AlterField(
            model_name="apitokenteam", name="team", field=_unconstrained("accounts.team", related_name="+")
        ),
        migrations.AlterField(
            model_name="auditevent",
            name="actor_token",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="accounts.apitoken",
            ),
        ),
        *[
            SameOrganizationAddWithoutLock(model_name=model, constraint=SameOrganization(field=field, name=name))
            for model, field, name in NEW
        ],
    ]
