# A link's consolidation run checked with the organization (reasoningbank/sharding.py): after
# consolidation/0010, which gives runs the (id, organization) key it refers to. Not atomic, as 0017.

import django.db.models.deletion
from django.db import migrations, models

from reasoningbank.sharding import SameOrganization, SameOrganizationAddWithoutLock


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memories", "0017_sharding_keys"), ("consolidation", "0010_sharding_keys")]

    operations = [
        migrations.AlterField(
            model_name="memorylink",
            name="run",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="links",
                to="consolidation.consolidationrun",
            ),
        ),
        SameOrganizationAddWithoutLock(
            model_name="memorylink", constraint=SameOrganization(field="run", name="memorylink_run_same_org")
        ),
    ]
