"""Retrieval quality of ``memory_search`` on LoCoMo (docs/search.md), beside a BM25 baseline.

The data (the LoCoMo development half, ``locomo-dev.json``, which you provide: ``--data``) and the
protocol are described in bench/README.md; in short: every dialog turn is one memory (its session's
date as its timestamp), each conversation is one project, and every ``qa`` item of category 1–4
whose evidence names a turn is one query (786). For each embedder:

1. **Load** (kept between runs): org ``locomo-<embedder>`` (enterprise plan), one project per
   conversation (slug = ``sample_id``), every turn recorded through the product's record service
   (``memories.core.services.memory_record_or_duplicate``, title and description the speaker, content
   the turn's text, kind ``episodic``, one call per turn, each conversation in one transaction), then
   ``created_at`` set to the session's date. The turn's ``dia_id`` is kept as the memory's tag (tags
   are neither embedded nor indexed). As the protocol says: a turn the write gate refuses (too short,
   …) is not recorded and counts as a miss wherever it is gold; a turn answered with an existing
   memory (an identical one, or a near copy) adds its ``dia_id`` to that memory, which then stands
   for both turns.
2. **Queries**: the question verbatim through ``memories.search.contracts.memory_search_run`` (what REST
   and MCP call) with a token restricted to the conversation's project, ``limit`` 10,
   ``min_confidence`` 0. Each search runs in a transaction that is rolled back, so its usage
   signals (confidence, ``usage_count``, ``last_used_at`` → recency boost) never reach the next
   query and every run sees the same bank (``--keep-usage``: as deployed; ``--simulate-recall N``: after N hook asks).
3. **Metrics** (averaged over queries, overall and per category): recall@5, recall@10, MRR@10,
   nDCG@10 (binary relevance); a hit also covers the memories folded into it (``duplicates``).
   BM25 (``rank_bm25`` Okapi, k1 1.5, b 0.75, lowercase ``[a-z0-9]+`` tokens, NLTK's English
   stopwords, no stemming) ranks the same turns' protocol text per conversation.

    .venv/bin/python bench/retrieval.py                          # every embedder that can be built
    .venv/bin/python bench/retrieval.py --embedders hashing minilm --explain-misses 10
    .venv/bin/python bench/retrieval.py --embedders minilm --dump  # + per-query top-20 with explain (JSONL)
    .venv/bin/python bench/retrieval.py --bm25-only               # the baseline alone, no database
    .venv/bin/python bench/retrieval.py --embedders hashing --reset  # load the bank again

Data: a dedicated embedded PostgreSQL, ``RB_DATA_DIR=<repo>/.data/bench-retrieval`` unless set.
See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _dataset import memories_delete
from _deep_llm import deep_llm_arguments, deep_llm_from, deep_llm_log, deep_llm_run
from _locomo import (
    MAPPINGS,
    Conversation,
    Query,
    Turn,
    aggregate,
    bm25_metrics,
    bm25_run,
    dataset_load,
    memory_fields,
    query_metrics,
    stored_text,
)
from _product import bank_reset, embedder_build, embedder_settings, on_demand_consolidation_off, usage_reset
from _recall_simulation import recall_arguments, recall_run, recall_variant
from _retrieval_output import dump_write, misses_print, refusals_summary, table
from common import REPO, RESULTS_DIR, Latency, django_setup, log, machine_info, revision, write_json

DATA_DIR = REPO / ".data" / "bench-retrieval"
# the LoCoMo development half is not in the repository (its licence, its size): the maintainers keep it
# in the checkout's parent folder; anyone else names it with --data (bench/README.md, "The data")
DEFAULT_DATASET = REPO.parent / "shared" / "eval" / "locomo-dev.json"
DEFAULT_EMBEDDERS = ("hashing", "minilm")
ORG_PREFIX = "locomo-"
TOKEN_LABEL = "bench-retrieval"
SEARCH_LIMIT = 10
# the reference figures for this file, BM25 row (bench/README.md, "The data")
BM25_ANCHOR = {"recall@5": 0.497, "recall@10": 0.567, "mrr": 0.429}


# --- the product: load ------------------------------------------------------------------------------


@dataclass
class Bank:
    """One embedder's loaded bank: its org, a principal per conversation, memory id → dia_ids."""

    kind: str
    embedder_name: str
    org: Any
    principals: dict[str, Any]
    dia_ids: dict[str, tuple[str, ...]]
    load: dict[str, Any]
    refused: dict[str, dict[str, str]]  # per conversation: the turns the write gate refused → reason


