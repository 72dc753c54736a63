"""The labelled consolidation set (``bench/data/consolidation_set.jsonl``, format: ``bench/data/README.md``) as
``consolidation_quality.py`` reads it, and what its cosine similarities say: per-label distributions and
the thresholds the set supports."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA_VERSION = 1  # of the set's items
DATASET = Path(__file__).resolve().parent / "data" / "consolidation_set.jsonl"
LABELS = ("duplicate", "paraphrase_detail", "complementary", "contradiction", "supersession", "unrelated")
CROSS = "cross-item"  # two memories of different items: no relation intended
DISAGREE = ("contradiction", "supersession")
MAY_CLUSTER = ("duplicate", "paraphrase_detail", "complementary")
PRECISION_TARGET = 0.99
BAND_COVERAGE = 0.95


# --- the data set --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemorySpec:
    ref: str  # "<item id>#<key>"
    item: str
    title: str
    description: str
    content: str
    outcome: str
    created_at: datetime | None


@dataclass(frozen=True)
class PairSpec:
    a: str  # refs; for a supersession a is the older memory
    b: str
    label: str
    cue: str | None
    item: str


@dataclass
class Dataset:
    items: list[dict[str, Any]]
    memories: list[MemorySpec]
    pairs: list[PairSpec]
    sha256: str
    by_pair: dict[frozenset[str], PairSpec] = field(default_factory=dict)
    item_of: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_pair = {frozenset((p.a, p.b)): p for p in self.pairs}
        self.item_of = {m.ref: m.item for m in self.memories}

    def label(self, x: str, y: str) -> str:
        """The pair's label; cross-item for memories of two items (never labelled by the set)."""
        pair = self.by_pair.get(frozenset((x, y)))
        if pair is not None:
            return pair.label
        return CROSS if self.item_of.get(x) != self.item_of.get(y) else "unlabelled"


def dataset_load(path: Path, sample: int = 1) -> Dataset:
    """Read the JSON Lines set (every ``sample``-th item); fails loudly on what the format forbids."""
    raw = path.read_bytes()
    items = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    items = items[::sample]
    memories: list[MemorySpec] = []
    pairs: list[PairSpec] = []
    for item in items:
        if item.get("schema_version") != SCHEMA_VERSION:
            raise SystemExit(
                f"{item.get('id')}: schema_version {item.get('schema_version')} (expected {SCHEMA_VERSION})"
            )
        keys = set()
        for mem in item["memories"]:
            at = mem.get("created_at")
            memories.append(
                MemorySpec(
                    ref=f"{item['id']}#{mem['key']}",
                    item=item["id"],
                    title=mem["title"],
                    description=mem["description"],
                    content=mem["content"],
                    outcome=mem["outcome"],
                    created_at=datetime.fromisoformat(at.replace("Z", "+00:00")) if at else None,
                )
            )
            keys.add(mem["key"])
        for pair in item["pairs"]:
            if pair["label"] not in LABELS or not {pair["a"], pair["b"]} <= keys:
                raise SystemExit(f"{item['id']}: bad pair {pair}")
            pairs.append(
                PairSpec(
                    f"{item['id']}#{pair['a']}", f"{item['id']}#{pair['b']}", pair["label"], pair.get("cue"), item["id"]
                )
            )
    return Dataset(items, memories, pairs, hashlib.sha256(raw).hexdigest())


# --- similarities and the thresholds the set supports ---------------------------------------------------


def stats(values: Sequence[float]) -> dict[str, Any]:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {"n": 0}
    p10, median, p90 = np.percentile(a, [10, 50, 90])
    return {
        "n": int(a.size),
        "min": round(float(a.min()), 4),
        "p10": round(float(p10), 4),
        "median": round(float(median), 4),
        "p90": round(float(p90), 4),
        "max": round(float(a.max()), 4),
    }


def stable_threshold(pos: np.ndarray, neg: np.ndarray, target: float) -> dict[str, Any] | None:
    """The lowest similarity t such that "≥ t" has precision ≥ ``target`` at t *and at every
    stricter threshold* (a threshold that only meets the target by luck at one value is no setting).
    None when even the most similar pair is a negative."""
    values = np.unique(np.concatenate([pos, neg]))[::-1]  # descending
    pos_sorted, neg_sorted = np.sort(pos), np.sort(neg)
    best: dict[str, Any] | None = None
    for t in values:
        tp = pos.size - int(np.searchsorted(pos_sorted, t, side="left"))
        fp = neg.size - int(np.searchsorted(neg_sorted, t, side="left"))
        if tp + fp == 0:
            continue
        precision = tp / (tp + fp)
        if precision < target:
            break
        best = {
            "threshold": round(float(t), 4),
            "precision": round(precision, 4),
            "recall": round(tp / pos.size, 4) if pos.size else None,
        }
    return best


def at_threshold(pos: np.ndarray, neg: np.ndarray, t: float) -> dict[str, Any]:
    tp, fp = int((pos >= t).sum()), int((neg >= t).sum())
    return {
        "threshold": t,
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / pos.size, 4) if pos.size else None,
        "false_positives": fp,
    }


