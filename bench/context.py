"""``memory_context`` latency at 100K memories: p50 / p90 / p99 (docs/session-context.md#memory_context).

Uses ``bench/search.py``'s dataset (org ``bench``, N memories, most of them procedural; load it
first with ``bench/search.py --sizes N --load-only``) and a token restricted to project ``web-app``,
and times ``memories.context.contracts.memory_context_run`` in-process — what the MCP tool, ``POST
/api/v1/memories/context`` and the Claude Code plugin's SessionStart hook call — for each ``prioritize``:
``relevance`` with a task (the hybrid search, so a query embedding), ``relevance`` without one,
``recency`` and ``activation``, 200 calls each (20 more first as a warm-up), with the default budget
(10 entries, 2,000 tokens) and an existing context holding an earlier block — once for each
``--summaries`` count: 0 (a project never consolidated: procedural memories only) and 1,000
consolidated summaries in the project (written straight into the table, each beside one of the
project's memories and sharing its vector, as the summarize phase would leave them).

With the product's default embedder (``--embedder`` or ``EMBEDDER`` for another; data another embedder
made is loaded again), and each task a text not embedded before in this process, so the query cache
never hides the embedding: its time per call is reported apart.

    .venv/bin/python bench/context.py --size 100000 --summaries 0,1000
    .venv/bin/python bench/context.py --size 100000 --embedder hashing
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._corpus import search_queries
from bench.common import Latency, django_setup, machine_info, write_json

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="the bench/search.py dataset size to use")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--summaries", default="0,1000", help="comma-separated summary counts to measure with")
    parser.add_argument("--embedder", help="EMBEDDER for this run (e.g. hashing); default: the product's default")
    args = parser.parse_args()
    if args.embedder:
        os.environ["EMBEDDER"] = args.embedder
    os.environ.setdefault("RB_DATA_DIR", str(Path(__file__).resolve().parent.parent / ".data" / "bench"))
    django_setup(migrate=True)

    from accounts.access import principal_for_token
    from bench._dataset import dataset_ensure
    from bench.search import bench_token
    from memories.context.contracts import ContextInput, memory_context_run
    from reasoningbank.ai.embedders import embedder_from_settings

    dataset = dataset_ensure(args.size, reset=False, log=print)
    token, _ = bench_token(dataset.pop("orgs"))
    principal = principal_for_token(token)
    counts = [int(n) for n in args.summaries.split(",")]
    # each summaries count its own tasks: a task embedded once would be served from the query cache
    all_tasks = search_queries((args.calls + 20) * len(counts), seed=7)
    earlier = memory_context_run(principal, ContextInput(project="web-app")).context
    embedder = embedder_from_settings()
    print(
        f"dataset: {dataset['table_rows']:,} rows embedded by {dataset['embedder']}; "
        f"an earlier block of {len(earlier):,} characters; load average {os.getloadavg()[0]:.1f}"
    )
    embedding_ms = _embedding_timer(embedder)

    results: dict[str, dict[str, Any]] = {}
    for k, count in enumerate(counts):
        summaries_ensure(principal, count)
        print(f"-- {count:,} summaries in the project")
        tasks = all_tasks[k * (args.calls + 20) : (k + 1) * (args.calls + 20)]
        for label, lat in _measure(principal, tasks, earlier, embedding_ms).items():
            results[f"{label}, {count} summaries"] = lat
    write_json(
        RESULTS / f"context-{args.size}.json",
        {
            "machine": machine_info(),
            "embedder": embedder.name,
            "uncached": True,
            "loadavg_end": list(os.getloadavg()),
            "dataset": dataset,
            "results": results,
        },
    )


def _embedding_timer(embedder: Any) -> list[float]:
    """Time every call of ``embedder.embed`` (the instance the product uses: the factory caches it);
    the returned list collects milliseconds per call."""
    calls: list[float] = []
    original = embedder.embed

    def timed(texts: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(texts)
        finally:
            calls.append((time.perf_counter() - t0) * 1000)

    embedder.embed = timed
    return calls


def summaries_ensure(principal: object, count: int) -> None:
    """Exactly ``count`` ready summaries in the bench project, beside its most confident memories."""
    from django.utils import timezone

    from accounts.models import Project
    from memories.models import Memory, MemorySummary

    project = Project.objects.get(organization=principal.organization, slug="web-app")  # type: ignore[attr-defined]
    existing = MemorySummary.objects.filter(project=project)
    if existing.count() == count:
        return
    existing.delete()
    now = timezone.now()
    memories = Memory.objects.filter(project=project, state="active").order_by("-confidence", "id")[:count]
    MemorySummary.objects.bulk_create(
        [
            MemorySummary(
                organization_id=m.organization_id,
                project=project,
                memory=m,
                source_memory_ids=[m.id],
                consolidation_run_id="run_bench",
                summary=f"{m.description} {m.content}"[:600],
                key_facts=[m.title],
                decisions=[
                    {"decision": m.title, "rationale": m.description[:200], "outcome": None, "confidence": "medium"}
                ],
                confidence=m.confidence,
                temporal_start=m.created_at,
                temporal_end=m.updated_at,
                embedding=m.embedding,
                embedding_model=m.embedding_model,
                created_at=now,
            )
            for m in memories.only(
                "id",
                "organization_id",
                "title",
                "description",
                "content",
                "confidence",
                "created_at",
                "updated_at",
                "embedding",
                "embedding_model",
            )
        ],
        batch_size=500,
    )


def _measure(principal: object, tasks: list[str], earlier: str, embedding_ms: list[float]) -> dict[str, dict[str, Any]]:
    from memories.context.contracts import ContextInput, memory_context_run

    results: dict[str, dict[str, Any]] = {}
    for label, extra in [
        ("relevance, with a task", {"prioritize": "relevance"}),
        ("relevance, no task", {"prioritize": "relevance"}),
        ("recency", {"prioritize": "recency"}),
        ("activation", {"prioritize": "activation"}),
    ]:
        samples: list[float] = []
        embedding: list[float] = []
        for i, task in enumerate(tasks):
            args_in = ContextInput(
                project="web-app",
                context=f"You are a coding agent.\n{earlier}",
                task=task if label == "relevance, with a task" else "",
                **extra,  # type: ignore[arg-type]
            )
            embedding_ms.clear()
            started = time.perf_counter()
            out = memory_context_run(principal, args_in)
            if i >= 20:
                samples.append((time.perf_counter() - started) * 1000)
                embedding.append(sum(embedding_ms))
        assert out.replaced_existing and out.summaries_injected > 0, out
        results[label] = Latency.of(samples).as_dict()
        lat = results[label]
        line = (
            f"{label:24s} p50 {lat['p50']:6.1f}  p90 {lat['p90']:6.1f}  p99 {lat['p99']:6.1f} ms "
            f"({out.summaries_injected} entries, {len(out.summary_ids)} summaries, {out.tokens_used} tokens)"
        )
        if any(embedding):
            emb = Latency.of(embedding).as_dict()
            rest = Latency.of([t - e for t, e in zip(samples, embedding, strict=True)]).as_dict()
            results[label]["query_embedding"] = emb
            results[label]["without_embedding"] = rest
            line += (
                f"\n{'':24s}   the task's embedding (uncached) p50 {emb['p50']:5.1f}  p99 {emb['p99']:5.1f} ms;"
                f" the rest p50 {rest['p50']:5.1f}  p99 {rest['p99']:5.1f} ms"
            )
        print(line)
    return results


if __name__ == "__main__":
    main()
