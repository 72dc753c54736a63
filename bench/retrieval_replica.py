"""An offline replica of ``memory_search`` on the LoCoMo bank ``retrieval.py`` loaded, to screen ranking
ideas in seconds instead of a product run each (bench/README.md, "Search quality: attempts on the
lexical and query side").

``dump`` reads, once, from the benchmark's database (``RB_DATA_DIR=<repo>/.data/bench-retrieval``, the
bank ``retrieval.py --embedders <kind>`` recorded): every memory's stored ``search_vector``, embedding,
text and ``created_at``, and every question's ``to_tsvector('english', …)`` lexemes, its ``ts_debug``
tokens and its query vector. ``run`` (the default) replays the search on that dump with no database:
the vector leg's 40 nearest (exact cosine where the product uses HNSW), the lexical leg's 40 best BM25
matches among the memories holding a selective term (the product's rule: rarest first, at most 300
matches, no term held by more than 500 memories), both legs' scores for every candidate, the convex
fusion (0.55), the time cues (``memories.search.temporal``, the product's code) and limit 10; every
memory has the same confidence and recency in the benchmark, so the order is the relevance. It
reproduces the product's figures within 0.002, so a variant that gains here is worth building; the
product run decides (``retrieval.py``).

    .venv/bin/python bench/retrieval_replica.py dump --embedder minilm-onnx
    .venv/bin/python bench/retrieval_replica.py run --embedder minilm-onnx                 # every variant
    .venv/bin/python bench/retrieval_replica.py run --variants product time-off feedback

Each variant prints recall@5, recall@10, MRR, nDCG@10 overall, then recall@10 / MRR per category.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _locomo import CATEGORIES, dataset_load, query_metrics
from common import REPO, RESULTS_DIR, log

from memories.search.ranking import BM25_B, BM25_K1, bm25_idf
from memories.search.temporal import query_time, time_adjusted, time_match

DEFAULT_DATASET = REPO.parent / "shared" / "eval" / "locomo-dev.json"
K, LIMIT, LEXICAL_WEIGHT, MIN_SIMILARITY, DF_CAP, MATCH_CAP, TIME_WEIGHT = 40, 10, 0.55, 0.2, 500, 300, 0.3
_TSV = re.compile(r"'((?:[^']|'')*)':([0-9A-D,]+)")


def tsvector_tf(text: str) -> dict[str, int]:
    """A tsvector's text form → lexeme → number of positions (BM25's tf, as ``rb_bm25`` counts it)."""
    return {lexeme.replace("''", "'"): len(positions.split(",")) for lexeme, positions in _TSV.findall(text)}


# --- dump ------------------------------------------------------------------------------------------


def dump(kind: str, data: Path) -> Path:
    import os

    os.environ.setdefault("RB_DATA_DIR", str(REPO / ".data" / "bench-retrieval"))
    from common import django_setup

    django_setup()
    from _product import embedder_build, embedder_settings
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.id, p.slug, m.tags, m.title, m.description, m.content, m.search_vector::text, "
            "m.embedding::text, m.created_at FROM memories_memory m JOIN accounts_project p ON p.id = m.project_id "
            "JOIN accounts_organization o ON o.id = m.organization_id WHERE o.slug = %s AND m.state = 'active'",
            [f"locomo-{kind}"],
        )
        rows = cursor.fetchall()
    if not rows:
        raise SystemExit(f"no bank locomo-{kind}: run bench/retrieval.py --embedders {kind} first")
    memories, vectors = [], []
    for memory_id, slug, tags, title, description, content, tsv, embedding, created_at in rows:
        memories.append(
            {
                "id": memory_id, "conv": slug, "dia": [t.upper() for t in tags if re.fullmatch(r"d\d+:\d+", t)],
                "title": title, "description": description, "content": content, "tf": tsvector_tf(tsv),
                "created_at": created_at.isoformat(),
            }
        )  # fmt: skip
        vectors.append([float(x) for x in embedding.strip("[]").split(",")])
    embedder, why = embedder_build(kind)
    if embedder is None:
        raise SystemExit(f"embedder {kind}: {why}")
    queries, query_vectors = [], []
    with embedder_settings(kind), connection.cursor() as cursor:
        for conv in dataset_load(data):
            for q in conv.queries:
                cursor.execute("SELECT to_tsvector('english', %s)::text", [q.question])
                (tsv,) = cursor.fetchone()
                cursor.execute("SELECT alias, token, lexemes FROM ts_debug('english', %s)", [q.question])
                tokens = [list(row) for row in cursor.fetchall()]
                queries.append(
                    {
                        "conv": q.sample_id, "question": q.question, "category": q.category, "gold": list(q.gold),
                        "terms": sorted(tsvector_tf(tsv)), "tokens": tokens,
                    }
                )  # fmt: skip
                query_vectors.append(embedder.embed([q.question])[0])
    out = RESULTS_DIR / f"replica-{kind}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"memories": memories, "queries": queries}))
    np.savez_compressed(
        out.with_suffix(".npz"), memories=np.array(vectors, "f4"), queries=np.array(query_vectors, "f4")
    )
    log(f"{len(memories)} memories, {len(queries)} queries → {out}.json/.npz")
    return out


# --- the replica -------------------------------------------------------------------------------------


@dataclass
class Bank:
    memories: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    df: Counter[str] = field(default_factory=Counter)
    avgdl: float = 1.0
    by_conv: dict[str, list[int]] = field(default_factory=dict)
    vectors: Any = None
    query_vectors: Any = None

    @classmethod
    def load(cls, kind: str) -> Bank:
        base = RESULTS_DIR / f"replica-{kind}"
        raw = json.loads(base.with_suffix(".json").read_text())
        arrays = np.load(base.with_suffix(".npz"))
        bank = cls(raw["memories"], raw["queries"], vectors=arrays["memories"], query_vectors=arrays["queries"])
        by_conv: dict[str, list[int]] = defaultdict(list)
        for i, m in enumerate(bank.memories):
            m["len"] = sum(m["tf"].values())
            m["ts"] = datetime.fromisoformat(m["created_at"])
            m["text"] = f"{m['title']}\n{m['description']}\n{m['content']}"
            bank.df.update(m["tf"].keys())
            by_conv[m["conv"]].append(i)
        bank.by_conv = dict(by_conv)
        bank.avgdl = float(np.mean([m["len"] for m in bank.memories]))
        for q, vector in zip(bank.queries, bank.query_vectors, strict=True):
            q["vec"] = vector
            q["time"] = query_time(q["question"])
        return bank

    def idf(self, term: str) -> float:
        return bm25_idf(self.df.get(term, 0), len(self.memories))

    def bm25(self, m: dict[str, Any], weights: dict[str, float]) -> float:
        score = 0.0
        for term, weight in weights.items():
            tf = m["tf"].get(term)
            if tf:
                score += weight * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * m["len"] / self.avgdl))
        return score

    def weights(self, q: dict[str, Any]) -> dict[str, float]:
        return {t: self.idf(t) for t in q["terms"] if self.df.get(t, 0) > 0}


Ranked = list[tuple[int, float]]  # memory index, relevance; best first
Adjust = Callable[[Bank, dict[str, Any], list[int], Any], Any]


def search(
    bank: Bank,
    q: dict[str, Any],
    *,
    weights: dict[str, float] | None = None,
    vector: Any = None,
    time_weight: float = TIME_WEIGHT,
    adjust: Adjust | None = None,
) -> Ranked:
    """Every candidate of the query ranked as the product ranks them (best first)."""
    ids = bank.by_conv[q["conv"]]
    similarities = bank.vectors[ids] @ (q["vec"] if vector is None else vector)
    weights = bank.weights(q) if weights is None else weights
    selective, budget = [], float(MATCH_CAP)
    for term in sorted(weights, key=lambda t: bank.df.get(t, 0)):
        df = bank.df.get(term, 0)
        if df > DF_CAP or (selective and df > budget):
            break
        selective.append(term)
        budget -= df
    candidates = set(np.argsort(-similarities)[:K].tolist())
    if selective:
        matching = [j for j, i in enumerate(ids) if any(t in bank.memories[i]["tf"] for t in selective)]
        candidates |= set(sorted(matching, key=lambda j: -bank.bm25(bank.memories[ids[j]], weights))[:K])
    rows = [(j, bank.bm25(bank.memories[ids[j]], weights), float(similarities[j])) for j in sorted(candidates)]
    rows = [r for r in rows if not (r[1] <= 0 and r[2] < MIN_SIMILARITY)]
    if not rows:
        return []
    lexical = np.array([r[1] for r in rows])
    sims = np.array([r[2] for r in rows])
    low, high = sims.min(), sims.max()
    vec = (sims - low) / (high - low) if high > low else (sims > 0).astype(float)
    lex = lexical / lexical.max() if lexical.max() > 0 else lexical * 0
    fused = LEXICAL_WEIGHT * lex + (1 - LEXICAL_WEIGHT) * vec
    members = [ids[r[0]] for r in rows]
    relevance = np.array(
        [
            time_adjusted(
                f, time_match(q["time"], text=bank.memories[i]["text"], created_at=bank.memories[i]["ts"]), q["time"],
                time_weight,
            )
            for f, i in zip(fused, members, strict=True)
        ]
    )  # fmt: skip
    if adjust is not None:
        relevance = adjust(bank, q, members, relevance)
    order = np.argsort(-relevance, kind="stable")
    return [(members[j], float(relevance[j])) for j in order]


# --- variants -------------------------------------------------------------------------------------------

FRAME_WORDS = frozenset({"kind", "type", "mention", "would", "like", "recent", "mani", "long", "often"})


def frame_words(bank: Bank, q: dict[str, Any]) -> Ranked:
    """The question's frame words ("what kind of", "how many", …) out of its BM25 terms."""
    return search(bank, q, weights={t: w for t, w in bank.weights(q).items() if t not in FRAME_WORDS})


