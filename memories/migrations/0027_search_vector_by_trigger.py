"""``memories_memory.search_vector`` written by a trigger, not a generated column (docs/search.md#candidates).

PostgreSQL recomputes a stored generated column at every UPDATE, whatever the UPDATE sets. The new
vector, not compressed yet, never equals the compressed one on disk, so no update of a memory whose
row is large enough to be compressed (most of them) could stay HOT: each usage signal, on every search,
re-inserted the row into every index, the HNSW index included (10.8 ms and 529 KB of WAL for a search's
five usage updates at 100K, against 0.2 ms and 9 KB as a HOT update). The trigger computes the same
vector, only when a row is inserted or its title, description or content is written.

The column keeps its values: only its expression is dropped (no table rewrite). Going back rebuilds it as
the generated column it was, and its GIN index (a table rewrite)."""

from django.contrib.postgres.search import SearchVectorField
from django.db import migrations

# the expression of migration 0001's generated column, as PostgreSQL stored it
VECTOR = (
    "setweight(to_tsvector('english'::regconfig, COALESCE({row}.title, '')::text), 'A') || "
    "setweight(to_tsvector('english'::regconfig, COALESCE({row}.description, '')), 'B') || "
    "setweight(to_tsvector('english'::regconfig, COALESCE({row}.content, '')), 'C')"
)

FORWARD = f"""
ALTER TABLE memories_memory ALTER COLUMN search_vector DROP EXPRESSION;
CREATE OR REPLACE FUNCTION rb_memory_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_vector := {VECTOR.format(row="NEW")};
    RETURN NEW;
END
$$;
CREATE TRIGGER memory_search_vector
    BEFORE INSERT OR UPDATE OF title, description, content, search_vector ON memories_memory
    FOR EACH ROW EXECUTE FUNCTION rb_memory_search_vector();
"""

BACKWARD = f"""
DROP TRIGGER IF EXISTS memory_search_vector ON memories_memory;
DROP FUNCTION IF EXISTS rb_memory_search_vector();
ALTER TABLE memories_memory DROP COLUMN search_vector;
ALTER TABLE memories_memory ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS ({VECTOR.format(row="memories_memory")}) STORED;
CREATE INDEX memory_search_gin ON memories_memory USING gin (search_vector);
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0026_anchors_session_places")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, reverse_sql=BACKWARD)],
            state_operations=[
                migrations.RemoveField("memory", "search_vector"),
                migrations.AddField("memory", "search_vector", SearchVectorField(null=True, editable=False)),
            ],
        )
    ]
