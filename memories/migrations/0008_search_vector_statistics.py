"""BM25's document frequencies come from PostgreSQL's own statistics of the full-text column once it
has been analysed (memories.search.statistics.collection_stats): ANALYZE keeps the most common lexemes
with the share of memories holding each, ten per unit of the column's statistics target. The default
target (100: 1,000 lexemes) leaves most of a bank's vocabulary "rarer than the least common one";
1,000 keeps 10,000 lexemes, so rare terms are told apart too."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0007_bm25_functions")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE memories_memory ALTER COLUMN search_vector SET STATISTICS 1000",
            reverse_sql="ALTER TABLE memories_memory ALTER COLUMN search_vector SET STATISTICS -1",
        ),
    ]
