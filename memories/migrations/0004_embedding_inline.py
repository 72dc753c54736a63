from django.db import migrations


class Migration(migrations.Migration):
    """Keep the embedding in the row (STORAGE MAIN) instead of the TOAST table: every exact or
    filtered k-NN step reads it, and de-TOASTing 1.5 KB per candidate dominated those scans.
    Long text columns are moved out of line instead."""

    dependencies = [("memories", "0003_hot_updates")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories_memory ALTER COLUMN embedding SET STORAGE MAIN",
            "ALTER TABLE memories_memory ALTER COLUMN embedding SET STORAGE EXTENDED",
        )
    ]
