"""A memory's impressions beside its uses (docs/confidence.md#impressions-and-use): put in an agent's context by
a hook or at session start (counted, no confidence moved) against asked for; and ``get`` in the ledger, a
session reading a memory by id. Columns with a constant default: no table rewrite."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0027_search_vector_by_trigger"),
    ]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="impression_count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="memory",
            name="impressions_unused",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="memory",
            name="last_shown_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="sessionmemoryuse",
            name="via",
            field=models.CharField(
                choices=[
                    ("search", "Search"),
                    ("context", "Session context"),
                    ("recall", "Recall at tool time"),
                    ("get", "Read by id"),
                ],
                max_length=10,
            ),
        ),
    ]
