"""Consolidation quality on a labelled set (issue 17 item 1): what the real consolidation run merges,
synthesises, links and supersedes, against labels, per embedder and judge.

    .venv/bin/python bench/consolidation_quality.py                       # hashing + minilm, every judge mode
    .venv/bin/python bench/consolidation_quality.py --embedders minilm --modes scripted none
    .venv/bin/python bench/consolidation_quality.py --similarity-only      # cosine distributions only, no runs
    .venv/bin/python bench/consolidation_quality.py --sample 4             # every 4th item: a quick look

The set is ``bench/data/consolidation_set.jsonl`` (format: ``bench/data/README.md``): items of one to
four memories with a label per pair — duplicate, paraphrase_detail, complementary, contradiction,
supersession, unrelated; a pair of two different items is "cross-item" (no relation intended).

For each embedder (``hashing``, ``minilm``; one that cannot be built here is reported and skipped):

1. **Similarities** (numpy): every memory's text exactly as the record service embeds it
   (``title\\ndescription\\ncontent`` of the validated, scrubbed draft), cosine of every labelled pair
   and of every cross-item pair; per label min / p10 / median / p90 / max; the thresholds the set
   supports (duplicate precision ≥ 0.99, cluster precision ≥ 0.99, the band that sends 95% / 100%
   of the disagreeing pairs to the judge) and what the product's thresholds give.
2. **Runs**, per judge mode, each on a fresh org ``cq-<embedder>-<mode>`` (enterprise plan) with one
   project: every memory recorded through ``memories.services.memory_record_or_duplicate`` (the
   vectors computed in step 1 are served to it, on-demand consolidation disconnected while
   loading), dated memories placed in the last 25 days in their order; then a **dry run** and the
   **real run** on the same data — ``consolidation_request`` + ``consolidation_execute(run_id,
   llm=…)``, as ``tests/consolidation/vectors.py`` ``run_cycle`` does, with the product's own
   thresholds. Modes:

   - ``scripted``: an LLM that answers from the labels (``LabelJudge``): the supersession check says
     "supersedes, high" only for a pair labelled supersession in its dated direction, the
     contradiction judge "contradicts, 0.9" only for a pair labelled contradiction (or
     supersession); synthesis and summary prompts get well-formed replies. The product's cap of
     judged pairs per run (``MAX_JUDGED_PAIRS``) applies.
   - ``scripted-all``: the same judge with that cap lifted (patched in ``consolidation.phases.judge``
     for the run), to separate what the thresholds do from what the cap does.
   - ``none``: ``reasoningbank.ai.llm.NoLLM`` — the judge and synthesis wait.

3. **What happened**, read from the database: ``MemoryLink`` kinds duplicates / contradicts /
   supersedes / consolidates, ``Memory.state`` / ``archived_reason`` / ``consolidated_into``. Each
   original memory is followed to the memory that now stands for it (duplicate → its kept memory,
   consolidated → the synthesised memory); two memories "ended in one memory" when they arrive at
   the same one. Per decision, pairwise precision and recall:

   - duplicate merge: pairs merged as duplicates; right when labelled duplicate; recall over the
     duplicate pairs;
   - cluster membership (synthesis): pairs synthesised into one memory; right when labelled
     duplicate, paraphrase_detail or complementary ("strict" also counts cross-item pairs as wrong);
     recall: paraphrase_detail pairs that ended in one memory (by either route);
   - contradiction link: ``contradicts`` links; right when labelled contradiction; recall over them;
   - supersession: ``supersedes`` links newer → older; right when labelled supersession in that
     direction; recall over them;
   - **disagreeing pairs merged**: contradiction pairs that ended in one memory (target 0), and
     supersession pairs that did (merged instead of superseded).

   The dry run's preview (duplicate groups, clusters, pairs for the judge) is scored the same way
   and compared with what the real run did on identical data.

Data: a dedicated embedded PostgreSQL, ``RB_DATA_DIR=<repo>/.data/bench-quality`` unless set. Results:
``bench/results/consolidation-quality-<date>.json``. See bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, RESULTS_DIR, django_setup, machine_info, revision, write_json

DATA_DIR = REPO / ".data" / "bench-quality"
DATASET = Path(__file__).resolve().parent / "data" / "consolidation_set.jsonl"
SCHEMA_VERSION = 1
DEFAULT_EMBEDDERS = ("hashing", "minilm")
MODES = ("scripted", "scripted-all", "none")
ORG_PREFIX = "cq-"
LABELS = ("duplicate", "paraphrase_detail", "complementary", "contradiction", "supersession", "unrelated")
CROSS = "cross-item"  # two memories of different items: no relation intended
DISAGREE = ("contradiction", "supersession")
MAY_CLUSTER = ("duplicate", "paraphrase_detail", "complementary")
# dated memories are placed in this window before now: older than 30 days would make the run's stale
# archival take them (they have no usage), which is not what the set measures
DATED_WINDOW = (timedelta(days=25), timedelta(days=1))
PRECISION_TARGET = 0.99
BAND_COVERAGE = 0.95


def log(message: str = "") -> None:
    print(message, flush=True)


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


# --- the judge that answers from the labels --------------------------------------------------------------

SYNTHESIS_PREFIX = "You are consolidating"
CONTRADICTION_PREFIX = "Do these two statements contradict"
PATTERN_PREFIX = "Analyze these episodic memories"


class LabelJudge:
    """An LLM for the consolidation run that tells the truth as the labels have it.

    Prompts are routed by type the way ``tests/consolidation/vectors.py`` ``cycle_llm`` does; the
    memories a judge prompt is about are found by their stored content (unique in the set). Every
    question is counted by the pair's label, so the report says what the judge was shown. Thread
    safe: the run asks several prompts at once (``CONSOLIDATION_LLM_CONCURRENCY``)."""

    provider = "bench"
    model = "label-judge-1"

    def __init__(self, ds: Dataset, contents: dict[str, str]) -> None:
        self.ds = ds
        # longest first, so a content that contains another is found before it
        self.contents = sorted(contents.items(), key=lambda kv: -len(kv[0]))
        self.asked: dict[str, Counter[str]] = {"supersession": Counter(), "contradiction": Counter()}
        self.prompts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _refs(self, prompt: str) -> list[str]:
        found = [(prompt.find(text), ref) for text, ref in self.contents if text in prompt]
        return [ref for _, ref in sorted(found)]

    def _count(self, what: str, refs: list[str]) -> str:
        label = self.ds.label(refs[0], refs[1]) if len(refs) == 2 else "unknown"
        with self._lock:
            self.asked[what][label] += 1
        return label

    def complete(self, *, system: str, prompt: str, max_tokens: int = 2048, temperature: float = 0.0) -> Any:
        from consolidation import prompts as cprompts
        from reasoningbank.ai.llm import LLMPermanentError, LLMResult

        summary_system = getattr(cprompts, "SUMMARY_SYSTEM_PROMPT", None)
        if prompt.startswith(SYNTHESIS_PREFIX):
            kind, text = "synthesis", self._synthesis(prompt)
        elif system == cprompts.SUPERSESSION_SYSTEM_PROMPT:
            kind, text = "supersession", self._supersession(prompt)
        elif summary_system is not None and system == summary_system:
            kind, text = "summary", self._summary(prompt)
        elif prompt.startswith(CONTRADICTION_PREFIX):
            kind, text = "contradiction", self._contradiction(prompt)
        elif prompt.startswith(PATTERN_PREFIX):
            kind, text = "patterns", "[]"
        else:  # a prompt type this bench does not know: a failed call, which the run reports
            with self._lock:
                self.prompts["unknown"] += 1
            raise LLMPermanentError(f"bench judge: unknown prompt {prompt[:80]!r}", provider=self.provider)
        with self._lock:
            self.prompts[kind] += 1
        return LLMResult(
            text=text,
            provider=self.provider,
            model=self.model,
            input_tokens=len(prompt) // 4,
            output_tokens=len(text) // 4,
            latency_ms=0.0,
            attempts=1,
        )

    def _supersession(self, prompt: str) -> str:
        refs = self._refs(prompt)  # in prompt order: OLDER first, then NEWER
        label = self._count("supersession", refs)
        pair = self.ds.by_pair.get(frozenset(refs)) if len(refs) == 2 else None
        yes = label == "supersession" and pair is not None and (pair.a, pair.b) == (refs[0], refs[1])
        return json.dumps(
            {"supersedes": yes, "confidence": "high", "reason": "the newer memory records the change" if yes else None}
        )

    def _contradiction(self, prompt: str) -> str:
        label = self._count("contradiction", self._refs(prompt))
        yes = label in DISAGREE  # a supersession pair disagrees too, if it ever reaches this question
        return json.dumps(
            {
                "reasoning": "Compared both statements against the labelled set.",
                "contradicts": yes,
                "confidence": 0.9 if yes else 0.1,
                "explanation": f"labelled {label}",
            }
        )

    @staticmethod
    def _synthesis(prompt: str) -> str:
        titles = [line[len("Title: ") :] for line in prompt.splitlines() if line.startswith("Title: ")]
        contents = [line[len("Content: ") :] for line in prompt.splitlines() if line.startswith("Content: ")]
        body = "\n".join(f"- {c}" for c in contents) or "Merged guidance."
        return (
            f"TITLE: {(titles[0] if titles else 'Consolidated strategy')[:180]}\n"
            f"CONTENT: {body}\n"
            "TAGS: consolidated\n"
            "OUTCOME: success\n"
            f"SOURCE_ATTRIBUTION: Synthesized from {len(titles)} source memories"
        )

    @staticmethod
    def _summary(prompt: str) -> str:
        ids = [line[len("Memory id: ") :] for line in prompt.splitlines() if line.startswith("Memory id: ")]
        return json.dumps(
            {
                "summary": f"Summary of {len(ids)} memories.",
                "key_facts": [f"fact from {mid}" for mid in ids],
                "decisions": [],
                "superseded_facts": [],
            }
        )


# --- the database side ----------------------------------------------------------------------------------


@contextlib.contextmanager
def judge_cap(lifted: bool) -> Iterator[int | None]:
    """Yield the judge's per-run cap in force (``CONSOLIDATION_MAX_JUDGED_PAIRS``); lifted, the setting
    is raised for the duration (bench only: the product keeps its cap)."""
    from django.conf import settings

    cap = int(settings.CONSOLIDATION_MAX_JUDGED_PAIRS)
    if not lifted:
        yield cap
        return
    settings.CONSOLIDATION_MAX_JUDGED_PAIRS = 10**9
    try:
        yield None
    finally:
        settings.CONSOLIDATION_MAX_JUDGED_PAIRS = cap


def product_thresholds() -> dict[str, float]:
    """The thresholds the product applies now (settings; their defaults depend on the embedder)."""
    from django.conf import settings

    return {
        "duplicate": float(settings.CONSOLIDATION_DUPLICATE_THRESHOLD),
        "cluster": float(settings.CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD),
        "band_low": float(settings.CONSOLIDATION_JUDGE_MIN_SIMILARITY),
        "band_high": float(settings.CONSOLIDATION_DUPLICATE_THRESHOLD),
    }


def consolidation_settings() -> dict[str, Any]:
    from django.conf import settings

    return {name: getattr(settings, name) for name in dir(settings) if name.startswith("CONSOLIDATION_")}


def embedded_texts(ds: Dataset) -> dict[str, str]:
    """ref → the text the record service embeds for it (the validated, scrubbed draft's fields)."""
    from memories.services import memory_draft, memory_embedding_text

    out = {}
    for m in ds.memories:
        draft = memory_draft(title=m.title, description=m.description, content=m.content, outcome=m.outcome)
        out[m.ref] = memory_embedding_text(draft.title, draft.description, draft.content)
    return out


def dated_placement(ds: Dataset, now: datetime) -> dict[str, datetime]:
    """Dated memories in the last 25 days, in their order and proportions (supersession needs the
    order; stale archival would take memories idle for 30 days)."""
    dated = {m.ref: m.created_at for m in ds.memories if m.created_at is not None}
    if not dated:
        return {}
    first, last = min(dated.values()), max(dated.values())
    span = (last - first).total_seconds() or 1.0
    start, end = now - DATED_WINDOW[0], now - DATED_WINDOW[1]
    return {ref: start + (end - start) * ((at - first).total_seconds() / span) for ref, at in dated.items()}


@dataclass
class Bank:
    org: Any
    project: Any
    principal: Any
    ids: dict[str, str]  # ref → memory id
    refused: dict[str, str]  # ref → why the record service refused it (a write gate, say)
    seconds: float


def bank_load(ds: Dataset, slug: str, vectors: dict[str, list[float]], texts: dict[str, str], embedder: Any) -> Bank:
    """A fresh org with one project holding the set, recorded through the product's record service."""
    from django.db import transaction
    from django.utils import timezone
    from retrieval import bank_reset, on_demand_consolidation_off

    from accounts.access import principal_for_token
    from accounts.services import organization_create, project_create, token_create
    from memories.models import Memory
    from memories.services import memory_record_or_duplicate
    from reasoningbank.errors import ServiceError

    started = time.perf_counter()
    bank_reset(slug)
    org = organization_create(slug=slug, name=f"Consolidation quality bench ({slug})", plan="enterprise")
    project = project_create(organization=org, slug="set", actor=None)
    token, _raw = token_create(organization=org, label="bench-quality", projects=[project])
    principal = principal_for_token(token)
    served = {texts[ref]: vectors[ref] for ref in texts}
    original = embedder.embed

    def embed(batch: Sequence[str]) -> list[list[float]]:
        # the vectors of step 1, so each embedder embeds the set once per invocation
        if batch and all(t in served for t in batch):
            return [served[t] for t in batch]
        return original(batch)  # type: ignore[no-any-return]

    ids: dict[str, str] = {}
    refused: dict[str, str] = {}
    embedder.embed = embed  # the cached instance the record service gets from settings
    try:
        with on_demand_consolidation_off(), transaction.atomic():
            for m in ds.memories:
                try:
                    with transaction.atomic():
                        result = memory_record_or_duplicate(
                            principal=principal,
                            title=m.title,
                            description=m.description,
                            content=m.content,
                            outcome=m.outcome,
                            project=project.slug,
                        )
                except ServiceError as exc:  # e.g. a write gate refusing it: reported, not fatal
                    refused[m.ref] = str(exc)
                    continue
                if result.duplicate:
                    refused[m.ref] = f"identical to {result.memory.id}"
                    continue
                ids[m.ref] = result.memory.id
            for ref, at in dated_placement(ds, timezone.now()).items():
                if ref in ids:
                    Memory.objects.filter(pk=ids[ref]).update(created_at=at, updated_at=at)
    finally:
        del embedder.embed  # back to the class's method
    return Bank(org, project, principal, ids, refused, time.perf_counter() - started)


def run_consolidation(bank: Bank, llm: Any, *, dry: bool) -> Any:
    from consolidation.runs import consolidation_execute, consolidation_request, run_options_validate

    run = consolidation_request(
        principal=bank.principal, project=bank.project, options=run_options_validate(dry_run=dry, force=True)
    )
    finished = consolidation_execute(run.id, llm=llm)
    if finished is None:
        raise RuntimeError(f"run {run.id} was not claimed")
    return finished


@dataclass
class Outcome:
    """What one run did, in terms of the set's memories (refs)."""

    dup_groups: list[set[str]]  # merged as duplicates (the kept memory and the archived ones)
    clusters: list[set[str]]  # synthesised into one memory (duplicates folded into their kept one)
    contradicts: set[frozenset[str]]
    supersedes: set[tuple[str, str]]  # (newer, older)
    judged: set[frozenset[str]]  # pairs a dry run would send to the judge
    clusters_waiting: int = 0  # clusters a dry run lists as waiting for an LLM


def outcome_from_db(bank: Bank) -> Outcome:
    from memories.models import Memory, MemoryLink

    ref_of = {mid: ref for ref, mid in bank.ids.items()}
    into = dict(
        Memory.objects.filter(organization=bank.org, consolidated_into__isnull=False).values_list(
            "id", "consolidated_into_id"
        )
    )
    dup_keep: dict[str, str] = {}
    contradicts: set[frozenset[str]] = set()
    supersedes: set[tuple[str, str]] = set()
    for kind, source, target in MemoryLink.objects.filter(organization=bank.org).values_list(
        "kind", "source_id", "target_id"
    ):
        if kind == MemoryLink.KIND_DUPLICATES:
            dup_keep[target] = source
        elif kind == MemoryLink.KIND_CONTRADICTS and source in ref_of and target in ref_of:
            contradicts.add(frozenset((ref_of[source], ref_of[target])))
        elif kind == MemoryLink.KIND_SUPERSEDES and source in ref_of and target in ref_of:
            supersedes.add((ref_of[source], ref_of[target]))

    def kept(mid: str) -> str:
        """The memory a duplicate was merged into (through chains, should a later run merge again)."""
        seen = set()
        while mid in dup_keep and mid not in seen:
            seen.add(mid)
            mid = dup_keep[mid]
        return mid

    keepers = set(dup_keep.values())
    dup_groups: dict[str, set[str]] = {}
    clusters: dict[str, set[str]] = {}
    for ref, mid in bank.ids.items():
        keep = kept(mid)
        if keep != mid or keep in keepers:  # archived as a duplicate, or the one kept for others
            dup_groups.setdefault(keep, set()).add(ref)
        if keep in into:
            clusters.setdefault(into[keep], set()).add(ref)
    return Outcome(
        [g for g in dup_groups.values() if len(g) > 1],
        [c for c in clusters.values() if len(c) > 1],
        contradicts,
        supersedes,
        set(),
    )


def outcome_from_preview(bank: Bank, preview: dict[str, Any]) -> tuple[Outcome, list[str]]:
    """A dry run's proposals as an Outcome, and the preview keys this bench could not read."""
    ref_of = {mid: ref for ref, mid in bank.ids.items()}
    unread: list[str] = []
    dup_groups: list[set[str]] = []
    for entry in preview.get("duplicates", []):
        try:
            ids = [entry["keep"], *entry["archive"]]
        except (KeyError, TypeError):
            unread.append("duplicates")
            continue
        dup_groups.append({ref_of[i] for i in ids if i in ref_of})
    group_of = {ref: g for g in dup_groups for ref in g}
    clusters: list[set[str]] = []
    waiting = 0
    for entry in preview.get("clusters", []):
        members = entry.get("members") if isinstance(entry, dict) else None
        if members is None:
            unread.append("clusters")
            continue
        if "wait" in str(entry.get("then", "")):  # listed, but the run would not merge it (no LLM)
            waiting += 1
            continue
        refs = {ref_of[i] for i in members if i in ref_of}
        # a kept duplicate brings the memories merged into it
        refs |= {r for ref in list(refs) for r in group_of.get(ref, ())}
        clusters.append(refs)
    judged = set()
    for entry in preview.get("judge_pairs", []):
        try:
            judged.add(frozenset((ref_of[entry["older"]], ref_of[entry["newer"]])))
        except (KeyError, TypeError):
            unread.append("judge_pairs")
    outcome = Outcome(dup_groups, [c for c in clusters if len(c) > 1], set(), set(), judged, waiting)
    return outcome, sorted(set(unread))


# --- scoring ---------------------------------------------------------------------------------------------


def pairs_within(groups: Iterable[set[str]]) -> set[frozenset[str]]:
    return {frozenset(p) for g in groups for p in combinations(sorted(g), 2)}


def ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def by_cue(pairs: Iterable[PairSpec]) -> dict[str, list[PairSpec]]:
    out: dict[str, list[PairSpec]] = {}
    for p in pairs:
        out.setdefault(p.cue or "-", []).append(p)
    return out


def score(ds: Dataset, outcome: Outcome, present: set[str]) -> dict[str, Any]:
    """Pairwise precision and recall of each decision, and the disagreeing pairs that ended in one
    memory. Pairs with a memory the bank refused are left out of the recalls."""
    gold: dict[str, list[PairSpec]] = {label: [] for label in LABELS}
    for p in ds.pairs:
        if p.a in present and p.b in present:
            gold[p.label].append(p)
    dup_pairs = pairs_within(outcome.dup_groups)
    # one memory now stands for both: the same duplicate group, or the same synthesised cluster
    joined = dup_pairs | pairs_within(outcome.clusters)
    synth_pairs = pairs_within(outcome.clusters) - dup_pairs

    def labels_of(pairs: Iterable[frozenset[str]]) -> Counter[str]:
        return Counter(ds.label(*sorted(p)) for p in pairs)

    dup_labels, synth_labels = labels_of(dup_pairs), labels_of(synth_pairs)
    contra_labels = labels_of(outcome.contradicts)
    key = frozenset
    right_supersedes = sum(
        1
        for newer, older in outcome.supersedes
        if (p := ds.by_pair.get(key((newer, older)))) is not None
        and p.label == "supersession"
        and (p.a, p.b) == (older, newer)
    )
    disagreeing_joined = {label: [p for p in gold[label] if key((p.a, p.b)) in joined] for label in DISAGREE}
    synth_right = sum(synth_labels[label] for label in MAY_CLUSTER)
    return {
        "duplicate_merge": {
            "pairs": len(dup_pairs),
            "precision": ratio(dup_labels["duplicate"], len(dup_pairs)),
            "recall": ratio(sum(key((p.a, p.b)) in dup_pairs for p in gold["duplicate"]), len(gold["duplicate"])),
            "by_label": dict(dup_labels),
        },
        "cluster_membership": {
            "pairs": len(synth_pairs),
            "clusters": len(outcome.clusters),
            "precision": ratio(
                synth_right, synth_right + sum(synth_labels[label] for label in ("unrelated", *DISAGREE))
            ),
            "precision_strict": ratio(synth_right, len(synth_pairs)),
            "recall_paraphrase_detail": ratio(
                sum(key((p.a, p.b)) in joined for p in gold["paraphrase_detail"]), len(gold["paraphrase_detail"])
            ),
            "recall_duplicate_any_route": ratio(
                sum(key((p.a, p.b)) in joined for p in gold["duplicate"]), len(gold["duplicate"])
            ),
            "by_label": dict(synth_labels),
        },
        "contradiction_link": {
            "links": len(outcome.contradicts),
            "precision": ratio(contra_labels["contradiction"], len(outcome.contradicts)),
            "recall": ratio(
                sum(key((p.a, p.b)) in outcome.contradicts for p in gold["contradiction"]), len(gold["contradiction"])
            ),
            "recall_by_cue": {
                cue: ratio(sum(key((p.a, p.b)) in outcome.contradicts for p in group), len(group))
                for cue, group in sorted(by_cue(gold["contradiction"]).items())
            },
            "by_label": dict(contra_labels),
        },
        "supersession": {
            "links": len(outcome.supersedes),
            "precision": ratio(right_supersedes, len(outcome.supersedes)),
            "recall": ratio(right_supersedes, len(gold["supersession"])),
        },
        "disagreeing_merged": {
            "contradiction": len(disagreeing_joined["contradiction"]),
            "contradiction_as_duplicate": sum(
                key((p.a, p.b)) in dup_pairs for p in disagreeing_joined["contradiction"]
            ),
            "contradiction_synthesised": sum(
                key((p.a, p.b)) not in dup_pairs for p in disagreeing_joined["contradiction"]
            ),
            "supersession": len(disagreeing_joined["supersession"]),
            "contradiction_by_cue": dict(Counter(p.cue or "-" for p in disagreeing_joined["contradiction"])),
            "contradiction_items": sorted({p.item for p in disagreeing_joined["contradiction"]}),
        },
        "complementary_flagged_as_contradiction": contra_labels["complementary"],
        "gold_pairs": {label: len(v) for label, v in gold.items()},
    }


def parity(dry: Outcome, real: Outcome, dry_run: Any, real_run: Any) -> dict[str, Any]:
    """What the dry run proposed beside what the real run did on identical data."""
    dry_dup = {r for g in dry.dup_groups for r in g}
    real_dup = {r for g in real.dup_groups for r in g}
    dry_clusters = {frozenset(c) for c in dry.clusters}
    real_clusters = {frozenset(c) for c in real.clusters}
    return {
        "proposed": {
            "duplicate_groups": len(dry.dup_groups),
            "duplicate_archived": sum(len(g) - 1 for g in dry.dup_groups),
            "clusters": len(dry.clusters),
            "cluster_members": sum(len(c) for c in dry.clusters),
            "clusters_waiting_for_an_llm": dry.clusters_waiting,
            "judge_pairs": len(dry.judged),
            "archived": (dry_run.counters or {}).get("archived", 0),
        },
        "performed": {
            "duplicate_groups": len(real.dup_groups),
            "duplicate_archived": sum(len(g) - 1 for g in real.dup_groups),
            "clusters": len(real.clusters),
            "cluster_members": sum(len(c) for c in real.clusters),
            "contradiction_links": len(real.contradicts),
            "supersessions": len(real.supersedes),
            "archived": (real_run.counters or {}).get("archived", 0),
        },
        "same_duplicate_merges": dry_dup == real_dup,
        "clusters_identical": len(dry_clusters & real_clusters),
        "clusters_only_proposed": len(dry_clusters - real_clusters),
        "clusters_only_performed": len(real_clusters - dry_clusters),
    }


# --- one embedder ----------------------------------------------------------------------------------------


def run_summary(run: Any) -> dict[str, Any]:
    return {
        "id": run.id,
        "status": run.status,
        "counters": run.counters,
        "options": run.options,
        "warnings": run.warnings,
        "errors": run.errors,
        "phase_durations": run.phase_durations,
        "llm_calls": run.llm_calls,
    }


def mode_run(
    ds: Dataset, kind: str, mode: str, embedder: Any, vectors: dict[str, list[float]], texts: dict[str, str]
) -> dict[str, Any]:
    from memories.models import Memory
    from reasoningbank.ai.llm import NoLLM

    slug = f"{ORG_PREFIX}{kind}-{mode}"
    bank = bank_load(ds, slug, vectors, texts, embedder)
    refused = f", {len(bank.refused)} refused" if bank.refused else ""
    log(f"    {mode}: {len(bank.ids)} memories recorded in {bank.seconds:.1f} s{refused}")

    contents = dict(Memory.objects.filter(pk__in=list(bank.ids.values())).values_list("content", "id"))
    ref_of = {mid: ref for ref, mid in bank.ids.items()}
    judge = LabelJudge(ds, {content: ref_of[mid] for content, mid in contents.items()})
    llm = NoLLM() if mode == "none" else judge
    t0 = time.perf_counter()
    with judge_cap(lifted=mode == "scripted-all") as cap:
        dry_run = run_consolidation(bank, llm, dry=True)
        dry_seconds = time.perf_counter() - t0
        t1 = time.perf_counter()
        real_run = run_consolidation(bank, llm, dry=False)
        real_seconds = time.perf_counter() - t1
    dry, unread = outcome_from_preview(bank, dry_run.preview or {})
    real = outcome_from_db(bank)
    present = set(bank.ids)
    result = {
        "org": slug,
        "memories": len(bank.ids),
        "refused": bank.refused,
        "judge_cap": cap,
        "load_seconds": round(bank.seconds, 2),
        "dry_run_seconds": round(dry_seconds, 2),
        "run_seconds": round(real_seconds, 2),
        "real": score(ds, real, present),
        "dry_run": score(ds, dry, present),
        "parity": parity(dry, real, dry_run, real_run),
        "preview_keys_unread": unread,
        "judge_asked": {k: dict(v) for k, v in judge.asked.items()} if mode != "none" else None,
        "llm_prompts": dict(judge.prompts) if mode != "none" else None,
        "run": run_summary(real_run),
        "dry_run_record": run_summary(dry_run),
    }
    r = result["real"]
    log(
        f"      real: dup P {fmt(r['duplicate_merge']['precision'])} R {fmt(r['duplicate_merge']['recall'])}, "
        f"clusters {r['cluster_membership']['clusters']}, contradiction links {r['contradiction_link']['links']}, "
        f"supersedes {r['supersession']['links']}, disagreeing merged {r['disagreeing_merged']['contradiction']} "
        f"({real_seconds:.1f} s; dry run {dry_seconds:.1f} s)"
    )
    return result


@contextlib.contextmanager
def embedder_context(kind: str) -> Iterator[None]:
    """The embedder and the consolidation thresholds the product would use with it."""
    from django.conf import settings
    from retrieval import embedder_settings

    names = ("CONSOLIDATION_DUPLICATE_THRESHOLD", "CONSOLIDATION_SCHEDULER_SIMILARITY_THRESHOLD",
             "CONSOLIDATION_JUDGE_MIN_SIMILARITY")
    before = {name: getattr(settings, name) for name in names}
    calibrated = dict(zip(names, settings.CONSOLIDATION_CALIBRATED_THRESHOLDS[kind], strict=True))
    for name, value in calibrated.items():
        setattr(settings, name, value)
    try:
        with embedder_settings(kind):
            yield
    finally:
        for name, value in before.items():
            setattr(settings, name, value)


def embedder_run(ds: Dataset, kind: str, modes: Sequence[str], similarity_only: bool) -> dict[str, Any]:
    from retrieval import embedder_build

    embedder, why = embedder_build(kind)
    if embedder is None:
        log(f"  {kind}: unavailable ({why}); skipped")
        return {"unavailable": why}
    with embedder_context(kind):
        texts = embedded_texts(ds)
        t0 = time.perf_counter()
        refs = list(texts)
        vectors = dict(zip(refs, embedder.embed([texts[r] for r in refs]), strict=True))
        embed_seconds = time.perf_counter() - t0
        log(f"  {kind} ({embedder.name}): {len(refs)} texts embedded in {embed_seconds:.1f} s")
        thresholds = product_thresholds()
        report = similarity_report(ds, {r: np.asarray(v, dtype=float) for r, v in vectors.items()}, thresholds)
        out: dict[str, Any] = {
            "embedding_model": embedder.name,
            "embed_seconds": round(embed_seconds, 2),
            "product_thresholds": thresholds,
            "consolidation_settings": consolidation_settings(),
            "similarity": report,
            "modes": {},
        }
        if similarity_only:
            return out
        for mode in modes:
            out["modes"][mode] = mode_run(ds, kind, mode, embedder, vectors, texts)
    return out


# --- printing --------------------------------------------------------------------------------------------


def fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def print_report(report: dict[str, Any]) -> None:
    embedders = {k: v for k, v in report["embedders"].items() if "unavailable" not in v}
    log("\n== Decisions of the real run (pairwise precision / recall) ==")
    log(
        f"{'embedder':<9}{'judge':<14}{'dup P':>7}{'dup R':>7}{'clu P':>7}{'strict':>7}{'clu R':>7}"
        f"{'con P':>7}{'con R':>7}{'sup P':>7}{'sup R':>7}  disagreeing merged (contra: dup+synth / supersession)"
    )
    for kind, e in embedders.items():
        for mode, r in e["modes"].items():
            s = r["real"]
            d = s["disagreeing_merged"]
            log(
                f"{kind:<9}{mode:<14}"
                f"{fmt(s['duplicate_merge']['precision']):>7}{fmt(s['duplicate_merge']['recall']):>7}"
                f"{fmt(s['cluster_membership']['precision']):>7}{fmt(s['cluster_membership']['precision_strict']):>7}"
                f"{fmt(s['cluster_membership']['recall_paraphrase_detail']):>7}"
                f"{fmt(s['contradiction_link']['precision']):>7}{fmt(s['contradiction_link']['recall']):>7}"
                f"{fmt(s['supersession']['precision']):>7}{fmt(s['supersession']['recall']):>7}"
                f"  {d['contradiction']} ({d['contradiction_as_duplicate']}+{d['contradiction_synthesised']}) / "
                f"{d['supersession']}"
            )
    log("(clu R: paraphrase_detail pairs that ended in one memory; strict: cross-item pairs count as wrong)")

    log("\n== Dry run vs real run on identical data ==")
    log(
        f"{'embedder':<9}{'judge':<14}{'proposed: dup archived':>23}{'clusters':>9}{'members':>8}{'wait':>5}"
        f"{'judge':>6}{'contra merged':>14}  |{'done: dup archived':>19}{'clusters':>9}{'members':>8}{'links':>6}"
        f"{'contra merged':>14}  same dups / same clusters"
    )
    for kind, e in embedders.items():
        for mode, r in e["modes"].items():
            p, q = r["parity"]["proposed"], r["parity"]["performed"]
            log(
                f"{kind:<9}{mode:<14}{p['duplicate_archived']:>23}{p['clusters']:>9}{p['cluster_members']:>8}"
                f"{p['clusters_waiting_for_an_llm']:>5}{p['judge_pairs']:>6}"
                f"{r['dry_run']['disagreeing_merged']['contradiction']:>14}  |"
                f"{q['duplicate_archived']:>19}{q['clusters']:>9}{q['cluster_members']:>8}"
                f"{q['contradiction_links'] + q['supersessions']:>6}"
                f"{r['real']['disagreeing_merged']['contradiction']:>14}  "
                f"{'yes' if r['parity']['same_duplicate_merges'] else 'no'} / "
                f"{r['parity']['clusters_identical']} of {max(p['clusters'], q['clusters'])}"
            )
    log(
        "(wait: clusters the dry run lists as waiting for an LLM; judge: pairs it would send to the judge; "
        "links: contradicts + supersedes links made)"
    )

    log("\n== Cosine similarity of the labelled pairs (min / p10 / median / p90 / max) ==")
    for kind, e in report["embedders"].items():
        if "unavailable" in e:
            log(f"{kind}: unavailable — {e['unavailable']}")
            continue
        sim = e["similarity"]
        log(f"{kind} ({e['embedding_model']})")
        for label, st in sim["labels"].items():
            log(
                f"  {label:<18} n={st['n']:>4}  {fmt(st.get('min'))} / {fmt(st.get('p10'))} / "
                f"{fmt(st.get('median'))} / {fmt(st.get('p90'))} / {fmt(st.get('max'))}"
            )
        c = sim["cross_item"]
        log(
            f"  {'cross-item':<18} n={c['n']:>6}  p99 {fmt(c['p99'])}, p99.9 {fmt(c['p999'])}, max {fmt(c['max'])}; "
            f"≥ 0.7: {c['at_or_above_0.7']}, ≥ 0.8: {c['at_or_above_0.8']}"
        )
        cues = ", ".join(f"{cue} {fmt(st['median'])}" for cue, st in sim["contradiction_by_cue"].items())
        log(f"  contradiction median by cue: {cues}")

    log("\n== Thresholds ==")
    log(
        f"{'embedder':<9}{'dup (P≥0.99)':>20}{'dup if cues route':>22}{'cluster (P≥0.99)':>20}"
        f"{'band low 95%/all':>18}{'disagree ≥ high':>16}{'band pairs/1k':>14}"
    )
    for kind, e in embedders.items():
        s = e["similarity"]["suggested"]

        def thr(x: dict[str, Any] | None) -> str:
            return f"{x['threshold']:.3f} (R {fmt(x['recall'], 2)})" if x else "none"

        log(
            f"{kind:<9}{thr(s['duplicate_threshold']):>20}"
            f"{thr(s['duplicate_threshold_if_cues_route_disagreeing_pairs_to_the_judge']):>22}"
            f"{thr(s['cluster_threshold']):>20}"
            f"{fmt(s['contradiction_band_low_95']) + ' / ' + fmt(s['contradiction_band_low_all']):>18}"
            f"{s['disagreeing_pairs_at_or_above_band_high']:>16}{fmt(s['pairs_in_band_95_per_1000_memories'], 1):>14}"
        )
    for kind, e in embedders.items():
        same = e["similarity"]["suggested"]["same_advice_threshold_if_cues_route_and_detail_may_merge"]
        if same:
            log(
                f"{kind}: duplicate + paraphrase_detail vs complementary/unrelated/cross-item separate at "
                f"{same['threshold']:.3f} (P {fmt(same['precision'])}, R {fmt(same['recall'], 2)})"
            )
    for kind, e in embedders.items():
        cur = e["similarity"]["product_thresholds_on_the_set"]
        t = cur["thresholds"]
        log(
            f"{kind}: product thresholds (duplicate {t['duplicate']}, cluster {t['cluster']}, band "
            f"{t['band_low']}–{t['band_high']}): duplicate P {fmt(cur['duplicate_merge']['precision'])} "
            f"R {fmt(cur['duplicate_merge']['recall'])}; disagreeing pairs ≥ duplicate "
            f"{cur['disagreeing_at_or_above_duplicate']}, "
            f"≥ cluster {cur['disagreeing_at_or_above_cluster']}, in band {cur['disagreeing_in_band']}, "
            f"below band (never judged) {cur['disagreeing_below_band_never_judged']}"
        )


# --- main ------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description="Consolidation quality on the labelled set (issue 17)")
    parser.add_argument("--embedders", nargs="+", default=list(DEFAULT_EMBEDDERS))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--data", type=Path, default=DATASET)
    parser.add_argument("--sample", type=int, default=1, help="every n-th item only (a quick look)")
    parser.add_argument(
        "--similarity-only", action="store_true", help="cosine distributions and thresholds only, no consolidation runs"
    )
    parser.add_argument("--output", type=Path, default=None, help="results JSON (default bench/results/…)")
    args = parser.parse_args()

    os.environ.setdefault("RB_DATA_DIR", str(DATA_DIR))
    started = time.perf_counter()
    ds = dataset_load(args.data, max(1, args.sample))
    kinds = Counter(item["kind"] for item in ds.items)
    log(
        f"set: {len(ds.items)} items, {len(ds.memories)} memories, {len(ds.pairs)} labelled pairs "
        f"({', '.join(f'{k} {n}' for k, n in kinds.items())})"
    )
    django_setup(migrate=not args.similarity_only)
    log(f"data dir: {os.environ['RB_DATA_DIR']}")
    report: dict[str, Any] = {
        "benchmark": "consolidation_quality",
        "dataset": {
            "path": str(args.data.relative_to(REPO) if args.data.is_relative_to(REPO) else args.data),
            "sha256": ds.sha256,
            "schema_version": SCHEMA_VERSION,
            "items": len(ds.items),
            "memories": len(ds.memories),
            "pairs": dict(Counter(p.label for p in ds.pairs)),
            "sample": args.sample,
        },
        "config": {"embedders": args.embedders, "modes": args.modes, "similarity_only": args.similarity_only},
        "machine": machine_info(),
        "revision": revision(),
        "embedders": {},
    }
    for kind in args.embedders:
        report["embedders"][kind] = embedder_run(
            ds, kind, [] if args.similarity_only else args.modes, args.similarity_only
        )
    report["seconds"] = round(time.perf_counter() - started, 1)
    if args.similarity_only:
        for e in report["embedders"].values():
            e.setdefault("modes", {})
    print_report(report)
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    path = (
        args.output or RESULTS_DIR / f"consolidation-quality-{date}{'-similarity' if args.similarity_only else ''}.json"
    )
    write_json(path, report)
    log(f"\n{report['seconds']:.0f} s; JSON: {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


if __name__ == "__main__":
    main()
