"""Answer accuracy on LoCoMo, judged by an LLM: the figure the field publishes (bench/README.md, "Answer
accuracy judged by an LLM").

For each question of the development half (categories 1–4): the product's top ``--limit`` memories through
``memories.search.contracts.memory_search_run`` (rolled back, as ``retrieval.py`` searches), an answer from
the endpoint given only those memories (each with its session's date and speaker), then a verdict from the
judge model: CORRECT or WRONG against the gold answer, graded generously as the published LoCoMo evaluations
grade (the same topic counts; a date counts if it names the same day or period). Accuracy overall and per
category; every answer and verdict in ``bench/results/answer-accuracy-<model>-<date>.json``.

    # a real endpoint: any OpenAI-compatible server, its key read from the variable --llm-key-env names
    .venv/bin/python bench/answer_accuracy.py --llm-base-url https://api.openai.com/v1 --llm-model gpt-4o-mini
    # a sample first (every Nth question), and a judge of its own
    .venv/bin/python bench/answer_accuracy.py --llm-base-url URL --sample 10 --judge-model gpt-4o
    # the bench's stub endpoint: the plumbing, not a model's quality
    .venv/bin/python bench/answer_accuracy.py --llm-stub
    # the published judge prompt verbatim, from a file with {question}, {gold_answer}, {generated_answer}
    .venv/bin/python bench/answer_accuracy.py --llm-base-url URL --judge-prompt judge.txt

The bank is ``retrieval.py``'s (``RB_DATA_DIR`` ``.data/bench-retrieval``), loaded first when missing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _deep_llm import stub_serve
from _locomo import CATEGORIES, Query, dataset_load
from _product import embedder_build, embedder_settings
from common import RESULTS_DIR, django_setup, log, machine_info, revision, write_json
from retrieval import DATA_DIR, DEFAULT_DATASET, SEARCH_LIMIT, Bank, bank_ensure

# Our wording of the published LoCoMo answer prompt's rules: brief, the memories' own words, dates resolved
# against each memory's date.
ANSWER_PROMPT = """You answer a question about two people's past conversations from memories of them.

Memories (each with the date of its conversation and who said it):
{memories}

Question: {question}

Answer in a few words, using the memories' own words where you can. When the question asks when, give the
date or period, worked out from the memory's date when it says "yesterday", "last week" and the like. If the
memories do not say, answer "unknown"."""

# Our wording of the criteria the published LoCoMo judge applies (generous: the same topic counts; a date
# counts when it names the same day or period, whatever its format). --judge-prompt takes the published text.
JUDGE_PROMPT = """Label an answer to a question as CORRECT or WRONG.

You get a question one person asked about what another said in earlier conversations, the gold answer (short,
naming what was referred to) and a generated answer. Be generous: a generated answer that is longer but is
about the same thing as the gold answer is CORRECT. For a question about time, a generated answer that names
the same date or period is CORRECT, whatever its format ("May 7th" or "7 May") or if it is relative but
resolves to it. An answer that says it does not know, or names something else, is WRONG.

Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

Give a one-sentence reason, then the label alone on the last line: CORRECT or WRONG."""

LABEL = re.compile(r"\b(CORRECT|WRONG)\b")


def answers_of(path: Path) -> dict[tuple[str, int], str]:
    """The gold answer of each question, by (conversation, position in its ``qa`` list)."""
    raw = json.loads(path.read_text())
    return {(s["sample_id"], i): str(qa.get("answer", "")) for s in raw for i, qa in enumerate(s["qa"])}


def memories_of(bank: Bank, query: Query, limit: int) -> list[str]:
    """The product's top memories for the question, as lines the answer prompt shows."""
    from django.db import transaction

    from memories.models import Memory
    from memories.search.contracts import SearchInput, memory_search_run

    args = SearchInput(query=query.question, limit=limit, min_confidence=0.0, project=query.sample_id)
    with transaction.atomic():
        hits = memory_search_run(bank.principals[query.sample_id], args).memories
        dates = dict(Memory.objects.filter(pk__in=[h.id for h in hits]).values_list("id", "created_at"))
        transaction.set_rollback(True)
    return [f"- [{dates[h.id]:%d %B %Y}] {h.title}: {h.content}" for h in hits]


def ask(client: Any, model: str, prompt: str) -> str:
    reply = client.chat.completions.create(model=model, temperature=0, messages=[{"role": "user", "content": prompt}])
    return (reply.choices[0].message.content or "").strip()


