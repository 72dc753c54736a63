from django.db import migrations
from pgvector.django import VectorExtension


class Migration(migrations.Migration):
    """pgvector, and a composite foreign key that keeps a project's team inside the project's org."""

    dependencies = [("accounts", "0001_initial")]

    operations = [
        VectorExtension(),
        migrations.RunSQL(
            "ALTER TABLE accounts_project ADD CONSTRAINT project_team_same_org "
            "FOREIGN KEY (team_id, organization_id) REFERENCES accounts_team (id, organization_id) "
            "DEFERRABLE INITIALLY DEFERRED",
            "ALTER TABLE accounts_project DROP CONSTRAINT project_team_same_org",
        ),
    ]
