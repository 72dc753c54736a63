# Every reference between tenant rows is checked with the organization, and every unique key includes it
# (reasoningbank/sharding.py; docs/operations.md#distributed-by-organization). Django's single-column
# foreign keys give way to composite ones, which check the same and more.
#
# Not atomic: the memory, signal, link and session tables are the big ones (a million memories in one
# org), so each unique index is built CONCURRENTLY and each key is added NOT VALID and validated while
# reads and writes go on; every step commits on its own (docs/operations.md#what-the-sharding-keys-migrations-cost).

import django.db.models.deletion
from django.db import migrations, models

from reasoningbank.sharding import SameOrganization, SameOrganizationAddWithoutLock, UniqueAddWithoutLock

CASCADE, SET_NULL, PROTECT = (
    django.db.models.deletion.CASCADE,
    django.db.models.deletion.SET_NULL,
    django.db.models.deletion.PROTECT,
)


def _fk(to: str, on_delete: object, related_name: str, *, null: bool = False, **options: object) -> models.ForeignKey:
    return models.ForeignKey(
        to=to, on_delete=on_delete, related_name=related_name, db_constraint=False, null=null, blank=null, **options
    )


# composite keys memories/0002 made with RunSQL: declared on the models now, already in the database
EXISTING = [
    ("memory", "project", "memory_project_same_org"),
    ("memory", "team", "memory_team_same_org"),
    ("agentsession", "project", "session_project_same_org"),
]
NEW = [
    ("memory", "consolidated_into", "memory_consolidated_into_same_org"),
    ("memory", "source_session", "memory_source_session_same_org"),
    ("memory", "created_by_token", "memory_created_by_token_same_org"),
    ("agentsession", "submitted_by_token", "session_submitted_by_token_same_org"),
    ("memorylink", "source", "memorylink_source_same_org"),
    ("memorylink", "target", "memorylink_target_same_org"),
    ("memorysignal", "memory", "signal_memory_same_org"),
    ("memorysignal", "project", "signal_project_same_org"),
    ("memorysignalaggregate", "memory", "signal_aggregate_memory_same_org"),
    ("memorysummary", "project", "summary_project_same_org"),
    ("memorysummary", "memory", "summary_memory_same_org"),
    ("projectsignalweights", "project", "weights_project_same_org"),
    ("sessionmemoryuse", "memory", "session_use_memory_same_org"),
]


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("accounts", "0008_sharding_keys_references"),
        ("memories", "0016_session_waiting_for_budget"),
    ]

    operations = [
        # the targets of the composite keys, then the unique keys that now include the org (new before old,
        # so that uniqueness never lapses)
        *[
            UniqueAddWithoutLock(model_name=model, constraint=models.UniqueConstraint(fields=fields, name=name))
            for model, fields, name in [
                ("memory", ("id", "organization"), "memory_id_org_unique"),
                ("agentsession", ("id", "organization"), "session_id_org_unique"),
                ("agentsession", ("project", "external_id", "organization"), "session_external_id_once_in_project"),
                ("memorylink", ("source", "target", "kind", "organization"), "memorylink_once"),
                ("memorysummary", ("memory", "organization"), "summary_once_per_memory"),
            ]
        ],
        migrations.RemoveConstraint(model_name="agentsession", name="session_external_id_unique_in_project"),
        migrations.RemoveConstraint(model_name="memorylink", name="memorylink_unique"),
        # Django's single-column keys; the summary's one-to-one becomes a foreign key whose uniqueness is
        # summary_once_per_memory (its index serves the lookups by memory)
        migrations.AlterField("agentsession", "project", _fk("accounts.project", CASCADE, "sessions")),
        migrations.AlterField("agentsession", "submitted_by_token", _fk("accounts.apitoken", SET_NULL, "+", null=True)),
        migrations.AlterField(
            "memory", "consolidated_into", _fk("memories.memory", SET_NULL, "consolidated_sources", null=True)
        ),
        migrations.AlterField("memory", "created_by_token", _fk("accounts.apitoken", SET_NULL, "+", null=True)),
        migrations.AlterField("memory", "project", _fk("accounts.project", PROTECT, "memories", null=True)),
        migrations.AlterField(
            "memory", "source_session", _fk("memories.agentsession", SET_NULL, "memories", null=True)
        ),
        migrations.AlterField("memory", "team", _fk("accounts.team", PROTECT, "memories", null=True)),
        migrations.AlterField("memorylink", "source", _fk("memories.memory", CASCADE, "links_out")),
        migrations.AlterField("memorylink", "target", _fk("memories.memory", CASCADE, "links_in")),
        migrations.AlterField("memorysignal", "memory", _fk("memories.memory", CASCADE, "signals")),
        migrations.AlterField("memorysignal", "project", _fk("accounts.project", SET_NULL, "+", null=True)),
        migrations.AlterField(
            "memorysignalaggregate",
            "memory",
            models.OneToOneField(
                db_constraint=False,
                on_delete=CASCADE,
                primary_key=True,
                related_name="signal_aggregate",
                serialize=False,
                to="memories.memory",
            ),
        ),
        migrations.AlterField(
            "memorysummary",
            "memory",
            _fk("memories.memory", CASCADE, "summaries", related_query_name="summary", db_index=False),
        ),
        migrations.AlterField("memorysummary", "project", _fk("accounts.project", CASCADE, "memory_summaries")),
        migrations.AlterField("projectsignalweights", "project", _fk("accounts.project", CASCADE, "+", null=True)),
        migrations.AlterField("sessionmemoryuse", "memory", _fk("memories.memory", CASCADE, "session_uses")),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddConstraint(model_name=model, constraint=SameOrganization(field=field, name=name))
                for model, field, name in EXISTING
            ]
        ),
        *[
            SameOrganizationAddWithoutLock(model_name=model, constraint=SameOrganization(field=field, name=name))
            for model, field, name in NEW
        ],
    ]