def proper_nouns(bank: Bank, q: dict[str, Any], factor: float = 1.5) -> Ranked:
    """Terms of capitalised words other than the first weigh ``factor`` × their IDF."""
    capitalised = {lex for _, token, lexemes in q["tokens"][1:] if lexemes and token[:1].isupper() for lex in lexemes}
    return search(bank, q, weights={t: w * (factor if t in capitalised else 1) for t, w in bank.weights(q).items()})


def feedback(bank: Bank, q: dict[str, Any], hits: int = 2, terms: int = 20, beta: float = 0.1) -> Ranked:
    """Pseudo-relevance feedback on the lexical leg: the best ``terms`` terms (tf / length × IDF) of the
    first ``hits`` results join the query at ``beta`` × their IDF, and the search runs again."""
    first = search(bank, q)[:hits]
    weights = bank.weights(q)
    scores: Counter[str] = Counter()
    for i, _ in first:
        m = bank.memories[i]
        for term, tf in m["tf"].items():
            if bank.df[term] >= 2 and term not in weights:
                scores[term] += tf / m["len"] * bank.idf(term)
    expansion = scores.most_common(terms)
    if expansion:
        top = expansion[0][1]
        weights |= {t: beta * s / top * bank.idf(t) for t, s in expansion}
    return search(bank, q, weights=weights)


