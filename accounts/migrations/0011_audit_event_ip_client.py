"""The audit log's rows say where a request came from (the client's address and the client that named
itself), and the log is filtered by verb over time (docs/identity.md#the-audit-log)."""

from django.conf import settings
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # the index is built concurrently: the audit table is one of the largest, and every write of the
    # service appends to it, so a plain CREATE INDEX would hold those writes for the whole build
    atomic = False

    dependencies = [
        ("accounts", "0010_project_repository"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="client",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="auditevent",
            name="ip",
            field=models.GenericIPAddressField(blank=True, null=True, unpack_ipv4=True),
        ),
        AddIndexConcurrently(
            model_name="auditevent",
            index=models.Index(fields=["organization", "verb", "-created_at"], name="audit_org_verb_time"),
        ),
    ]
