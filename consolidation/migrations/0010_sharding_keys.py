# Every reference between tenant rows is checked with the organization, and every unique key includes it
# (reasoningbank/sharding.py; docs/operations.md#distributed-by-organization). Not atomic: the neighbour
# edges and review items of a big bank are many rows, so unique indexes are built CONCURRENTLY and keys
# are added NOT VALID and validated while reads and writes go on (each step commits on its own).

import django.db.models.deletion
from django.db import migrations, models

from reasoningbank.sharding import SameOrganization, SameOrganizationAddWithoutLock, UniqueAddWithoutLock

CASCADE, SET_NULL = django.db.models.deletion.CASCADE, django.db.models.deletion.SET_NULL

NEW = [
    ("consolidationrun", "project", "run_project_same_org"),
    ("consolidationrun", "requested_by_token", "run_requested_by_token_same_org"),
    ("projectconsolidationsettings", "project", "consolidation_settings_project_same_org"),
    ("neighbourgraph", "project", "neighbour_graph_project_same_org"),
    ("reviewitem", "project", "reviewitem_project_same_org"),
    ("reviewitem", "first", "reviewitem_first_same_org"),
    ("reviewitem", "second", "reviewitem_second_same_org"),
    ("reviewitem", "run", "reviewitem_run_same_org"),
]


def _fk(to: str, on_delete: object, related_name: str, *, null: bool = False) -> models.ForeignKey:
    return models.ForeignKey(
        to=to, on_delete=on_delete, related_name=related_name, db_constraint=False, null=null, blank=null
    )


def _project_key(related_name: str) -> models.OneToOneField:
    return models.OneToOneField(
        db_constraint=False,
        on_delete=CASCADE,
        primary_key=True,
        related_name=related_name,
        serialize=False,
        to="accounts.project",
    )


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("accounts", "0008_sharding_keys_references"),
        ("consolidation", "0009_run_waiting_for_batch"),
        ("memories", "0017_sharding_keys"),
    ]

    operations = [
        # new unique keys before the old ones go, so that uniqueness never lapses
        *[
            UniqueAddWithoutLock(model_name=model, constraint=models.UniqueConstraint(fields=fields, name=name))
            for model, fields, name in [
                ("consolidationrun", ("id", "organization"), "run_id_org_unique"),
                ("neighbouredge", ("project", "source", "target", "organization"), "neighbouredge_pair_once"),
                ("reviewitem", ("first", "second", "organization"), "reviewitem_pair_once_in_org"),
            ]
        ],
        # a partial unique index (at most one active run per project): a few rows, built at once
        migrations.AddConstraint(
            model_name="consolidationrun",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status__in", ["queued", "running", "waiting_for_budget", "waiting_for_batch"])),
                fields=("project", "organization"),
                name="run_one_active_in_project",
            ),
        ),
        migrations.RemoveConstraint(model_name="consolidationrun", name="run_one_active_per_project"),
        migrations.RemoveConstraint(model_name="neighbouredge", name="neighbouredge_project_pair"),
        migrations.RemoveConstraint(model_name="reviewitem", name="reviewitem_pair_once"),
        # Django's single-column keys: the composite ones check the same and more
        migrations.AlterField(
            "consolidationrun",
            "project",
            _fk("accounts.project", CASCADE, "consolidation_runs", null=True),
        ),
        migrations.AlterField(
            "consolidationrun", "requested_by_token", _fk("accounts.apitoken", SET_NULL, "+", null=True)
        ),
        migrations.AlterField("neighbourgraph", "project", _project_key("+")),
        migrations.AlterField("projectconsolidationsettings", "project", _project_key("consolidation")),
        migrations.AlterField("reviewitem", "first", _fk("memories.memory", CASCADE, "+")),
        migrations.AlterField("reviewitem", "project", _fk("accounts.project", CASCADE, "review_items", null=True)),
        migrations.AlterField("reviewitem", "run", _fk("consolidation.consolidationrun", SET_NULL, "+", null=True)),
        migrations.AlterField("reviewitem", "second", _fk("memories.memory", CASCADE, "+", null=True)),
        *[
            SameOrganizationAddWithoutLock(model_name=model, constraint=SameOrganization(field=field, name=name))
            for model, field, name in NEW
        ],
    ]