def similarity_report(ds: Dataset, vectors: dict[str, np.ndarray], product: dict[str, float]) -> dict[str, Any]:
    """Cosine of every labelled pair and every cross-item pair, and the thresholds they support."""
    refs = [m.ref for m in ds.memories]
    matrix = np.stack([vectors[r] for r in refs])
    matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    sims = matrix @ matrix.T
    index = {r: i for i, r in enumerate(refs)}
    by_label: dict[str, list[float]] = {label: [] for label in LABELS}
    by_cue: dict[str, list[float]] = {}
    for p in ds.pairs:
        s = float(sims[index[p.a], index[p.b]])
        by_label[p.label].append(s)
        if p.label == "contradiction":
            by_cue.setdefault(p.cue or "-", []).append(s)
    items = np.array([ds.item_of[r] for r in refs])
    upper = np.triu(np.ones_like(sims, dtype=bool), 1)
    cross = sims[upper & (items[:, None] != items[None, :])]
    arr = {label: np.asarray(v) for label, v in by_label.items()}
    dup, para, comp = arr["duplicate"], arr["paraphrase_detail"], arr["complementary"]
    disagree = np.concatenate([arr["contradiction"], arr["supersession"]])
    unrelated = np.concatenate([arr["unrelated"], cross])
    not_dup_agreeing = np.concatenate([para, comp, unrelated])
    dup_strict = stable_threshold(dup, np.concatenate([not_dup_agreeing, disagree]), PRECISION_TARGET)
    dup_with_cues = stable_threshold(dup, not_dup_agreeing, PRECISION_TARGET)
    # and if merging a pair where one memory only adds a detail were acceptable (the merge keeps one
    # of the two, so the detail may be archived): how far the embedder separates same-advice pairs
    dup_same_advice = stable_threshold(np.concatenate([dup, para]), np.concatenate([comp, unrelated]), PRECISION_TARGET)
    cluster = stable_threshold(np.concatenate([dup, para, comp]), unrelated, PRECISION_TARGET)
    band_95 = float(np.percentile(disagree, (1 - BAND_COVERAGE) * 100)) if disagree.size else None
    band_all = float(disagree.min()) if disagree.size else None
    upper_end = (dup_with_cues or {}).get("threshold") or product.get("duplicate", 0.95)
    everything = np.concatenate([dup, para, comp, disagree, unrelated])
    suggestion = {
        "duplicate_threshold": dup_strict,
        "duplicate_threshold_if_cues_route_disagreeing_pairs_to_the_judge": dup_with_cues,
        "same_advice_threshold_if_cues_route_and_detail_may_merge": dup_same_advice,
        "cluster_threshold": cluster,
        "contradiction_band_low_95": round(band_95, 4) if band_95 is not None else None,
        "contradiction_band_low_all": round(band_all, 4) if band_all is not None else None,
        "contradiction_band_high": upper_end,
        "disagreeing_pairs_at_or_above_band_high": int((disagree >= upper_end).sum()),
        "pairs_in_band_95_per_1000_memories": (
            round(int(((everything >= band_95) & (everything < upper_end)).sum()) * 1000 / len(refs), 1)
            if band_95 is not None
            else None
        ),
    }
    dup_t, cluster_t = product.get("duplicate", 0.95), product.get("cluster", 0.8)
    band_low = product.get("band_low", 0.7)
    current = {
        "thresholds": product,
        "duplicate_merge": at_threshold(dup, np.concatenate([not_dup_agreeing, disagree]), dup_t),
        "disagreeing_at_or_above_duplicate": int((disagree >= dup_t).sum()),
        "contradictions_at_or_above_duplicate": int((arr["contradiction"] >= dup_t).sum()),
        "disagreeing_at_or_above_cluster": int((disagree >= cluster_t).sum()),
        "disagreeing_below_band_never_judged": int((disagree < band_low).sum()),
        "disagreeing_in_band": int(((disagree >= band_low) & (disagree < dup_t)).sum()),
        "paraphrase_detail_at_or_above_duplicate": int((para >= dup_t).sum()),
        "paraphrase_detail_at_or_above_cluster": int((para >= cluster_t).sum()),
        "cross_item_at_or_above_cluster": int((cross >= cluster_t).sum()),
    }
    return {
        "labels": {label: stats(v) for label, v in by_label.items()},
        "contradiction_by_cue": {cue: stats(v) for cue, v in sorted(by_cue.items())},
        "cross_item": {
            **stats(cross),
            "p99": round(float(np.percentile(cross, 99)), 4) if cross.size else None,
            "p999": round(float(np.percentile(cross, 99.9)), 4) if cross.size else None,
            "at_or_above_0.7": int((cross >= 0.7).sum()),
            "at_or_above_0.8": int((cross >= 0.8).sum()),
        },
        "suggested": suggestion,
        "product_thresholds_on_the_set": current,
    }
