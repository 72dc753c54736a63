"""SQL functions of the search's lexical leg (docs/search.md#candidates): BM25 over the memory's stored
``search_vector`` (title, description and content, English stemming, stopwords removed).

``rb_bm25(doc, terms, idfs, k1, b, avgdl)`` is BM25's per-document sum
``Σ idf(t) × tf(t) × (k1 + 1) / (tf(t) + k1 × (1 − b + b × |doc| / avgdl))`` over the query terms,
with tf a term's number of positions in the tsvector and |doc| the sum of them. The IDFs are
computed per query by the selector (``memories.search.ranking.bm25_idf``) from document frequencies
within the caller's reach, so the function itself is immutable.
"""

from django.db import migrations

BM25 = r"""
CREATE OR REPLACE FUNCTION rb_bm25(doc tsvector, terms text[], idfs double precision[],
                                   k1 double precision, b double precision, avgdl double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH lexemes AS (
        SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1)::double precision AS tf FROM unnest(doc) u
    ), doc_length AS (
        SELECT coalesce(sum(tf), 0) AS len FROM lexemes
    )
    SELECT coalesce(sum(q.idf * l.tf * (k1 + 1) / (l.tf + k1 * (1 - b + b * d.len / greatest(avgdl, 1)))), 0)
    FROM lexemes l
    JOIN unnest(terms, idfs) AS q(term, idf) ON q.term = l.lexeme
    CROSS JOIN doc_length d
$$;
"""

DOC_LENGTH = r"""
CREATE OR REPLACE FUNCTION rb_doc_length(doc tsvector)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::double precision FROM unnest(doc) u
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0006_memory_content_hash")]

    operations = [
        migrations.RunSQL(BM25, reverse_sql="DROP FUNCTION IF EXISTS rb_bm25(tsvector, text[], double precision[], double precision, double precision, double precision);"),
        migrations.RunSQL(DOC_LENGTH, reverse_sql="DROP FUNCTION IF EXISTS rb_doc_length(tsvector);"),
    ]