def org_slug(kind: str, mapping: str) -> str:
    return ORG_PREFIX + kind + ("" if mapping == "protocol" else f"-{mapping}")


def _tag(dia_id: str) -> str:
    return dia_id.lower()  # tags are stored lowercased


def _project_dia_ids(
    project: Any, embedder_name: str, conv: Conversation, mapping: str
) -> tuple[dict[str, tuple[str, ...]], bool]:
    """The project's memory id → dia_ids (from the tags), and whether every memory was embedded by
    ``embedder_name`` from the fields ``mapping`` gives its first turn (a bank recorded with another
    mapping is not reused)."""
    from memories.models import Memory

    rows = Memory.objects.filter(project=project, state=Memory.STATE_ACTIVE).values_list(
        "id", "tags", "embedding_model", "title", "description"
    )
    turns = {t.dia_id: t for t in conv.turns}
    ids, same = {}, True
    for memory_id, tags, model, title, description in rows:
        dia = tuple(t.upper() for t in tags if re.fullmatch(r"d\d+:\d+", t))
        ids[memory_id] = dia
        fields = memory_fields(turns[dia[0]], mapping) if dia and dia[0] in turns else None
        same &= (
            model == embedder_name
            and fields is not None
            and (title, description) == (fields["title"], fields["description"])
        )
    return ids, same


def turns_refused(conv: Conversation, mapping: str) -> dict[str, str]:
    """The turns the write gate refuses (dia_id → the reason), asked as the record service asks it:
    what a complete bank lacks, so that a reused bank is recognised as complete."""
    from memories.core.services import memory_draft, memory_gate
    from memories.models import Memory

    refused = {}
    for turn in conv.turns:
        draft = memory_draft(**memory_fields(turn, mapping), outcome="success", kind=Memory.KIND_EPISODIC)
        rejection = memory_gate(draft)
        if rejection is not None:
            refused[turn.dia_id] = rejection.reason
    return refused


@dataclass
class Recorded:
    """What recording one conversation did: memory id → the dia_ids it stands for, the turns the
    write gate refused (dia_id → reason), and the turns answered with an existing memory."""

    dia_ids: dict[str, tuple[str, ...]]
    refused: dict[str, str]
    identical: int = 0
    near_copies: int = 0


def project_record(principal: Any, project: Any, conv: Conversation, mapping: str) -> Recorded:
    """Every turn through the record service; then each memory's timestamp is its session's."""
    from django.db import transaction

    from memories.core.services import memory_record_or_duplicate
    from memories.models import Memory
    from reasoningbank.errors import Rejected

    ids: dict[str, list[str]] = {}
    by_session: dict[datetime, list[str]] = {}
    out = Recorded({}, {})
    with transaction.atomic():
        for turn in conv.turns:
            try:
                with transaction.atomic():  # a savepoint: a refusal leaves the conversation's transaction usable
                    result = memory_record_or_duplicate(
                        principal=principal,
                        **memory_fields(turn, mapping),
                        outcome="success",
                        tags=[_tag(turn.dia_id)],
                        kind=Memory.KIND_EPISODIC,
                        project=project.slug,
                    )
            except Rejected as exc:  # not recorded: a miss wherever this turn is gold
                out.refused[turn.dia_id] = exc.code.removeprefix("rejected_")
                continue
            memory = result.memory
            if result.duplicate:  # an identical memory, or a near copy: it stands for both turns
                if result.reason == "identical":
                    out.identical += 1
                else:
                    out.near_copies += 1
                memory.refresh_from_db(fields=["tags"])
                Memory.objects.filter(pk=memory.pk).update(tags=[*memory.tags, _tag(turn.dia_id)])
            else:
                by_session.setdefault(turn.timestamp, []).append(memory.id)
            ids.setdefault(memory.id, []).append(turn.dia_id)
        for timestamp, memory_ids in by_session.items():
            Memory.objects.filter(pk__in=memory_ids).update(created_at=timestamp, updated_at=timestamp)
    out.dia_ids = {memory_id: tuple(dia) for memory_id, dia in ids.items()}
    if out.refused or out.identical or out.near_copies:
        log(
            f"    {conv.sample_id}: {len(out.refused)} turns refused by the write gate, {out.identical} identical "
            f"and {out.near_copies} near copies answered with an existing memory (which stands for both)"
        )
    return out


