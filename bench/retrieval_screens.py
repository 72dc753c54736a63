"""Screens of two-memory ranking ideas on the product's own ranking (bench/README.md, "Two-memory questions:
entity links, session spread and a learned fusion"): read a ``retrieval.py --dump`` file (each question's top 20
with ``explain``) and the LoCoMo turns, and print recall@5, recall@10 and MRR overall and recall@10 / MRR per
category for:

* entity links: entities of a turn (capitalised words past a sentence's start that are not a speaker or a
  stop word, and numbers), an index per conversation, and three uses of it — a second hop from the best hits
  through their rare entities, an entity leg for the question's own entities, and a greedy reranking that
  rewards covering the question's distinct entities; then where the missed gold turns stand (do they hold an
  entity at all, one a top-10 hit holds, one the question names);
* session spread: a greedy order that lowers a hit for each hit of its session already placed;
* a learned fusion: a logistic ranker over the product's features (fused, own and neighbour relevance,
  similarity, BM25, both ranks, the time cues), trained leave-one-conversation-out, reranking the top 20.

    EMBEDDER=minilm-onnx .venv/bin/python bench/retrieval.py --embedders minilm-onnx --dump /tmp/dump.jsonl
    .venv/bin/python bench/retrieval_screens.py /tmp/dump.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import CATEGORIES, Conversation, dataset_load, query_metrics
from common import REPO

DEFAULT_DATASET = REPO.parent / "shared" / "eval" / "locomo-dev.json"
WORD = re.compile(r"[A-Za-z][A-Za-z'\-]+|\d{2,4}")
# capitalised for a reason other than naming something (greetings, pronouns, sentence openers)
NOT_NAMES = frozenset(
    """I I'm I've I'd I'll The A An It It's That This What When How Why Where Who Yes Yeah No Oh Wow Hey Hi Thanks
    Thank So And But My We You Your He She They Did Do Does Is Was Are Would Could Can Have Has Had If In On At For
    Of To Just Sure Ok Okay Sounds Definitely Absolutely Totally Awesome Great Glad Haha Lol""".split()
)
Ranking = list[tuple[tuple[str, ...], float]]  # per position: the dia_ids it covers, its relevance


def entities(text: str, speakers: set[str]) -> set[str]:
    """Capitalised words past a sentence's start that are no speaker and no sentence word; and numbers."""
    out = set()
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        for i, token in enumerate(WORD.findall(sentence)):
            if token.isdigit():
                out.add(token)
            elif i > 0 and token[0].isupper() and token not in NOT_NAMES and token not in speakers:
                out.add(token.lower())
    return out


class Entities:
    """One conversation's turns → entities, document frequencies and the entity → turns index."""

    def __init__(self, conv: Conversation) -> None:
        self.speakers = {t.speaker for t in conv.turns}
        self.of = {t.dia_id: entities(t.text, self.speakers) for t in conv.turns}
        self.df = Counter(e for found in self.of.values() for e in found)
        self.turns: dict[str, set[str]] = defaultdict(set)
        for dia, found in self.of.items():
            for e in found:
                self.turns[e].add(dia)

    def held(self, dia_ids: Sequence[str]) -> set[str]:
        return set().union(*(self.of.get(d, set()) for d in dia_ids))


def report(name: str, queries: Sequence[dict[str, Any]], rankings: Sequence[Sequence[Sequence[str]]]) -> None:
    rows = [
        (q["category"], query_metrics([frozenset(d) for d in r[:10]], q["gold"]))
        for q, r in zip(queries, rankings, strict=True)
    ]

    def mean(metric: str, category: int | None = None) -> float:
        values = [f[metric] for c, f in rows if category is None or c == category]
        return sum(values) / len(values)

    line = f"{name:<34} R@5 {mean('recall@5'):.3f} R@10 {mean('recall@10'):.3f} MRR {mean('mrr'):.3f} |"
    for number, category in CATEGORIES.items():
        line += f" {category} {mean('recall@10', number):.3f} / {mean('mrr', number):.3f}"
    print(line)


