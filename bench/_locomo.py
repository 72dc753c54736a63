"""The LoCoMo data set as ``bench/retrieval.py`` reads it (the protocol: bench/README.md, "The data"): conversations,
their turns and the queries whose evidence names a turn; how a turn becomes a memory; the ranking
metrics; and the BM25 baseline ranked on the same turns."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
SESSION_KEY = re.compile(r"session_(\d+)")
EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")


# --- the data set (the protocol: bench/README.md, "The data") ----------------------------------------


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    date_text: str  # the session's date as written in the data
    timestamp: datetime

    @property
    def protocol_text(self) -> str:
        """The memory text the protocol (and the BM25 baseline) uses."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Query:
    sample_id: str
    qa_index: int  # position in the conversation's ``qa`` list
    question: str
    category: int
    gold: tuple[str, ...]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    queries: list[Query]

    @property
    def texts(self) -> dict[str, str]:
        return {t.dia_id: t.protocol_text for t in self.turns}


def evidence_ids(evidence: Sequence[str], known: set[str]) -> list[str]:
    """The protocol's normalisation: split on ``;``, ``,`` and whitespace, strip parentheses,
    ``D:11:26`` → ``D11:26``, ``D30:05`` → ``D30:5``; ids that name no turn are dropped."""
    out: list[str] = []
    for entry in evidence:
        for part in re.split(r"[;,\s]+", str(entry)):
            part = part.strip("()")
            match = EVIDENCE_ID.fullmatch(part)
            if match:
                part = f"D{int(match.group(1))}:{int(match.group(2))}"
            if part in known and part not in out:
                out.append(part)
    return out


def dataset_load(path: Path) -> list[Conversation]:
    raw = json.loads(path.read_text())
    conversations = []
    for sample in raw:
        conv = sample["conversation"]
        sessions = sorted((int(m.group(1)), key) for key in conv if (m := SESSION_KEY.fullmatch(key)))
        turns = []
        for number, key in sessions:
            date_text = conv[f"{key}_date_time"]
            timestamp = datetime.strptime(date_text, DATE_FORMAT).replace(tzinfo=UTC)
            for turn in conv[key]:
                turns.append(Turn(turn["dia_id"], number, turn["speaker"], turn["text"], date_text, timestamp))
        known = {t.dia_id for t in turns}
        queries = []
        for index, qa in enumerate(sample["qa"]):
            if qa.get("category") not in CATEGORIES:
                continue  # category 5 is adversarial
            gold = evidence_ids(qa.get("evidence") or [], known)
            if gold:
                queries.append(Query(sample["sample_id"], index, qa["question"], int(qa["category"]), tuple(gold)))
        conversations.append(Conversation(sample["sample_id"], turns, queries))
    return conversations


# --- how a turn becomes a memory -------------------------------------------------------------------
# The product embeds ``title\ndescription\ncontent`` (services.memory_embedding_text) and indexes the
# same three fields for full text (title A, description B, content C); all three are required.
# ``protocol`` (default, the evaluation protocol's own mapping, which the held-out half is measured
# with): title = the speaker, description = the speaker (the write gate refuses a description with
# no letters, so it cannot be left as "-"), content = the turn's text. The searched text is then
# "Caroline\nCaroline\nI went to …": the protocol's "Caroline: I went to …" with the speaker once more.
# ``dated``: the session's date as the description ("Caroline\n1:56 pm on 8 May, 2023\nI went to …"),
# as an agent recording an event would write it; it puts text the reference figures never see in both
# legs (BM25 alone gains ~0.02 recall from it).

MAPPINGS = ("protocol", "dated")


def memory_fields(turn: Turn, mapping: str) -> dict[str, str]:
    description = turn.date_text if mapping == "dated" else turn.speaker
    return {"title": turn.speaker, "description": description, "content": turn.text}


def stored_text(turn: Turn, mapping: str) -> str:
    f = memory_fields(turn, mapping)
    return f"{f['title']}\n{f['description']}\n{f['content']}"


# --- metrics ---------------------------------------------------------------------------------------

METRICS = ("recall@5", "recall@10", "mrr", "ndcg@10", "session_recall@5", "session_recall@10")
METRIC_LABELS = ("recall@5", "recall@10", "MRR@10", "nDCG@10", "session R@5", "session R@10")


def session_of(dia_id: str) -> str:
    """A turn's session: ``D12:3`` is turn 3 of session ``D12``."""
    return dia_id.split(":", 1)[0]


