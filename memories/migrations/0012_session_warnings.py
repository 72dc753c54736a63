# What the write gate kept out of a session's distillation (docs/memory-model.md#how-a-memory-enters-the-bank)

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0011_stability_signal'),
    ]

    operations = [
        migrations.AddField(
            model_name='agentsession',
            name='warnings',
            field=models.JSONField(
                blank=True, default=list, help_text="what distillation left out and why (the write gate's rejections)"
            ),
        ),
    ]