def _embedded_text(turn: Turn, mapping: str) -> str:
    """What the record service embeds for this turn (the validated, scrubbed draft's fields)."""
    from memories.core.services import memory_draft
    from memories.embedding import memory_embedding_text
    from memories.models import Memory

    draft = memory_draft(**memory_fields(turn, mapping), outcome="success", kind=Memory.KIND_EPISODIC)
    return memory_embedding_text(draft.title, draft.description, draft.content)


def bank_ensure(
    conversations: Sequence[Conversation],
    kind: str,
    embedder: Any,
    *,
    mapping: str,
    reset: bool,
    prefetch: bool = True,
) -> Bank:
    """The embedder's bank: reused when it holds every turn embedded by this embedder, else (re)loaded
    project by project; a fresh project-restricted token per conversation.

    Every turn goes through the record service one call at a time, and that call embeds its one text.
    With ``prefetch`` each conversation's texts are embedded first in one batched call of the same
    embedder instance and the record call is served its vector from that batch (minilm: 2,960 texts
    one by one took ~2 minutes of the load, batched ~4× less); a text not found there (it cannot
    happen unless the service changes what it embeds) is embedded by the record call as usual."""
    from accounts.access import principal_for_token
    from accounts.models import ApiToken, Organization, Project
    from accounts.services import organization_create, project_create, token_create

    slug = org_slug(kind, mapping)
    if reset:
        bank_reset(slug)
    org = Organization.objects.filter(slug=slug).first() or organization_create(
        slug=slug, name=f"LoCoMo retrieval bench ({kind}, {mapping})", plan="enterprise"
    )
    ApiToken.objects.filter(organization=org, label=TOKEN_LABEL).delete()
    info_path = Path(os.environ["RB_DATA_DIR"]) / f"{slug}-load.json"
    previous = json.loads(info_path.read_text()) if info_path.exists() and not reset else {}
    principals: dict[str, Any] = {}
    dia_ids: dict[str, tuple[str, ...]] = {}
    refused: dict[str, dict[str, str]] = {}
    answered = [0, 0]  # turns answered with an identical memory, with a near copy
    loaded: list[str] = []
    embed_seconds = [0.0]
    original_embed = embedder.embed
    prefetched: dict[str, list[float]] = {}
    served = [0, 0]  # texts served from the batch, texts embedded one by one

    def timed_embed(texts: Sequence[str]) -> list[list[float]]:
        if prefetch and texts and all(t in prefetched for t in texts):
            served[0] += len(texts)
            return [prefetched.pop(t) for t in texts]
        t0 = time.perf_counter()
        try:
            served[1] += len(texts)
            return original_embed(texts)  # type: ignore[no-any-return]
        finally:
            embed_seconds[0] += time.perf_counter() - t0

    started = time.perf_counter()
    embedder.embed = timed_embed  # the cached instance the record service gets from settings
    try:
        with embedder_settings(kind), on_demand_consolidation_off():
            for conv in conversations:
                project = Project.objects.filter(organization=org, slug=conv.sample_id).first() or project_create(
                    organization=org, slug=conv.sample_id, actor=None
                )
                token, _raw = token_create(organization=org, label=TOKEN_LABEL, projects=[project])
                principal = principals[conv.sample_id] = principal_for_token(token)
                existing, same = _project_dia_ids(project, embedder.name, conv, mapping)
                covered = sorted(d for ds in existing.values() for d in ds)
                refused_here = turns_refused(conv, mapping)
                expected = sorted(t.dia_id for t in conv.turns if t.dia_id not in refused_here)
                if same and covered == expected:
                    dia_ids.update(existing)
                    refused[conv.sample_id] = refused_here
                    continue
                if existing:
                    log(f"    {conv.sample_id}: {len(existing)} memories incomplete or of another embedder: reloading")
                    memories_delete("project_id = %s", [project.id])
                t0 = time.perf_counter()
                if prefetch:  # one batched call instead of one per record: the same vectors, much sooner
                    texts = list(dict.fromkeys(_embedded_text(turn, mapping) for turn in conv.turns))
                    t1 = time.perf_counter()
                    prefetched.update(zip(texts, original_embed(texts), strict=True))
                    embed_seconds[0] += time.perf_counter() - t1
                recorded = project_record(principal, project, conv, mapping)
                dia_ids.update(recorded.dia_ids)
                refused[conv.sample_id] = recorded.refused
                answered[0] += recorded.identical
                answered[1] += recorded.near_copies
                prefetched.clear()
                loaded.append(conv.sample_id)
                log(f"    {conv.sample_id}: {len(conv.turns)} turns recorded in {time.perf_counter() - t0:.1f} s")
    finally:
        del embedder.embed  # back to the class's method
    seconds = time.perf_counter() - started
    if loaded:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memories_memory")
        load = {
            "reused": False,
            "projects_loaded": loaded,
            "turns": sum(len(c.turns) for c in conversations if c.sample_id in loaded),
            "seconds": round(seconds, 1),
            "embed_seconds": round(embed_seconds[0], 1),
            "embedding": "batched per conversation" if prefetch else "one text per record call",
            "texts_from_batch": served[0],
            "texts_embedded_by_the_record_call": served[1],
            "turns_answered_with_an_identical_memory": answered[0],
            "turns_answered_with_a_near_copy": answered[1],
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        if len(loaded) == len(conversations):
            info_path.write_text(json.dumps(load, indent=2) + "\n")
    else:
        load = {"reused": True, "loaded_earlier": previous or None}
    return Bank(kind, embedder.name, org, principals, dia_ids, load, refused)


# --- the product: queries ----------------------------------------------------------------------------


@dataclass
class QueryResult:
    query: Query
    ms: float
    hits: list[dict[str, Any]]  # id, dia_ids (its own and folded duplicates'), relevance, content, explain
    rewrite: dict[str, Any] | None = None  # mode deep: the answer's query_rewrite

    def ranked(self) -> list[frozenset[str]]:
        return [frozenset(h["dia_ids"]) for h in self.hits]


def product_search(
    bank: Bank,
    conversations: Sequence[Conversation],
    *,
    limit: int,
    explain: bool,
    keep_usage: bool,
    mode: str = "standard",
) -> list[QueryResult]:
    """Every query through ``memory_search_run``; rolled back one by one unless ``keep_usage``."""
    from django.db import transaction

    from memories.search.contracts import SearchInput, memory_search_run

    results = []
    with embedder_settings(bank.kind):
        for conv in conversations:
            principal = bank.principals[conv.sample_id]
            for q in conv.queries:
                args = SearchInput(
                    query=q.question,
                    limit=limit,
                    min_confidence=0.0,
                    project=conv.sample_id,
                    explain=explain,
                    mode=mode,
                )
                if keep_usage:  # as deployed: parallel legs, usage written behind, seen by later queries
                    t0 = time.perf_counter()
                    out = memory_search_run(principal, args)
                    ms = (time.perf_counter() - t0) * 1000
                else:
                    with transaction.atomic():
                        t0 = time.perf_counter()
                        out = memory_search_run(principal, args)
                        ms = (time.perf_counter() - t0) * 1000
                        transaction.set_rollback(True)
                hits = []
                for hit in out.memories:
                    folded = list(getattr(hit, "duplicates", None) or [])
                    covered = [d for mid in (hit.id, *folded) for d in bank.dia_ids.get(mid, ())]
                    entry: dict[str, Any] = {
                        "id": hit.id,
                        "dia_ids": list(dict.fromkeys(covered)),
                        "duplicates": folded,
                        "relevance": hit.relevance,
                        "content": hit.content,
                    }
                    if explain and hit.explain is not None:
                        entry["explain"] = hit.explain.model_dump(mode="json")
                    hits.append(entry)
                rewrite = out.query_rewrite.model_dump(mode="json") if out.query_rewrite else None
                results.append(QueryResult(q, ms, hits, rewrite))
    if keep_usage:
        from reasoningbank.db_threads import write_behind_wait

        write_behind_wait()
    return results


def product_metrics(results: Sequence[QueryResult]) -> dict[str, Any]:
    out = aggregate([(r.query.category, query_metrics(r.ranked(), r.query.gold)) for r in results])
    via_duplicates = 0
    for r in results:
        own = {d for h in r.hits[:10] for d in (h["dia_ids"][:1] if h["duplicates"] else h["dia_ids"])}
        every = {d for h in r.hits[:10] for d in h["dia_ids"]}
        via_duplicates += bool((every - own) & set(r.query.gold))
    out["overall"]["gold_found_only_through_folded_duplicates"] = via_duplicates
    out["overall"]["empty_results"] = sum(1 for r in results if not r.hits)
    return out


def search_settings() -> dict[str, Any]:
    from django.conf import settings

    return {name: getattr(settings, name) for name in dir(settings) if name.startswith("SEARCH_")}


# --- main ----------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET, help="the LoCoMo file (default: %(default)s)")
    parser.add_argument(
        "--embedders",
        nargs="+",
        default=None,
        help=f"EMBEDDER values (default: each of {', '.join(DEFAULT_EMBEDDERS)} that builds)",
    )
    parser.add_argument("--mapping", choices=MAPPINGS, default="protocol", help="turn → memory fields (see the code)")
    parser.add_argument("--reset", action="store_true", help="drop the embedder's bank and record it again")
    parser.add_argument("--explain-misses", type=int, default=0, metavar="N", help="print N queries the top 10 missed")
    parser.add_argument(
        "--dump",
        nargs="?",
        const="",
        default=None,
        metavar="PATH",
        help="also search with explain at the contract's maximum limit and write one JSON line per query "
        "(default path bench/results/retrieval-<embedder>-<date>-dump.jsonl)",
    )
    parser.add_argument(
        "--keep-usage",
        action="store_true",
        help="search as deployed (usage signals written behind and seen by later queries), reset afterwards",
    )
    recall_arguments(parser)
    parser.add_argument(
        "--embed-one-by-one",
        action="store_true",
        help="when loading, let each record call embed its text (default: each conversation batched first)",
    )
    parser.add_argument("--bm25-only", action="store_true", help="the BM25 baseline alone (no database)")
    deep_llm_arguments(parser)
    args = parser.parse_args()
    deep_llm = deep_llm_from(args)

    conversations = dataset_load(args.data)
    n_queries = sum(len(c.queries) for c in conversations)
    texts = {c.sample_id: c.texts for c in conversations}
    log(
        f"{args.data.name}: {len(conversations)} conversations, {sum(len(c.turns) for c in conversations)} turns, "
        f"{n_queries} queries"
    )
    bm25 = bm25_run(conversations, lambda t: t.protocol_text, "BM25")
    bm25_figures = bm25_metrics(conversations, bm25)
    overall = bm25_figures["overall"]
    log(
        f"BM25 (rank_bm25 Okapi k1 1.5 b 0.75, NLTK stopwords): recall@5 {overall['recall@5']:.3f}, "
        f"recall@10 {overall['recall@10']:.3f}, MRR {overall['mrr_full_ranking']:.3f} (whole ranking; "
        f"@10 {overall['mrr']:.3f}); reference {BM25_ANCHOR['recall@5']} / {BM25_ANCHOR['recall@10']} / "
        f"{BM25_ANCHOR['mrr']}"
    )
    if args.bm25_only:
        log("\n" + table([("BM25", bm25_figures)]))
        return
    stored_bm25 = None
    if args.mapping != "protocol":
        stored_run = bm25_run(conversations, lambda t: stored_text(t, args.mapping), "BM25 stored text")
        stored_bm25 = bm25_metrics(conversations, stored_run)

    os.environ.setdefault("RB_DATA_DIR", str(DATA_DIR))
    started = time.perf_counter()
    django_setup()
    log(f"database ready in {time.perf_counter() - started:.1f} s (RB_DATA_DIR={os.environ['RB_DATA_DIR']})")
    from django.conf import settings

    kinds = args.embedders or list(DEFAULT_EMBEDDERS)
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    # runs off the protocol's defaults keep their own results files
    variant = ("" if args.mapping == "protocol" else f"-{args.mapping}") + ("-keep-usage" if args.keep_usage else "")
    variant += recall_variant(args) + (("-deep-stub" if deep_llm.stub else "-deep-llm") if deep_llm else "")
    for kind in kinds:
        embedder, why = embedder_build(kind)
        if embedder is None:
            log(f"\n=== embedder {kind}: unavailable ({why})")
            continue
        log(f"\n=== embedder {kind} ({embedder.name}), mapping {args.mapping}")
        bank = bank_ensure(
            conversations, kind, embedder, mapping=args.mapping, reset=args.reset, prefetch=not args.embed_one_by_one
        )
        load = bank.load
        if load["reused"]:
            earlier = load.get("loaded_earlier") or {}
            took = f"; loaded {earlier['at']} in {earlier['seconds']} s" if earlier else ""
            log(f"  bank reused: {len(bank.dia_ids)} memories{took}")
        else:
            log(
                f"  index time: {load['turns']} turns in {load['seconds']} s "
                f"({load['turns'] / max(load['seconds'], 1e-9):.0f}/s; embedding {load['embed_seconds']} s, "
                f"{load['embedding']}; {load['texts_embedded_by_the_record_call']} texts embedded by the record call)"
            )
        refusals = refusals_summary(bank, conversations)
        log(
            f"  {refusals['turns_refused']} of {refusals['turns']} turns refused by the write gate "
            f"({', '.join(f'{n} {reason}' for reason, n in refusals['by_reason'].items()) or 'none'}): misses "
            f"wherever gold; {refusals['queries_with_refused_gold']} queries have one among their gold turns"
        )
        signals = usage_reset(bank.org)
        if signals:
            log(f"  {signals} usage signals of an earlier --keep-usage run removed")
        from django.db import connection

        from memories.search.statistics import collection_stats

        # what autovacuum does within a minute of a load: BM25 reads its statistics from it (search's
        # SEARCH_TERM_STATISTICS=auto), so every run ranks with the table's current statistics
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memories_memory")
        collection_stats(refresh=True)
        simulated = recall_run(args, bank, conversations) if args.simulate_recall else None
        results = product_search(bank, conversations, limit=SEARCH_LIMIT, explain=False, keep_usage=args.keep_usage)
        if args.keep_usage or args.simulate_recall:
            usage_reset(bank.org)
        figures = product_metrics(results)
        latency = Latency.of([r.ms for r in results[20:]])  # the first queries warm caches
        rows = [(f"product ({kind})", figures), ("BM25", bm25_figures)]
        deep_figures = None
        if deep_llm is not None:  # the same queries in mode deep, the question rewritten through the endpoint
            deep_search = partial(product_search, bank, conversations, limit=SEARCH_LIMIT, explain=False, mode="deep")
            deep_figures = deep_llm_run(deep_llm, partial(deep_search, keep_usage=False), product_metrics)
            rows.insert(1, (f"{deep_figures['label']} ({kind})", deep_figures["product"]))
        if stored_bm25:
            rows.append((f"BM25 on {args.mapping} text", stored_bm25))
        log("\n" + table(rows))
        log(
            f"\n  per query (memory_search_run in-process, {'as deployed' if args.keep_usage else 'rolled back'}): "
            f"p50 {latency.p50:.1f} ms, p99 {latency.p99:.1f} ms, mean {latency.mean:.1f} ms "
            f"(n={latency.n}, first 20 excluded)"
        )
        folded, empty = (figures["overall"][k] for k in ("gold_found_only_through_folded_duplicates", "empty_results"))
        log(f"  gold found only through folded duplicates: {folded} queries; empty results: {empty}")
        if deep_figures is not None:
            deep_llm_log(deep_figures)
        if args.explain_misses:
            misses_print(results, texts, args.explain_misses)
        dump_path = None
        if args.dump is not None:
            dump_path = Path(args.dump) if args.dump else RESULTS_DIR / f"retrieval-{kind}{variant}-{date}-dump.jsonl"
            deep = product_search(bank, conversations, limit=settings.SEARCH_MAX_LIMIT, explain=True, keep_usage=False)
            meta = {"embedder": bank.embedder_name, "mapping": args.mapping, "search_settings": search_settings()}
            dump_write(dump_path, deep, bm25, texts, meta)
            log(f"  dump: {dump_path} ({len(deep)} queries, top {settings.SEARCH_MAX_LIMIT} with explain)")
        out = RESULTS_DIR / f"retrieval-{kind}{variant}-{date}.json"
        write_json(
            out,
            {
                "dataset": str(args.data),
                "queries": n_queries,
                "embedder": kind,
                "embedder_name": bank.embedder_name,
                "mapping": args.mapping,
                "keep_usage": args.keep_usage,
                "simulated_recall": simulated,
                "product": figures,
                "bm25": bm25_figures,
                "bm25_stored_text": stored_bm25,
                "bm25_anchor": BM25_ANCHOR,
                "load": load,
                "write_gate": refusals,
                "per_query_ms": latency.as_dict(),
                "deep_llm": deep_figures,
                "search_settings": search_settings(),
                "dump": str(dump_path) if dump_path else None,
                "commit": revision(),
                "machine": machine_info(),
            },
        )
        log(f"  results: {out}")


if __name__ == "__main__":
    main()
