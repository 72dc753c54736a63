from django.db import migrations, models
from django.db.models.functions import Length


def distilled_sessions_mark(apps, schema_editor):
    """Sessions distilled before rounds existed: their whole trace was distilled, once."""
    AgentSession = apps.get_model("memories", "AgentSession")
    AgentSession.objects.filter(status__in=["done", "held"]).update(distilled_upto=Length("trace"), rounds=1)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0019_trust_foundation"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="distilled_upto",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="agentsession",
            name="rounds",
            field=models.PositiveIntegerField(default=0, help_text="how many times it was distilled"),
        ),
        migrations.RunPython(distilled_sessions_mark, migrations.RunPython.noop),
    ]
