from django.db import migrations

# Composite foreign keys: a memory's (or session's) project/team must belong to the row's own org.
# Enforced by PostgreSQL so that no code path, however careless, can file a row across tenants.
FKS = [
    ("memories_memory", "memory_project_same_org", "project_id", "accounts_project"),
    ("memories_memory", "memory_team_same_org", "team_id", "accounts_team"),
    ("memories_agentsession", "session_project_same_org", "project_id", "accounts_project"),
]


class Migration(migrations.Migration):
    dependencies = [("memories", "0001_initial"), ("accounts", "0002_pgvector_and_tenant_fks")]

    operations = [
        migrations.RunSQL(
            f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({column}, organization_id) "
            f"REFERENCES {target} (id, organization_id) DEFERRABLE INITIALLY DEFERRED",
            f"ALTER TABLE {table} DROP CONSTRAINT {name}",
        )
        for table, name, column, target in FKS
    ]
