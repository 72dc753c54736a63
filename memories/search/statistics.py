"""BM25's statistics of a query (docs/search.md#candidates): its terms with their document frequency
and IDF, from PostgreSQL's planner statistics or from exact capped counts within the caller's reach,
and which of them pick the lexical leg's candidates."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from memories.search.ranking import bm25_idf
from reasoningbank.db_replica import read_rows

# memories sampled for BM25's mean document length
BM25_LENGTH_SAMPLE = 200
# the lexical leg enumerates at most this many matches of the query's selective terms
TEXT_MATCH_CAP = 300


sql_rows = read_rows  # a read's rows, from the read replica inside ``replica_read``


def terms_sql(reach: str) -> str:
    """Exact statistics (a table never analysed: new or small): the query's terms (stemmed lexemes,
    stopwords removed) with their document frequency in reach, the number of memories in reach and
    their mean length (a sample). Every count stops at a cap through the GIN index."""
    return (
        "/* search:terms */ SELECT t.lexeme, (SELECT count(*) FROM (SELECT 1 FROM memories_memory m "
        f"WHERE m.search_vector @@ (quote_literal(t.lexeme))::tsquery AND {reach} LIMIT %(df_cap)s + 1) d), "
        f"(SELECT count(*) FROM (SELECT 1 FROM memories_memory m WHERE {reach} LIMIT %(n_cap)s) n), "
        "(SELECT avg(rb_doc_length(s.search_vector)) FROM "
        f"(SELECT m.search_vector FROM memories_memory m WHERE {reach} LIMIT %(sample)s) s) "
        "FROM unnest(to_tsvector('english', %(query)s)) t"
    )


_LEXEMES_SQL = "/* search:lexemes */ SELECT lexeme FROM unnest(to_tsvector('english', %(query)s))"
# PostgreSQL's own statistics of the full-text column (ANALYZE keeps the most common lexemes and the
# fraction of memories holding each; migration 0008 raises how many), and the table's size
_PLANNER_STATS_SQL = (
    "/* search:stats */ SELECT c.reltuples, s.most_common_elems::text::text[], s.most_common_elem_freqs "
    "FROM pg_class c LEFT JOIN pg_stats s ON s.schemaname = current_schema() "
    "AND s.tablename = 'memories_memory' AND s.attname = 'search_vector' "
    "WHERE c.oid = 'memories_memory'::regclass"
)
_LENGTH_SAMPLE_SQL = (
    "/* search:stats */ SELECT avg(rb_doc_length(s.search_vector)) "
    "FROM (SELECT search_vector FROM memories_memory WHERE state = 'active' LIMIT %(sample)s) s"
)


@dataclass(frozen=True)
class CollectionStats:
    """BM25's collection statistics from PostgreSQL's planner statistics: the table's memories, the
    share of them holding each common lexeme, the share assumed for any other (half the least common
    one's, as PostgreSQL's own estimates do) and the mean memory length."""

    documents: float
    shares: dict[str, float]
    rare_share: float
    avgdl: float

    def document_frequency(self, lexeme: str) -> float:
        return self.shares.get(lexeme, self.rare_share) * self.documents


_stats_cache: tuple[float, CollectionStats | None] | None = None


def collection_stats(*, refresh: bool = False) -> CollectionStats | None:
    """The planner-statistics view of the bank, kept ``SEARCH_STATS_TTL`` seconds per process (they
    change only with ANALYZE); None while the table has never been analysed."""
    global _stats_cache
    now = time.monotonic()
    if not refresh and _stats_cache is not None and _stats_cache[0] > now:
        return _stats_cache[1]
    rows = sql_rows(_PLANNER_STATS_SQL, {})
    stats = None
    if rows and rows[0][1] and rows[0][2] and rows[0][0] and rows[0][0] > 0:
        documents, lexemes, freqs = float(rows[0][0]), list(rows[0][1]), [float(f) for f in rows[0][2]]
        # most_common_elem_freqs: one per lexeme, then the minimum, the maximum and the null share
        shares = dict(zip(lexemes, freqs[: len(lexemes)], strict=True))
        (avgdl,) = sql_rows(_LENGTH_SAMPLE_SQL, {"sample": BM25_LENGTH_SAMPLE})[0]
        stats = CollectionStats(documents, shares, freqs[len(lexemes)] / 2, float(avgdl or 1.0))
    _stats_cache = (now + float(settings.SEARCH_STATS_TTL), stats)
    return stats


def tsquery_or(lexemes: list[str]) -> str:
    """``'a' | 'b'`` of already-stemmed lexemes, quoted for the tsquery parser (no second stemming)."""
    return " | ".join("'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" for lexeme in lexemes)


@dataclass(frozen=True)
class QueryTerms:
    """BM25's view of a query: its terms, their IDF, and the terms that pick the lexical leg's
    candidates (the selective ones: a term in more than ``SEARCH_TERM_DF_CAP`` memories only scores)."""

    terms: list[str]
    idfs: list[float]
    selective: list[str]
    avgdl: float


def query_terms(in_reach: str, params: dict[str, Any], df_cap: int) -> QueryTerms:
    """From PostgreSQL's planner statistics when the table has been analysed (no per-query cost,
    the IDF of the whole bank), else from exact capped counts within the caller's reach."""
    stats = collection_stats() if settings.SEARCH_TERM_STATISTICS == "auto" else None
    if stats is not None:
        lexemes = [str(row[0]) for row in sql_rows(_LEXEMES_SQL, params)]
        found = [(lexeme, stats.document_frequency(lexeme)) for lexeme in lexemes]
        documents, avgdl = stats.documents, stats.avgdl
    else:
        rows = sql_rows(terms_sql(in_reach), params)
        if not rows:
            return QueryTerms([], [], [], 1.0)
        documents, avgdl = float(rows[0][2]), float(rows[0][3] or 1.0)
        found = [(str(lexeme), float(df)) for lexeme, df, _, _ in rows if df]
    # the rarest terms pick the lexical candidates, as many as the match cap can enumerate whole (a
    # capped scan of commoner ones would be an arbitrary sample); the others only score, and a term in
    # more memories than the cap never picks (the vector leg's candidates still get its score)
    selective: list[str] = []
    budget = float(TEXT_MATCH_CAP)
    for lexeme, df in sorted(found, key=lambda term: term[1]):
        if df > df_cap or (selective and df > budget):
            break
        selective.append(lexeme)
        budget -= df
    return QueryTerms(
        terms=[lexeme for lexeme, _ in found],
        idfs=[bm25_idf(df, documents) for _, df in found],
        selective=selective,
        avgdl=avgdl,
    )