def query_metrics(ranked: Sequence[frozenset[str]], gold: Sequence[str]) -> dict[str, float]:
    """One query's figures. ``ranked`` holds, per result position, the dia_ids it covers (one turn,
    or several when the service folded identical or near-identical memories into one hit)."""
    gold_set = set(gold)

    def recall(k: int) -> float:
        found = set().union(*ranked[:k]) if ranked[:k] else set()
        return len(found & gold_set) / len(gold_set)

    first = next((rank for rank, ids in enumerate(ranked[:10], start=1) if ids & gold_set), None)
    dcg, seen = 0.0, set[str]()
    for rank, ids in enumerate(ranked[:10], start=1):
        new = (ids & gold_set) - seen
        if new:  # binary relevance: a position is relevant or not
            dcg += 1.0 / math.log2(rank + 1)
            seen |= new
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold_set), 10) + 1))
    # session level, as published figures on LoCoMo count (MemPalace's session recall): sessions ranked by
    # their best turn among the top 10 results, recall over the gold turns' sessions
    gold_sessions = {session_of(d) for d in gold_set}
    sessions = list(dict.fromkeys(session_of(d) for ids in ranked[:10] for d in sorted(ids)))
    return {
        "recall@5": recall(5),
        "recall@10": recall(10),
        "mrr": 1.0 / first if first else 0.0,
        "ndcg@10": dcg / ideal,
        "session_recall@5": len(set(sessions[:5]) & gold_sessions) / len(gold_sessions),
        "session_recall@10": len(set(sessions[:10]) & gold_sessions) / len(gold_sessions),
    }


def aggregate(rows: Sequence[tuple[int, dict[str, float]]]) -> dict[str, Any]:
    """Means overall and per category: ``{"overall": {n, metrics…}, "by_category": {name: …}}``."""

    def mean(group: Sequence[dict[str, float]]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(group)}
        for name in METRICS:
            out[name] = round(sum(m[name] for m in group) / len(group), 4) if group else float("nan")
        return out

    return {
        "overall": mean([m for _, m in rows]),
        "by_category": {
            f"{number} {name}": mean([m for c, m in rows if c == number]) for number, name in CATEGORIES.items()
        },
    }


# --- the BM25 baseline -----------------------------------------------------------------------------

# NLTK's English stopword list (nltk.corpus.stopwords.words("english"), the 179-word version),
# inlined: NLTK and its corpus download are not dependencies. Newer NLTK lists add contractions
# ("i'm", "we're"), which never match a ``[a-z0-9]+`` token anyway.
STOPWORDS = frozenset(
    """
    i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he
    him his himself she she's her hers herself it it's its itself they them their theirs themselves what
    which who whom this that that'll these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about against between
    into through during before after above below to from up down in out on off over under again further
    then once here there when where why how all any both each few more most other some such no nor not
    only own same so than too very s t can will just don don't should should've now d ll m o re ve y ain
    aren aren't couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't
    ma mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren weren't
    won won't wouldn wouldn't
    """.split()
)


TOKEN = re.compile(r"[a-z0-9]+")


def bm25_tokens(text: str) -> list[str]:
    return [t for t in TOKEN.findall(text.lower()) if t not in STOPWORDS]


@dataclass
class Bm25Run:
    """BM25 over one text per turn, one index per conversation: per query, every turn ranked (ties
    in turn order) with its score."""

    name: str
    rankings: dict[tuple[str, int], list[tuple[str, float]]] = field(default_factory=dict)


def bm25_run(conversations: Sequence[Conversation], text_of: Any, name: str) -> Bm25Run:
    try:
        import numpy as np
        from rank_bm25 import BM25Okapi
    except ImportError as exc:  # pragma: no cover - a dev extra
        raise SystemExit(f"{exc}: install the dev extras (.venv/bin/pip install -e '.[dev]')") from exc
    run = Bm25Run(name)
    for conv in conversations:
        ids = [t.dia_id for t in conv.turns]
        index = BM25Okapi([bm25_tokens(text_of(t)) for t in conv.turns], k1=1.5, b=0.75)
        for q in conv.queries:
            scores = index.get_scores(bm25_tokens(q.question))
            order = np.argsort(-scores, kind="stable")
            run.rankings[(q.sample_id, q.qa_index)] = [(ids[i], float(scores[i])) for i in order]
    return run


def bm25_metrics(conversations: Sequence[Conversation], run: Bm25Run) -> dict[str, Any]:
    rows, full_mrr = [], []
    for conv in conversations:
        for q in conv.queries:
            ranking = run.rankings[(q.sample_id, q.qa_index)]
            rows.append((q.category, query_metrics([frozenset([d]) for d, _ in ranking[:10]], q.gold)))
            first = next(r for r, (d, _) in enumerate(ranking, start=1) if d in q.gold)
            full_mrr.append(1.0 / first)
    out = aggregate(rows)
    # the reference MRR is over the whole ranking (BM25 ranks every turn); the table's is MRR@10,
    # all the product's 10 results can show
    out["overall"]["mrr_full_ranking"] = round(sum(full_mrr) / len(full_mrr), 4)
    return out
