"""Summaries (docs/consolidation.md#summaries): for every cluster this run synthesised, ask the LLM for
a summary (``SUMMARY_SYSTEM_PROMPT``; the batched synthesis gives it with the memory, so no call is
needed then) and keep it beside the consolidated memory — what sessions start
with (``memory_context``) and what search merges in (``include_summaries``). Consolidated memories that
have no summary yet (made before summaries existed, or whose summary call failed) are caught up, a few
per run, so an existing bank gains summaries without a flood of LLM calls."""

from __future__ import annotations

import dataclasses
import logging

from django.conf import settings

from consolidation.phases.registry import RunCounter, phase_register
from consolidation.prompts.reply import PromptParseError
from consolidation.prompts.summaries import (
    SUMMARY_SYSTEM_PROMPT,
    ClusterSummary,
    build_summary_prompt,
    parse_summary,
)
from consolidation.run_state import RunState, budget_refused, llm_map, prompt_source, run_llm
from memories.models import Memory, MemoryLink
from memories.writes import summary_store
from reasoningbank.ai.llm import LLMError

logger = logging.getLogger("consolidation")


@phase_register(
    name="summarize",
    order=70,
    description="write a summary beside each consolidated memory (and catch up a few missing ones)",
    counters=(RunCounter("summaries", "summaries_generated", "Summaries a run wrote for consolidated memories"),),
)
def summarize_step(state: RunState) -> None:
    summaries_write(state)


def summaries_write(state: RunState) -> None:
    if state.dry:
        for _, source_ids in state.merges:  # a dry run merged nothing: what would be summarised
            state.note("summaries", {"sources": source_ids})
        return
    targets = list(state.merges) + _summaries_missing(state, exclude={memory_id for memory_id, _ in state.merges})
    if not targets:
        return
    llm = run_llm(state)
    if llm.provider == "none":
        state.warnings.append(f"{len(targets)} summaries wait for an LLM (LLM_PROVIDER=none)")
        return
    ids = {mid for memory_id, sources in targets for mid in (memory_id, *sources)}
    loaded = {
        m.id: m for m in Memory.objects.filter(organization=state.run.organization, pk__in=ids).defer("embedding")
    }
    targets = [(mid, [s for s in sources if s in loaded]) for mid, sources in targets if mid in loaded]
    targets = [(mid, sources) for mid, sources in targets if sources]
    # the batched synthesis answered these with their memories: stored as they are, no call
    for memory_id, source_ids in [t for t in targets if t[0] in state.summaries_given]:
        _summary_keep(state, loaded[memory_id], [loaded[s] for s in source_ids], state.summaries_given[memory_id])
    targets = [t for t in targets if t[0] not in state.summaries_given]
    if not targets:
        return
    replies = llm_map(
        state,
        llm,
        "summarize",
        [build_summary_prompt([prompt_source(loaded[s]) for s in sources]) for _, sources in targets],
        system=SUMMARY_SYSTEM_PROMPT,
    )
    for (memory_id, source_ids), reply in zip(targets, replies, strict=True):
        state.check_time()
        memory, sources = loaded[memory_id], [loaded[s] for s in source_ids]
        if budget_refused(reply):
            continue  # a later run (this one, resumed) catches it up
        if isinstance(reply, LLMError):
            # no row: the memory stays without a summary and a later run catches it up
            state.warnings.append(f"summary of {memory_id} failed: {reply}")
            continue
        try:
            parsed = parse_summary(str(reply), source_ids)
        except PromptParseError as exc:
            summary_store(memory=memory, sources=sources, run_id=state.run.id, error=str(exc), raw_reply=exc.raw)
            state.warnings.append(f"summary of {memory_id} rejected: {exc}")
            continue
        _summary_keep(state, memory, sources, parsed)


def _summary_keep(state: RunState, memory: Memory, sources: list[Memory], parsed: ClusterSummary) -> None:
    summary_store(
        memory=memory,
        sources=sources,
        run_id=state.run.id,
        summary=parsed.summary,
        key_facts=parsed.key_facts,
        decisions=[dataclasses.asdict(d) for d in parsed.decisions],
        superseded_facts=[dataclasses.asdict(f) for f in parsed.superseded_facts],
    )
    state.counters["summaries"] = state.counters.get("summaries", 0) + 1


def _summaries_missing(state: RunState, *, exclude: set[str]) -> list[tuple[str, list[str]]]:
    """Up to CONSOLIDATION_SUMMARY_CATCH_UP active consolidated memories of the project without a
    summary, newest first, with their sources (from the lineage links)."""
    limit = settings.CONSOLIDATION_SUMMARY_CATCH_UP
    if limit <= 0:
        return []
    missing = list(
        Memory.objects.filter(
            organization=state.run.organization,
            project=state.project,
            state=Memory.STATE_ACTIVE,
            origin=Memory.ORIGIN_CONSOLIDATED,
            summary__isnull=True,
        )
        .exclude(pk__in=exclude)
        .order_by("-created_at")
        .values_list("id", flat=True)[:limit]
    )
    sources: dict[str, list[str]] = {mid: [] for mid in missing}
    for source, target in MemoryLink.objects.filter(
        organization=state.run.organization, source_id__in=missing, kind=MemoryLink.KIND_CONSOLIDATES
    ).values_list("source_id", "target_id"):
        sources[source].append(target)
    return [(mid, sorted(targets)) for mid, targets in sources.items() if targets]
