"""Hybrid search (docs/search.md): the reads behind ``memory_search`` — the vector and lexical legs
inside the caller's reach, their fusion into one relevance (``memories.search.ranking``), the ranking
and the folding of near-identical hits. The query's BM25 term statistics: ``memories.search.statistics``."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.db import OperationalError, transaction
from django.utils import timezone

from accounts.access import Principal
from accounts.models import Project
from memories.code.filters import anchored_params, anchored_sql
from memories.code.paths import PathSelection
from memories.code.selectors_staleness import CodeChanged
from memories.core.selectors import Reach, project_resolve, reach_for
from memories.models import Memory, memory_scope
from memories.search import statistics as term_statistics
from memories.search.neighbours import NEIGHBOUR_PARENTS, NEIGHBOUR_WINDOW, neighbour_links, relevance_with_neighbours
from memories.search.ranking import (
    BM25_B,
    BM25_K1,
    DEFAULT_RETRIEVAL_MODE,
    RETRIEVAL_MODES,
    LegScores,
    ScoreBreakdown,
    estimate_tokens,
    leg_ranks,
    relevance_fuse,
    score_memory,
)
from memories.search.rewrite import QueryRewrite
from memories.search.selectors_code import hits_code_ranked
from memories.search.statistics import query_terms, sql_rows, tsquery_or
from memories.search.temporal import QueryTime, query_time, time_adjusted, time_match
from memories.trust.selectors_injection import injection_sql
from reasoningbank.db_replica import read_alias
from reasoningbank.db_threads import other_connections_usable, run_beside
from reasoningbank.tracing import span

logger = logging.getLogger(__name__)

# candidates fetched per leg before ranking: enough headroom for the confidence/recency re-rank
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 20


@dataclass(frozen=True)
class SearchQuery:
    query: str
    scope: str = "all"
    outcome: str = "all"
    limit: int = 5
    min_confidence: float = 0.5
    project: str | None = None
    mode: str = DEFAULT_RETRIEVAL_MODE  # the tiers searched (ranking.RETRIEVAL_MODES)
    # automatic injection (docs/search.md#searching-for-injection): leave out what this session's ledger
    # says it was given, keep results within a token budget, and only those this similar to the query
    exclude_session: str = ""
    token_budget: int | None = None
    min_similarity: float | None = None
    # an injection (docs/security/memory-poisoning.md#injection-policy): only memories this injection
    # policy passes ("" = any the mode searches), and each result costs this many tokens more against the
    # budget (its framing: the element it is injected in)
    injection: str = ""
    entry_overhead: int = 0
    # the code the caller works in (docs/code-memory.md#browse-by-code): memories anchored on these files
    # or under these directories are fetched by a leg of their own and rank ANCHOR_PATH_BOOST higher; with
    # paths_only, no other memory is returned
    paths: PathSelection = field(default_factory=PathSelection)
    paths_only: bool = False


@dataclass(slots=True)
class MemoryRow:
    """A memory as search returns it: the columns ranking and the responses need, as plain values
    (no model instance: building ~30 of them per search cost more than the SQL)."""

    id: str
    organization_id: int
    project_id: int | None
    team_id: int | None
    title: str
    description: str
    content: str
    outcome: str
    tags: list[str]
    kind: str
    confidence: float
    usage_count: int
    last_used_at: datetime | None
    created_at: datetime
    origin: str
    state: str
    alpha: float
    beta: float
    prior_alpha: float
    prior_beta: float
    content_hash: str

    @property
    def pk(self) -> str:
        return self.id

    @property
    def scope(self) -> str:
        return memory_scope(self.project_id, self.team_id)


_ROW_COLUMNS = ", ".join(f"m.{name}" for name in MemoryRow.__dataclass_fields__)


@dataclass
class SearchHit:
    memory: MemoryRow
    breakdown: ScoreBreakdown
    # "vector", "text", "path" (anchored on the search's paths), "neighbour" (brought in by the neighbour stage)
    matched_by: tuple[str, ...]
    duplicates: list[str] = field(default_factory=list)  # near-identical hits folded into this one
    # the memory's anchored code changed since it was written (docs/code-memory.md#staleness): read once,
    # with the ranking that demotes it, for the answer's flag too
    code_changed: CodeChanged | None = None


@dataclass
class SearchResult:
    hits: list[SearchHit]
    total_found: int
    tokens_used: int
    project: Project | None = None
    embedding_ms: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    query_vector: list[float] = field(default_factory=list)  # what summaries are searched with too
    # a deep search's question rewrite (memories.search.services_deep), and per hit every query that found
    # it, the one whose scores it keeps first
    rewrite: QueryRewrite | None = None
    found_by: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _reach_sql(reach: Reach, scope: str) -> str:
    """``Reach.memory_q`` as SQL over alias ``m`` (parameters ``projects`` / ``teams``)."""
    project = "m.project_id IS NOT NULL" if reach.project_ids is None else "m.project_id = ANY(%(projects)s)"
    team = "m.project_id IS NULL AND m.team_id IS NOT NULL"
    if reach.team_ids is not None:
        team += " AND m.team_id = ANY(%(teams)s)"
    org = "m.project_id IS NULL AND m.team_id IS NULL"
    parts = {"project": [project], "team": [team], "org": [org], "all": [project, team, org]}[scope]
    return " OR ".join(f"({part})" for part in parts)


# BM25 of a memory for this query's terms (migration 0007); both legs score every row they return
_BM25_SQL = "rb_bm25(m.search_vector, %(terms)s::text[], %(idfs)s::float8[], %(k1)s, %(b)s, %(avgdl)s)"


def _vector_leg_sql(base: str) -> str:
    """The k nearest memories in reach (HNSW; iterative scan until k rows pass the filter)."""
    return (
        f"/* search:vector */ SELECT {_ROW_COLUMNS}, m.embedding <=> %(vector)s::vector, {_BM25_SQL}, 'vector' "
        f"FROM memories_memory m WHERE {base} AND m.embedding IS NOT NULL "
        "ORDER BY m.embedding <=> %(vector)s::vector LIMIT %(k)s"
    )


def _text_leg_sql(base: str, terms: int) -> str:
    """The k best lexical matches in reach among at most ``TEXT_MATCH_CAP`` memories that hold one of
    the query's selective terms (OR: a memory need not hold every word of a question).

    Inside the capped set the order is BM25's shape at C speed: the sum over the query's terms of
    IDF × ``ts_rank`` (term frequency, length-normalised), parameters ``idf_<i>`` and ``term_<i>``;
    the returned rows then carry their exact BM25 (``rb_bm25``). No ORDER BY inside the capped match
    set: sorting every match would defeat the cap. OFFSET 0 keeps the reach filter out of the scan:
    pushed down, it made the planner AND the GIN bitmap with bitmaps of every row in reach (12 ms
    for a common word) instead of stopping at the cap.
    """
    # every field weighs the same, as in rb_bm25 (ts_rank's default weighs a title match 10× the content's)
    order = " + ".join(
        f"%(idf_{i})s * ts_rank('{{1,1,1,1}}', t.search_vector, %(term_{i})s::tsquery, 1)" for i in range(terms)
    )
    return (
        f"/* search:text */ SELECT {_ROW_COLUMNS}, m.embedding <=> %(vector)s::vector, {_BM25_SQL}, 'text' "
        "FROM memories_memory m WHERE m.id IN ("
        "SELECT t.id FROM (SELECT m.id, m.search_vector FROM ("
        "SELECT id, search_vector, organization_id, project_id, team_id, state, tier, confidence, outcome, trust, "
        "reviewed_at "
        "FROM memories_memory WHERE search_vector @@ %(tsquery)s::tsquery OFFSET 0"
        f") AS m WHERE {base} LIMIT %(text_cap)s) AS t "
        f"ORDER BY {order or '0'} DESC LIMIT %(k)s)"
    )


def _path_leg_sql(base: str) -> str:
    """The k memories anchored on the search's paths nearest to the query, by exact distance: the set is
    small (a file's or a directory's memories), and the HNSW scan with so selective a filter could stop
    before it found them ("+ 0" keeps the planner off the index)."""
    return (
        f"/* search:path */ SELECT {_ROW_COLUMNS}, m.embedding <=> %(vector)s::vector, {_BM25_SQL}, 'path' "
        f"FROM memories_memory m WHERE {base} AND m.embedding IS NOT NULL AND {anchored_sql('m')} "
        "ORDER BY (m.embedding <=> %(vector)s::vector) + 0 LIMIT %(k)s"
    )


def _filter_sql(search: SearchQuery, places: str) -> str:
    """The search's filter over alias ``m``: the organization, the mode's states and tiers, ``places`` (SQL:
    the reach, or less where the rows are known to be in it), confidence, outcome, the session's memories,
    and for an injection the organization's injection policy."""
    tiers = RETRIEVAL_MODES[search.mode]
    if tiers is None:
        # exhaustive: archived memories too; never a promotion proposal awaiting review, nor a memory held
        # in quarantine (docs/security/memory-poisoning.md#quarantine)
        sql = f"m.organization_id = %(org)s AND m.state IN ('active', 'archived') AND ({places})"
    else:
        sql = f"m.organization_id = %(org)s AND m.state = 'active' AND ({places}) AND m.tier = ANY(%(tiers)s)"
    sql += " AND m.confidence >= %(min_confidence)s"
    if search.injection:
        sql += f" AND {injection_sql(search.injection)}"
    if search.paths_only:
        sql += f" AND {anchored_sql('m')}"
    if search.outcome != "all":
        sql += " AND m.outcome = %(outcome)s"
    if search.exclude_session:
        # in each leg's WHERE, so the next best take the place of what the session already has (the
        # ledger's unique index on organization, session key and memory answers it)
        sql += (
            " AND NOT EXISTS (SELECT 1 FROM memories_sessionmemoryuse u WHERE u.organization_id = %(org)s"
            " AND u.session_key = %(exclude_session)s AND u.memory_id = m.id)"
        )
    return sql