def verdict(text: str) -> str | None:
    """The judge's label: the last CORRECT or WRONG it wrote; None when it wrote neither."""
    labels = LABEL.findall(text.upper())
    return labels[-1] if labels else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET, help="the LoCoMo file (default: %(default)s)")
    parser.add_argument("--llm-base-url", metavar="URL", help="an OpenAI-compatible endpoint")
    parser.add_argument("--llm-model", default="gpt-4o-mini", help="the answering model (default %(default)s)")
    parser.add_argument("--judge-model", default=None, help="the judging model (default: the answering model)")
    parser.add_argument(
        "--llm-key-env", default="OPENAI_API_KEY", help="the variable holding the key (default %(default)s)"
    )
    parser.add_argument("--llm-stub", action="store_true", help="the bench's stub endpoint (plumbing only)")
    parser.add_argument("--llm-timeout", type=float, default=60.0, help="seconds per call (default %(default)s)")
    parser.add_argument("--judge-prompt", type=Path, help="a judge prompt file instead of ours (see the docstring)")
    parser.add_argument("--limit", type=int, default=SEARCH_LIMIT, help="memories per question (%(default)s)")
    parser.add_argument("--sample", type=int, default=1, metavar="N", help="every Nth question (default: all)")
    parser.add_argument("--embedder", default="minilm-onnx", help="EMBEDDER of the bank (default %(default)s)")
    args = parser.parse_args()
    if bool(args.llm_base_url) == args.llm_stub:
        parser.error("give --llm-base-url or --llm-stub (one of them)")
    judge_prompt = args.judge_prompt.read_text() if args.judge_prompt else JUDGE_PROMPT

    conversations = dataset_load(args.data)
    gold = answers_of(args.data)
    queries = [q for c in conversations for q in c.queries if q.category in CATEGORIES][:: max(1, args.sample)]
    os.environ.setdefault("RB_DATA_DIR", str(DATA_DIR))
    django_setup()
    from openai import OpenAI

    embedder, why = embedder_build(args.embedder)
    if embedder is None:
        raise SystemExit(f"embedder {args.embedder} unavailable: {why}")
    bank = bank_ensure(conversations, args.embedder, embedder, mapping="protocol", reset=False, prefetch=True)
    with stub_serve() if args.llm_stub else nullcontext(args.llm_base_url) as base_url, embedder_settings(bank.kind):
        model = "stub-model" if args.llm_stub else args.llm_model
        judge = args.judge_model or model
        key = None if args.llm_stub else os.environ.get(args.llm_key_env)
        client = OpenAI(base_url=base_url, api_key=key or "none", timeout=args.llm_timeout, max_retries=2)
        log(f"{len(queries)} questions; answers by {model}, verdicts by {judge} at {base_url}")
        rows: list[dict[str, Any]] = []
        started = time.perf_counter()
        for n, q in enumerate(queries, start=1):
            memories = memories_of(bank, q, args.limit)
            answer = ask(client, model, ANSWER_PROMPT.format(memories="\n".join(memories), question=q.question))
            expected = gold[(q.sample_id, q.qa_index)]
            judged = ask(
                client, judge, judge_prompt.format(question=q.question, gold_answer=expected, generated_answer=answer)
            )
            rows.append(
                {"sample_id": q.sample_id, "qa_index": q.qa_index, "category": q.category, "question": q.question,
                 "gold": expected, "answer": answer, "judge": judged, "label": verdict(judged)}
            )  # fmt: skip
            if n % 50 == 0:
                log(f"  {n} / {len(queries)} in {time.perf_counter() - started:.0f} s")
    figures = accuracy(rows)
    for name, figure in figures.items():
        counts = f"{figure['correct']} of {figure['n']}; unlabelled {figure['unlabelled']}"
        log(f"  {name:<16} {figure['accuracy']:.3f}  ({counts})")
    out = RESULTS_DIR / f"answer-accuracy-{model.replace('/', '_')}-{datetime.now(UTC):%Y-%m-%d}.json"
    write_json(
        out,
        {"dataset": str(args.data), "answer_model": model, "judge_model": judge, "base_url": base_url,
         "stub": args.llm_stub, "limit": args.limit, "sample": args.sample, "judge_prompt": judge_prompt,
         "accuracy": figures, "rows": rows, "commit": revision(), "machine": machine_info()},
    )  # fmt: skip
    log(f"  results: {out}")


def accuracy(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Share of CORRECT verdicts overall and per category (a reply with no label counts as WRONG)."""
    groups: dict[str, list[dict[str, Any]]] = {"overall": rows}
    for number, name in CATEGORIES.items():
        groups[f"{number} {name}"] = [r for r in rows if r["category"] == number]
    out = {}
    for name, group in groups.items():
        labels = Counter(r["label"] for r in group)
        out[name] = {
            "n": len(group),
            "correct": labels["CORRECT"],
            "unlabelled": labels[None],
            "accuracy": round(labels["CORRECT"] / len(group), 4) if group else float("nan"),
        }
    return out


if __name__ == "__main__":
    main()