def rocchio(bank: Bank, q: dict[str, Any], hits: int = 3, beta: float = 0.6) -> Ranked:
    """Feedback on the query vector: + ``beta`` × the mean vector of the first ``hits`` results."""
    first = search(bank, q)[:hits]
    vector = q["vec"] + beta * np.mean([bank.vectors[i] for i, _ in first], axis=0)
    return search(bank, q, vector=vector / np.linalg.norm(vector))


def neighbours(bank: Bank, q: dict[str, Any], hits: int = 3, radius: int = 2, discount: float = 0.7) -> Ranked:
    """The memories recorded just before and after each of the first ``hits`` results (here: the turns
    ± ``radius`` of the same session) join at ``discount`` × that result's relevance, or keep their own
    if it is higher."""
    ranked = search(bank, q)
    position = {}
    for i in bank.by_conv[q["conv"]]:
        for dia in bank.memories[i]["dia"]:
            session, turn = map(int, dia[1:].split(":"))
            position[(session, turn)] = i
    best = dict(ranked)
    for i, relevance in ranked[:hits]:
        session, turn = map(int, bank.memories[i]["dia"][0][1:].split(":"))
        for step in range(-radius, radius + 1):
            other = position.get((session, turn + step))
            if step and other is not None:
                best[other] = max(best.get(other, 0.0), discount * relevance)
    return sorted(best.items(), key=lambda item: -item[1])


VARIANTS: dict[str, Callable[[Bank, dict[str, Any]], Ranked]] = {
    "product": lambda bank, q: search(bank, q),
    "time-off": lambda bank, q: search(bank, q, time_weight=0.0),
    "frame-words": frame_words,
    "proper-nouns": proper_nouns,
    "feedback": feedback,
    "rocchio": rocchio,
    "neighbours": neighbours,
}


def evaluate(bank: Bank, name: str, variant: Callable[[Bank, dict[str, Any]], Ranked]) -> str:
    rows = []
    for q in bank.queries:
        ranked = variant(bank, q)[:LIMIT]
        figures = query_metrics([frozenset(bank.memories[i]["dia"]) for i, _ in ranked], q["gold"])
        rows.append((q["category"], figures))

    def mean(metric: str, category: int | None = None) -> float:
        values = [f[metric] for c, f in rows if category is None or c == category]
        return sum(values) / len(values)

    line = f"{name:<14} R@5 {mean('recall@5'):.3f} R@10 {mean('recall@10'):.3f} MRR {mean('mrr'):.3f} "
    line += f"nDCG@10 {mean('ndcg@10'):.3f} |"
    for number, category in CATEGORIES.items():
        line += f" {category} {mean('recall@10', number):.3f} / {mean('mrr', number):.3f}"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", nargs="?", choices=("run", "dump"), default="run")
    parser.add_argument("--embedder", default="minilm-onnx")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(VARIANTS))
    args = parser.parse_args()
    if args.action == "dump":
        dump(args.embedder, args.data)
        return
    bank = Bank.load(args.embedder)
    for name in args.variants:
        log(evaluate(bank, name, VARIANTS[name]))


if __name__ == "__main__":
    main()
