"""Memory.content_hash: the fingerprint of a memory's text, so that recording an identical memory in the
same place returns the existing one (docs/memory-model.md#how-a-memory-enters-the-bank). Existing
memories get theirs here."""

import hashlib

from django.db import migrations, models

BATCH = 2000


def _content_hash(title: str, description: str, content: str) -> str:
    # frozen copy of memories.core.fingerprint.memory_content_hash (a migration must not change with the code)
    normalised = "\x1f".join(" ".join(part.split()).casefold() for part in (title, description, content))
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def fill_content_hashes(apps, schema_editor):
    Memory = apps.get_model("memories", "Memory")
    last = ""
    while True:
        chunk = list(
            Memory.objects.filter(pk__gt=last).order_by("pk").only("id", "title", "description", "content")[:BATCH]
        )
        if not chunk:
            return
        for memory in chunk:
            memory.content_hash = _content_hash(memory.title, memory.description, memory.content)
        Memory.objects.bulk_update(chunk, ["content_hash"])
        last = chunk[-1].pk


class Migration(migrations.Migration):
    dependencies = [("memories", "0005_drop_duplicate_consolidated_into_index")]

    operations = [
        migrations.AddField(
            model_name="memory",
            name="content_hash",
            field=models.CharField(blank=True, default="", editable=False, max_length=64),
        ),
        migrations.RunPython(fill_content_hashes, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(fields=["organization", "content_hash"], name="memory_org_content_hash"),
        ),
    ]
