"""The batched synthesis (docs/consolidation.md#batched-synthesis): ``CONSOLIDATION_SYNTHESIS_BATCH_CLUSTERS``
clusters a call, each answer carrying the cluster's synthesised memory and its summary — one call for
several clusters where the per-cluster path makes two per cluster. Clusters a reply leaves out (or
answers unattributably) are asked once more in new batches, then left for the next run."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings

from consolidation import clustering
from consolidation.prompts.reply import SourceMemory
from consolidation.prompts.summaries import ClusterSummary
from consolidation.prompts.synthesis_batch import (
    SYNTHESIS_BATCH_SYSTEM_PROMPT,
    BatchCluster,
    ClusterAnswer,
    build_synthesis_batch_prompt,
    parse_synthesis_batch,
    synthesis_batch_max_tokens,
)
from consolidation.run_state import RunState, budget_refused, llm_map, reply_parsed

# a batch's memory text is bounded too, so a few long clusters do not make one huge prompt (about 6,000
# tokens at 4 characters a token); a cluster longer than that alone is asked alone
BATCH_PROMPT_CHARS = 24_000


@dataclass(frozen=True)
class Unanswered:
    """A cluster the batched synthesis did not answer: ``error`` when its call failed (a run error, as a
    failed per-cluster call), empty when the reply left it out twice (a warning: the next run asks)."""

    error: str = ""


ClusterOutcome = ClusterAnswer | Unanswered | Exception


def synthesis_batches(
    sizes: Sequence[int], batch_clusters: int, max_chars: int = BATCH_PROMPT_CHARS
) -> list[list[int]]:
    """Clusters (by index, with their memory text's length in characters) packed in order into batches
    of at most ``batch_clusters`` clusters and about ``max_chars`` characters."""
    batches: list[list[int]] = []
    current: list[int] = []
    chars = 0
    for i, size in enumerate(sizes):
        if current and (len(current) >= batch_clusters or chars + size > max_chars):
            batches.append(current)
            current, chars = [], 0
        current.append(i)
        chars += size
    if current:
        batches.append(current)
    return batches


def _batch_prompt(
    clusters: Sequence[clustering.Cluster[str]], sources: dict[str, SourceMemory], batch: list[int]
) -> tuple[str, list[BatchCluster]]:
    asked: list[BatchCluster] = []
    n = 0
    for c, i in enumerate(batch, start=1):
        members = []
        for mid in clusters[i].member_ids:
            n += 1
            members.append((f"M{n}", sources[mid]))
        asked.append(BatchCluster(f"C{c}", tuple(members)))
    return build_synthesis_batch_prompt(asked), asked


def clusters_synthesize_batched(
    state: RunState, llm: Any, clusters: Sequence[clustering.Cluster[str]], sources: dict[str, SourceMemory]
) -> list[ClusterOutcome]:
    """Each cluster's outcome, in order: its answer (summary source ids mapped back to memory ids), the
    budget's refusal or the provider's error for its call, or ``Unanswered``."""
    outcomes: list[ClusterOutcome] = [Unanswered()] * len(clusters)
    todo = list(range(len(clusters)))
    for attempt in range(2):
        if not todo:
            break
        subset = [clusters[i] for i in todo]
        sizes = [sum(len(sources[m].title) + len(sources[m].content) for m in c.member_ids) for c in subset]
        batches = synthesis_batches(sizes, settings.CONSOLIDATION_SYNTHESIS_BATCH_CLUSTERS)
        built = [_batch_prompt(subset, sources, batch) for batch in batches]
        replies = llm_map(
            state,
            llm,
            "synthesize",
            [prompt for prompt, _ in built],
            system=SYNTHESIS_BATCH_SYSTEM_PROMPT,
            max_tokens=synthesis_batch_max_tokens(max(len(batch) for batch in batches)),
        )
        unanswered: list[int] = []
        for batch, (_, asked), reply in zip(batches, built, replies, strict=True):
            if isinstance(reply, Exception):
                # refused by the budget (waits for the resumption) or failed after the provider's retries
                for j in batch:
                    outcomes[todo[j]] = reply if budget_refused(reply) else Unanswered(str(reply))
                continue
            parse = functools.partial(parse_synthesis_batch, clusters=asked)
            answered: dict[str, ClusterAnswer] = reply_parsed(state, reply, parse, "batched synthesis") or {}
            for j, cluster in zip(batch, asked, strict=True):
                answer = answered.get(cluster.label)
                if answer is None:
                    unanswered.append(todo[j])
                else:
                    outcomes[todo[j]] = _with_memory_ids(answer, cluster)
        if unanswered and attempt == 0:
            state.warnings.append(f"the batched synthesis left {len(unanswered)} clusters unanswered; asked again")
        todo = unanswered
    if todo:
        state.warnings.append(
            f"{len(todo)} clusters were left unanswered by the batched synthesis; the next run synthesises them"
        )
    return outcomes


def _with_memory_ids(answer: ClusterAnswer, cluster: BatchCluster) -> ClusterAnswer:
    """The summary's superseded facts name their source by the prompt's short id: name the memory."""
    if answer.summary is None:
        return answer
    ids = {label: str(source.id) for label, source in cluster.members}
    summary: ClusterSummary = replace(
        answer.summary,
        superseded_facts=tuple(
            replace(fact, source_memory_id=ids.get(fact.source_memory_id, ""))
            for fact in answer.summary.superseded_facts
        ),
    )
    return ClusterAnswer(answer.synthesis, summary)
