"""The output of ``retrieval.py``: the figures' table, the missed queries, the per-query dump, the turns
the write gate refused."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _locomo import CATEGORIES, METRIC_LABELS, METRICS, Bm25Run
from common import log

SEARCH_LIMIT = 10  # the depth of a dump line with no hits


def table(rows: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """Metric-major: for each metric, one line per system; columns overall and per category."""
    columns = ["overall", *(f"{n} {name}" for n, name in CATEGORIES.items())]

    def cell(figures: dict[str, Any], column: str, metric: str) -> Any:
        return (figures["overall"] if column == "overall" else figures["by_category"][column])[metric]

    label_width = max(len(name) for name, _ in rows) + 12
    lines = [" " * label_width + "".join(f"{c:>15}" for c in columns)]
    lines.append(f"{'queries':<{label_width}}" + "".join(f"{cell(rows[0][1], c, 'n'):>15}" for c in columns))
    for metric, label in zip(METRICS, METRIC_LABELS, strict=True):
        for i, (name, figures) in enumerate(rows):
            head = f"{label if i == 0 else '':<12} {name}"
            lines.append(f"{head:<{label_width}}" + "".join(f"{cell(figures, c, metric):>15.3f}" for c in columns))
    return "\n".join(lines)


def misses_print(results: Sequence[Any], texts: dict[str, dict[str, str]], n: int) -> None:
    misses = [r for r in results if not (set().union(*r.ranked()[:10]) & set(r.query.gold))]
    log(f"\n{len(misses)} queries with no gold turn in the top 10; the first {min(n, len(misses))}:")
    for r in misses[:n]:
        q = r.query
        log(f"\n  [{q.sample_id} qa#{q.qa_index}, {CATEGORIES[q.category]}] {q.question}")
        for d in q.gold:
            log(f"    gold {d:<8} {texts[q.sample_id][d][:150]}")
        for rank, hit in enumerate(r.hits[:3], start=1):
            dia = ",".join(hit["dia_ids"]) or "?"
            text = texts[q.sample_id].get(hit["dia_ids"][0], hit["content"]) if hit["dia_ids"] else hit["content"]
            log(f"    #{rank} {dia:<8} rel {hit['relevance']:.3f}  {text[:150]}")


def dump_write(
    path: Path,
    results: Sequence[Any],
    bm25: Bm25Run,
    texts: dict[str, dict[str, str]],
    meta: dict[str, Any],
) -> None:
    """One JSON line per query: the product's ranking with every hit's explain breakdown, and BM25's
    ranking of the same depth, with the turns' texts, for offline analysis of the fusion."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        out.write(json.dumps({"meta": meta}) + "\n")
        for r in results:
            q = r.query
            depth = len(r.hits) or SEARCH_LIMIT
            line = {
                "sample_id": q.sample_id,
                "qa_index": q.qa_index,
                "category": q.category,
                "question": q.question,
                "gold": list(q.gold),
                "gold_texts": {d: texts[q.sample_id][d] for d in q.gold},
                "ms": round(r.ms, 2),
                "product": [
                    {
                        "rank": rank,
                        **{k: v for k, v in h.items() if k != "content"},
                        "text": texts[q.sample_id][h["dia_ids"][0]] if h["dia_ids"] else h["content"],
                    }
                    for rank, h in enumerate(r.hits, start=1)
                ],
                "bm25": [
                    {"rank": rank, "dia_id": d, "score": round(s, 4), "text": texts[q.sample_id][d]}
                    for rank, (d, s) in enumerate(bm25.rankings[(q.sample_id, q.qa_index)][: max(depth, 20)], start=1)
                ],
            }
            out.write(json.dumps(line) + "\n")


def refusals_summary(bank: Any, conversations: Sequence[Any]) -> dict[str, Any]:
    """How many turns the write gate kept out of the bank, why, and how many queries lose a gold turn."""
    by_reason: dict[str, int] = {}
    for refused in bank.refused.values():
        for reason in refused.values():
            by_reason[reason] = by_reason.get(reason, 0) + 1
    return {
        "turns": sum(len(c.turns) for c in conversations),
        "turns_refused": sum(by_reason.values()),
        "by_reason": dict(sorted(by_reason.items())),
        "refused": {sample: sorted(refused) for sample, refused in bank.refused.items() if refused},
        "queries_with_refused_gold": sum(
            1 for c in conversations for q in c.queries if set(q.gold) & set(bank.refused.get(c.sample_id, {}))
        ),
    }