def merged(base: Ranking, added: dict[tuple[str, ...], float]) -> list[tuple[str, ...]]:
    scores = dict(base)
    for key, score in added.items():
        scores[key] = max(scores.get(key, 0.0), score)
    return [d for d, _ in sorted(scores.items(), key=lambda item: -item[1])]


def second_hop(q: dict[str, Any], hits: int, max_df: int, discount: float) -> list[tuple[str, ...]]:
    """Turns sharing a rare entity with one of the best ``hits`` join at ``discount`` × that hit's relevance."""
    ents: Entities = q["ents"]
    seen = {d for ids, _ in q["base"] for d in ids}
    added: dict[tuple[str, ...], float] = {}
    for ids, relevance in q["base"][:hits]:
        for e in ents.held(ids):
            if ents.df[e] <= max_df:
                for other in ents.turns[e] - seen:
                    added[(other,)] = max(added.get((other,), 0.0), discount * relevance)
    return merged(q["base"], added)


def entity_leg(q: dict[str, Any], max_df: int, discount: float) -> list[tuple[str, ...]]:
    """Turns holding one of the question's rare entities join at ``discount`` × the best hit's relevance."""
    ents: Entities = q["ents"]
    seen = {d for ids, _ in q["base"] for d in ids}
    top = q["base"][0][1] if q["base"] else 1.0
    added: dict[tuple[str, ...], float] = {
        (other,): discount * top for e in q["entities"] if 0 < ents.df[e] <= max_df for other in ents.turns[e] - seen
    }
    return merged(q["base"], added)


def coverage(q: dict[str, Any], weight: float) -> list[tuple[str, ...]]:
    """Greedy: each next position goes to the best relevance + ``weight`` × the share of the question's entities
    it newly covers."""
    ents: Entities = q["ents"]
    wanted = {e for e in q["entities"] if ents.df[e] > 0}
    left, out, covered = list(q["base"]), [], set[str]()
    while left:
        best = max(
            left, key=lambda item: item[1] + weight * len((ents.held(item[0]) & wanted) - covered) / max(1, len(wanted))
        )
        left.remove(best)
        out.append(best[0])
        covered |= ents.held(best[0]) & wanted
    return out


def session_spread(q: dict[str, Any], penalty: float, free: int) -> list[tuple[str, ...]]:
    """Greedy: a hit loses ``penalty`` for each hit of its session already placed beyond the first ``free``
    (multi-hop gold turns lie in several sessions)."""
    left, out, placed = list(q["base"]), [], Counter[str]()

    def session(ids: tuple[str, ...]) -> str:
        return ids[0].split(":", 1)[0] if ids else ""

    while left:
        best = max(left, key=lambda item: item[1] - penalty * max(0, placed[session(item[0])] - free + 1))
        left.remove(best)
        out.append(best[0])
        placed[session(best[0])] += 1
    return out


def where_missed(queries: Sequence[dict[str, Any]], ents: dict[str, Entities]) -> None:
    stats: Counter[str] = Counter()
    for q in queries:
        e = ents[q["sample_id"]]
        top = [d for ids, _ in q["base"][:10] for d in ids]
        for gold in set(q["gold"]) - set(top):
            held = e.of.get(gold, set())
            category = CATEGORIES[q["category"]]
            stats[f"{category}: missed gold turns"] += 1
            stats[f"{category}:   holding an entity"] += bool(held)
            stats[f"{category}:   sharing a rare entity (df <= 10) with a top-10 hit"] += any(
                e.df[x] <= 10 for x in held & e.held(top)
            )
            stats[f"{category}:   holding an entity the question names"] += bool(held & q["entities"])
    for key in sorted(stats, key=lambda k: (k.split(":")[0], not k.endswith("turns"), k)):
        print(f"  {key:<72} {stats[key]}")


# --- a learned fusion -----------------------------------------------------------------------------------------


