# Deliveries refer to their subscription (and a redelivery to its original) with the organization
# (reasoningbank/sharding.py; docs/operations.md#distributed-by-organization). Not atomic: the delivery log
# grows with every event, so its unique index is built CONCURRENTLY and the keys are added NOT VALID and
# validated while reads and writes go on (each step commits on its own).

import django.db.models.deletion
from django.db import migrations, models

from reasoningbank.sharding import SameOrganization, SameOrganizationAddWithoutLock, UniqueAddWithoutLock


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("accounts", "0008_sharding_keys_references"), ("webhooks", "0001_initial")]

    operations = [
        UniqueAddWithoutLock(
            model_name="webhooksubscription",
            constraint=models.UniqueConstraint(fields=("id", "organization"), name="webhooksub_id_org_unique"),
        ),
        UniqueAddWithoutLock(
            model_name="webhookdelivery",
            constraint=models.UniqueConstraint(fields=("id", "organization"), name="webhookdel_id_org_unique"),
        ),
        migrations.AlterField(
            model_name="webhookdelivery",
            name="redelivery_of",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="webhooks.webhookdelivery",
            ),
        ),
        migrations.AlterField(
            model_name="webhookdelivery",
            name="subscription",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="deliveries",
                to="webhooks.webhooksubscription",
            ),
        ),
        SameOrganizationAddWithoutLock(
            model_name="webhookdelivery",
            constraint=SameOrganization(field="subscription", name="webhookdel_subscription_same_org"),
        ),
        SameOrganizationAddWithoutLock(
            model_name="webhookdelivery",
            constraint=SameOrganization(field="redelivery_of", name="webhookdel_redelivery_same_org"),
        ),
    ]