def _leg_rows(leg: str, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A leg's candidate rows (``vector``, ``lexical``, or both as one statement ``vector+lexical``)
    in its own span, the ``memory.search.<leg>`` of the trace."""
    with span(f"memory.search.{leg}") as current:
        rows = sql_rows(sql, params)
        current.set_attribute("rows", len(rows))
        return rows


def _lexical_rows(sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    return _leg_rows("lexical", sql, params)


def _legs_in_parallel() -> bool:
    """Both legs at once on two pooled connections: the search's latency becomes the slower leg's
    instead of their sum (``reasoningbank.db_threads``)."""
    return bool(_setting("SEARCH_PARALLEL_LEGS")) and other_connections_usable(idle=True)


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(map(repr, vector)) + "]"


@dataclass
class RankedCandidates:
    """Every candidate of one query, ranked best first, before folding and the limit."""

    hits: list[SearchHit]
    project: Project | None


def memory_search(
    principal: Principal, search: SearchQuery, *, query_vector: list[float], now: datetime | None = None
) -> SearchResult:
    """Hybrid search (``memory_search_rank``), then the answer (``search_result_finish``)."""
    ranked = memory_search_rank(principal, search, query_vector=query_vector, now=now)
    return search_result_finish(ranked.hits, search, project=ranked.project, query_vector=query_vector)


def memory_search_rank(
    principal: Principal, search: SearchQuery, *, query_vector: list[float], now: datetime | None = None
) -> RankedCandidates:
    """Hybrid search's candidates: HNSW and BM25 full-text candidates inside the caller's reach, each
    scored by both legs, fused into one relevance and ranked by relevance × confidence × recency ×
    scope weight (× 1.2 consolidated). A deep search ranks several queries this way and fuses them
    (``memories.search.services_deep``) before the answer is built.

    Raw SQL returning plain rows: this runs on every agent call, and the ORM's query building and
    model instantiation cost more than PostgreSQL's work. One statement for the query's term
    statistics, then one per leg, run at once when possible (``_legs_in_parallel``), else as one
    UNION ALL. The HNSW settings (``ef_search``, iterative scan) are connection options
    (``settings.DATABASES``).
    """
    now = now or timezone.now()
    project = project_resolve(principal, search.project)
    reach = reach_for(principal, project=project)
    k = max(search.limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
    in_reach = f"m.organization_id = %(org)s AND m.state = 'active' AND ({_reach_sql(reach, search.scope)})"
    tiers = RETRIEVAL_MODES[search.mode]
    base = _filter_sql(search, _reach_sql(reach, search.scope))
    df_cap = int(_setting("SEARCH_TERM_DF_CAP"))
    params: dict[str, Any] = {
        "org": principal.organization.id,
        "tiers": list(tiers or ()),
        "min_confidence": search.min_confidence,
        "outcome": search.outcome,
        "exclude_session": search.exclude_session,
        "projects": sorted(reach.project_ids or ()),
        "teams": sorted(reach.team_ids or ()),
        "vector": vector_literal(query_vector),
        "query": search.query,
        "k": k,
        "text_cap": term_statistics.TEXT_MATCH_CAP,
        "df_cap": df_cap,
        "n_cap": int(_setting("SEARCH_COLLECTION_CAP")),
        "sample": term_statistics.BM25_LENGTH_SAMPLE,
        "k1": BM25_K1,
        "b": BM25_B,
        **anchored_params(search.paths),
    }
    with span("memory.search.terms") as terms_span:
        terms = query_terms(in_reach, params, df_cap)
        terms_span.set_attributes({"terms": len(terms.terms), "selective_terms": len(terms.selective)})
    params.update(terms=terms.terms, idfs=terms.idfs, avgdl=terms.avgdl, tsquery=tsquery_or(terms.selective))
    for i, (term, idf) in enumerate(zip(terms.terms, terms.idfs, strict=True)):
        params.update({f"term_{i}": tsquery_or([term]), f"idf_{i}": idf})
    named: list[tuple[str, str]] = []
    if any(query_vector) and not search.paths_only:  # with paths_only, the path leg is the vector leg
        named.append(("vector", _vector_leg_sql(base)))
    if any(query_vector) and search.paths:
        named.append(("path", _path_leg_sql(base)))
    if terms.selective:
        named.append(("lexical", _text_leg_sql(base, len(terms.terms))))
    legs = [sql for _, sql in named]
    both = "+".join(name for name, _ in named)
    ef_search = int(_setting("SEARCH_HNSW_EF_SEARCH"))
    if k > ef_search:  # more candidates than the connections' ef_search: widen it for this query
        # (in a transaction of the connection the legs read from: the replica's, when they read there)
        with transaction.atomic(using=read_alias()):
            sql_rows("SELECT set_config('hnsw.ef_search', %s, true)", [str(k)])
            rows = _leg_rows(both, " UNION ALL ".join(f"({sql})" for sql in legs), params) if legs else []
    elif both == "vector+lexical" and _legs_in_parallel():
        text_rows = run_beside(_lexical_rows, legs[1], params)
        rows = _leg_rows("vector", legs[0], params)
        try:
            rows += text_rows.result()
        except OperationalError:  # no pooled connection came in time: this one runs the leg too
            logger.warning("search's lexical leg found no free connection; ran it inline")
            rows += _lexical_rows(legs[1], params)
    else:
        rows = _leg_rows(both, " UNION ALL ".join(f"({sql})" for sql in legs), params) if legs else []
    with span("memory.search.fusion", candidates=len(rows), fusion=str(_setting("SEARCH_FUSION"))) as fusion_span:
        hits = _ranked(rows, now=now, min_similarity=search.min_similarity, time=query_time(search.query))
        fusion_span.set_attribute("kept", len(hits))
    if _setting("SEARCH_NEIGHBOURS") and hits:
        with span("memory.search.neighbours", parents=min(len(hits), NEIGHBOUR_PARENTS)) as neighbours_span:
            hits = _with_neighbours(
                hits,
                rows,
                # a neighbour shares its hit's project, which is in reach: a filter naming every place in
                # reach made PostgreSQL read the whole project through a bitmap for each hit (docs/search.md#neighbours)
                _filter_sql(search, "m.project_id IS NOT NULL"),
                params,
                now=now,
                min_similarity=search.min_similarity,
                time=query_time(search.query),
            )
            neighbours_span.set_attribute("kept", len(hits))
    return RankedCandidates(hits=hits_code_ranked(hits, search.paths, principal.organization.id), project=project)


def search_result_finish(
    hits: list[SearchHit], search: SearchQuery, *, project: Project | None, query_vector: list[float]
) -> SearchResult:
    """Ranked candidates (best first) → the answer: near-identical hits folded, the first ``limit``
    kept, within the token budget."""
    total_found = len(hits)
    with span("memory.search.collapse", hits=len(hits), limit=search.limit):
        top = _collapsed(hits, search.limit)
    if search.token_budget is not None:
        top = within_budget(top, search.token_budget, cost=lambda hit: hit_tokens(hit) + search.entry_overhead)
    tokens = sum(hit_tokens(h) for h in top)
    return SearchResult(
        hits=top, total_found=total_found, tokens_used=tokens, project=project, query_vector=query_vector
    )


def hit_tokens(hit: SearchHit) -> int:
    """What a result costs an agent's context (the estimate ``tokens_used`` sums)."""
    return estimate_tokens(f"{hit.memory.title}\n{hit.memory.description}\n{hit.memory.content}")


def within_budget(items: list[Any], budget: int, *, cost: Any) -> list[Any]:
    """The items, in order, while they fit in ``budget``: one too big for what is left is skipped, a
    smaller one after it may still fit (as the session-start block is filled)."""
    kept, left = [], budget
    for item in items:
        spend = cost(item)
        if spend <= left:
            kept.append(item)
            left -= spend
    return kept


def _neighbour_sql(base: str) -> str:
    """One statement: the ``%(window)s`` memories recorded just before and just after each hit of
    ``%(parents)s`` in its project, inside the search's filter (``base``), each (hit, neighbour) pair with
    the neighbour's row as the legs return theirs (scored by both legs, tagged ``neighbour``) unless it
    is among the candidates already (``%(known)s``: NULLs then). Recording order is (created_at, id): ids
    are time-ordered, so they also order memories stored with one timestamp (an import). Each side walks
    the (organization, project, created_at) index a few rows. Team and organization memories have no
    neighbours: their walk cannot use that index (a project-less memory's place is its team or none) and
    cost 360 ms of PostgreSQL per search at 100K memories (docs/search.md#neighbours)."""
    side = (
        f"(SELECT m.id FROM memories_memory m WHERE {base} AND m.organization_id = p.organization_id "
        "AND m.project_id = p.project_id "
        "AND m.created_at {cmp}= p.created_at AND (m.created_at {cmp} p.created_at OR m.id {cmp} p.id) "
        "ORDER BY m.created_at {order}, m.id {order} LIMIT %(window)s)"
    )
    pairs = (
        "SELECT p.id AS parent, n.id FROM memories_memory p CROSS JOIN LATERAL ("
        f"{side.format(cmp='<', order='DESC')} UNION ALL {side.format(cmp='>', order='ASC')}"
        ") n WHERE p.id = ANY(%(parents)s) AND p.project_id IS NOT NULL"
    )
    return (
        f"/* search:neighbours */ WITH pairs AS ({pairs}) SELECT pairs.parent, pairs.id, {_ROW_COLUMNS}, "
        f"m.embedding <=> %(vector)s::vector, {_BM25_SQL}, 'neighbour' FROM pairs "
        "LEFT JOIN memories_memory m ON m.id = pairs.id AND NOT m.id = ANY(%(known)s)"
    )


def _with_neighbours(
    hits: list[SearchHit],
    rows: list[tuple[Any, ...]],
    base: str,
    params: dict[str, Any],
    *,
    now: datetime,
    min_similarity: float | None,
    time: QueryTime,
) -> list[SearchHit]:
    """The neighbour stage (``memories.search.neighbours``, docs/search.md#neighbours): the best hits
    bring in the memories recorded next to them, every memory is fused again with them among the
    candidates and its relevance blended with its best linked memory's."""
    parents = [h.memory.id for h in hits[:NEIGHBOUR_PARENTS] if h.memory.project_id is not None]
    if not parents:
        return hits
    known = {row[0] for row in rows}
    found = sql_rows(
        _neighbour_sql(base),
        {**params, "parents": parents, "window": NEIGHBOUR_WINDOW, "known": sorted(known)},
    )
    if not found:
        return hits
    links = neighbour_links((row[0], row[1]) for row in found)  # (the hit's id, the neighbour's id)
    extra = list({row[1]: row[2:] for row in found if row[2] is not None}.values())
    return _ranked(rows + extra, now=now, min_similarity=min_similarity, time=time, links=links)


def _ranked(
    rows: list[tuple[Any, ...]],
    *,
    now: datetime,
    min_similarity: float | None = None,
    time: QueryTime | None = None,
    links: dict[str, set[str]] | None = None,
) -> list[SearchHit]:
    """The legs' rows, merged by memory, scored by both legs, fused, adjusted for the query's time cues
    (``memories.search.temporal``) and ranked (best first); with ``min_similarity``, only those whose
    embedding is at least that similar to the query's. With ``links`` (the neighbour stage), each
    relevance is then blended with its best linked memory's (``relevance_with_neighbours``)."""
    width = len(MemoryRow.__dataclass_fields__)
    merged: dict[str, tuple[tuple[Any, ...], set[str]]] = {}
    for row in rows:
        merged.setdefault(row[0], (row, set()))[1].add(row[-1])
    floor = min_similarity
    min_similarity = _setting("SEARCH_MIN_SIMILARITY")
    kept: list[tuple[MemoryRow, float | None, float, tuple[str, ...]]] = []
    for row, legs_found in merged.values():
        raw_distance, lexical = row[width], float(row[width + 1] or 0.0)
        # a text without word characters embeds to a zero vector, whose cosine distance is NaN
        similarity = None if raw_distance is None or math.isnan(raw_distance) else 1.0 - float(raw_distance)
        if lexical <= 0 and (similarity or 0.0) < min_similarity:
            continue  # neither leg finds it related (a neighbour too: being recorded next to a hit is not enough)
        if floor is not None and (similarity or 0.0) < floor:
            continue  # a keyword match alone is not on topic enough to be injected
        # "neighbour" only for a memory no leg fetched: the neighbour stage alone brought it in
        fetched_by = legs_found - {"neighbour"} or legs_found
        kept.append((MemoryRow(*row[:width]), similarity, lexical, tuple(sorted(fetched_by))))
    ranks = leg_ranks([k[1] for k in kept], [k[2] for k in kept])
    legs = [
        LegScores(similarity=sim, lexical=lex, vector_rank=vr, lexical_rank=lr)
        for (_, sim, lex, _), (vr, lr) in zip(kept, ranks, strict=True)
    ]
    relevances = relevance_fuse(
        legs, lexical_weight=float(_setting("SEARCH_LEXICAL_WEIGHT")), fusion=str(_setting("SEARCH_FUSION"))
    )
    time = time or QueryTime()
    time_weight = float(_setting("SEARCH_TIME_WEIGHT"))
    matches = [
        time_match(time, text=f"{m.title}\n{m.description}\n{m.content}", created_at=m.created_at)
        for m, _, _, _ in kept
    ]
    own = [time_adjusted(f, match, time, time_weight) for f, match in zip(relevances, matches, strict=True)]
    blended = (
        relevance_with_neighbours({k[0].id: r for k, r in zip(kept, own, strict=True)}, links)
        if links is not None
        else None
    )
    ranked = []
    for (memory, _, _, matched_by), leg, fused, match, relevance in zip(
        kept, legs, relevances, matches, own, strict=True
    ):
        reference = memory.last_used_at or memory.created_at
        stage = blended[memory.id] if blended is not None else None
        breakdown = score_memory(
            legs=leg,
            relevance=stage.relevance if stage is not None else relevance,
            fused=fused,
            time_expression=match.expression,
            time_period=match.period,
            confidence=memory.confidence,
            days_since_used=max(0.0, (now - reference).total_seconds() / 86400),
            scope=memory.scope,
            consolidated=memory.origin == Memory.ORIGIN_CONSOLIDATED,
        )
        if stage is not None:
            breakdown = replace(
                breakdown,
                own_relevance=stage.own,
                neighbour=stage.neighbour,
                neighbour_relevance=stage.neighbour_relevance,
            )
        ranked.append(SearchHit(memory, breakdown, matched_by))
    ranked.sort(key=lambda hit: (-hit.breakdown.score, hit.memory.id))
    return ranked


def _collapsed(ranked: list[SearchHit], limit: int) -> list[SearchHit]:
    """The first ``limit`` hits after folding near-identical memories into the best-ranked one, which
    lists the others' ids (``duplicates``): the same text (its fingerprint), or embeddings at least
    ``SEARCH_COLLAPSE_SIMILARITY`` alike. Only hits near the top are compared (a twin ranks next to
    its original), by one query over their stored vectors."""
    if not _setting("SEARCH_COLLAPSE_DUPLICATES"):
        return ranked[:limit]
    window = ranked[: limit * 2]
    twins = _similar_pairs([h.memory.id for h in window], float(_setting("SEARCH_COLLAPSE_SIMILARITY")))
    kept: list[SearchHit] = []
    by_text: dict[str, SearchHit] = {}
    by_id: dict[str, SearchHit] = {}
    for hit in window:
        same = by_text.get(hit.memory.content_hash) if hit.memory.content_hash else None
        if same is None:
            same = next((by_id[other] for other in twins.get(hit.memory.id, ()) if other in by_id), None)
        if same is not None:
            same.duplicates.append(hit.memory.id)
            continue
        kept.append(hit)
        by_id[hit.memory.id] = hit
        if hit.memory.content_hash:
            by_text[hit.memory.content_hash] = hit
    return kept[:limit]


def _similar_pairs(ids: list[str], threshold: float) -> dict[str, list[str]]:
    """Which of ``ids`` have a stored embedding at least ``threshold`` alike (cosine), both ways."""
    if len(ids) < 2:
        return {}
    rows = sql_rows(
        "/* search:collapse */ SELECT a.id, b.id FROM memories_memory a JOIN memories_memory b "
        "ON a.id < b.id AND b.id = ANY(%(ids)s) WHERE a.id = ANY(%(ids)s) "
        "AND 1 - (a.embedding <=> b.embedding) >= %(threshold)s",
        {"ids": ids, "threshold": threshold},
    )
    pairs: dict[str, list[str]] = {}
    for a, b in rows:
        pairs.setdefault(a, []).append(b)
        pairs.setdefault(b, []).append(a)
    return pairs


def _setting(name: str) -> Any:
    from django.conf import settings

    return getattr(settings, name)