def features(q: dict[str, Any], hit: dict[str, Any]) -> list[float]:
    e = hit["explain"]
    top_similarity = max(h["explain"]["similarity"] or 0.0 for h in q["product"])
    top_lexical = max(h["explain"]["lexical"] or 0.0 for h in q["product"]) or 1.0
    similarity = e["similarity"] or 0.0
    return [
        1.0, e["fused"] or 0.0, e["own_relevance"] or 0.0, e["neighbour_relevance"] or 0.0, similarity,
        similarity - top_similarity, (e["lexical"] or 0.0) / top_lexical, 1.0 / (e["vector_rank"] or 100),
        1.0 / (e["lexical_rank"] or 100), e["time_expression"] or 0.0, e["time_period"] or 0.0, 1.0 / hit["rank"],
    ]  # fmt: skip


def logistic_fit(queries: Sequence[dict[str, Any]], l2: float, steps: int = 3000, rate: float = 0.5) -> Callable:
    rows = [(features(q, h), float(bool(set(h["dia_ids"]) & set(q["gold"])))) for q in queries for h in q["product"]]
    x, y = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    mean, scale = x.mean(0), x.std(0)
    scale[scale == 0], mean[0], scale[0] = 1.0, 0.0, 1.0
    z = (x - mean) / scale
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ w))
        w -= rate * (z.T @ (p - y) / len(y) + l2 * np.r_[0.0, w[1:]])
    return lambda q, hit: float(((np.array(features(q, hit)) - mean) / scale) @ w)


def learned(queries: Sequence[dict[str, Any]], l2: float) -> list[list[tuple[str, ...]]]:
    """Leave one conversation out: each conversation's questions ranked by a model trained on the others'."""
    out: dict[int, list[tuple[str, ...]]] = {}
    for held in sorted({q["sample_id"] for q in queries}):
        score = logistic_fit([q for q in queries if q["sample_id"] != held], l2)
        for i, q in enumerate(queries):
            if q["sample_id"] == held:
                out[i] = [tuple(h["dia_ids"]) for h in sorted(q["product"], key=lambda h: -score(q, h))]
    return [out[i] for i in range(len(queries))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dump", type=Path, help="a retrieval.py --dump file")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET)
    args = parser.parse_args()
    ents = {c.sample_id: Entities(c) for c in dataset_load(args.data)}
    queries = [q for q in (json.loads(line) for line in args.dump.open()) if "gold" in q]
    for q in queries:
        q["base"] = [(tuple(h["dia_ids"]), h["explain"]["relevance"]) for h in q["product"]]
        q["ents"] = ents[q["sample_id"]]
        q["entities"] = entities("_ " + q["question"], q["ents"].speakers)
    named = sum(1 for q in queries if q["entities"])
    print(f"{len(queries)} questions, {named} naming an entity besides the speakers")

    def run(name: str, rank: Callable[[dict[str, Any]], list[tuple[str, ...]]]) -> None:
        report(name, queries, [rank(q) for q in queries])

    run("the product (the dump's order)", lambda q: [d for d, _ in q["base"]])
    for hits, max_df, discount in [(3, 4, 0.6), (3, 2, 0.6), (5, 4, 0.5), (3, 4, 0.8), (1, 3, 0.7)]:
        run(
            f"second hop: {hits} hits, df <= {max_df}, x {discount}",
            partial(second_hop, hits=hits, max_df=max_df, discount=discount),
        )
    for max_df, discount in [(6, 0.7), (3, 0.7), (6, 0.5), (10, 0.6)]:
        run(
            f"entity leg: df <= {max_df}, x {discount}",
            partial(entity_leg, max_df=max_df, discount=discount),
        )
    for weight in (0.05, 0.15, 0.3):
        run(f"entity coverage: weight {weight}", partial(coverage, weight=weight))
    for penalty, free in [(0.05, 3), (0.05, 1), (0.1, 2)]:
        run(f"session spread: {penalty} past {free}", partial(session_spread, penalty=penalty, free=free))
    for l2 in (1e-3, 1e-2, 1e-1):
        report(f"learned fusion: l2 {l2}", queries, learned(queries, l2))
    print("where the gold turns outside the top 10 stand:")
    where_missed(queries, ents)


if __name__ == "__main__":
    main()
