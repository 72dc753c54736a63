"""Patterns from recent episodic memories, and the promotion of working memories to semantic."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction

from consolidation import events, ladder
from consolidation.models import ConsolidationRun
from consolidation.phases.ladder import memories_promote_in_place
from consolidation.phases.registry import RunCounter, phase_register
from consolidation.prompts.patterns import (
    MIN_EPISODES_FOR_PATTERNS,
    PATTERN_EPISODE_LIMIT,
    PATTERN_INSTRUCTIONS,
    PATTERN_SYSTEM_PROMPT,
    build_pattern_prompt,
    parse_patterns,
)
from consolidation.run_state import (
    PATTERN_WINDOW_DAYS,
    RunState,
    draft_refused,
    duplicate_threshold,
    link_add,
    llm_map,
    reply_parsed,
    run_llm,
)
from memories.models import Memory, MemoryLink
from memories.rules import INITIAL_CONFIDENCE
from memories.writes import HOW_PATTERN, MemoryDraft, ProvenanceInput, embed_texts, memories_create

logger = logging.getLogger("consolidation")


@phase_register(
    name="patterns",
    order=80,
    description="extract patterns from recent episodic memories; promote working memories to semantic",
    counters=(
        RunCounter("patterns", "patterns_extracted", "Semantic patterns extracted from episodic memories"),
        RunCounter(
            "promoted", "promoted_semantic", "Working memories promoted to semantic", dry_run_label="Would promote"
        ),
    ),
)
def patterns_step(state: RunState) -> None:
    patterns_extract(state)


def patterns_extract(state: RunState) -> None:
    """Pattern extraction from recent episodic memories → semantic memories, and the
    promotion of working memories (important, used 3+ times or older than 15 min → semantic)."""
    base = Memory.objects.filter(organization=state.run.organization, project=state.project, state=Memory.STATE_ACTIVE)
    working = list(
        base.filter(kind=Memory.KIND_WORKING).only("id", "importance", "usage_count", "created_at", "expires_at")
    )
    promote = [
        m
        for m in working
        if m.importance > 0.7 or m.usage_count >= 3 or state.now - m.created_at > timedelta(minutes=15)
    ]
    if promote and not state.dry:
        # the same provenance and memory.promote audit rows as the rest of the promotion ladder
        with transaction.atomic():
            memories_promote_in_place(
                state,
                [ladder.InPlace(m.id, _working_reason(state, m)) for m in promote],
                from_kind=Memory.KIND_WORKING,
                to_kind=Memory.KIND_SEMANTIC,
                criterion="working_to_semantic",
            )
    # later phases read kinds from the scan: a promoted memory is semantic from here on (or the
    # archival phase would take an expired working memory the run has just turned into a fact)
    for m in promote:
        if (scanned := state.memories.get(m.id)) is not None:
            scanned.kind = Memory.KIND_SEMANTIC
            scanned.expires = None
    state.counters["promoted"] = len(promote)
    if promote:
        logger.info(
            "%s %d working memories to semantic", "Would promote" if state.dry else "Promoted", len(promote),
            extra={"run": state.run.id, "dry_run": state.dry, "memory_ids": [m.id for m in promote][:1000]},
        )
    since = state.now - timedelta(days=PATTERN_WINDOW_DAYS)
    episodes_qs = base.filter(kind=Memory.KIND_EPISODIC, created_at__gte=max(since, state.since or since))
    episodes = list(
        episodes_qs.order_by("created_at").only("id", "organization_id", "content", "trust", "created_at")[
            :PATTERN_EPISODE_LIMIT
        ]
    )
    if len(episodes) < MIN_EPISODES_FOR_PATTERNS:
        return
    if state.dry:
        state.note("pattern_sources", [m.id for m in episodes])
        return
    llm = run_llm(state)
    if llm.provider == "none":
        state.warnings.append(f"pattern extraction from {len(episodes)} episodes waits for an LLM")
        return
    (reply,) = llm_map(
        state,
        llm,
        "patterns",
        [build_pattern_prompt([(m.created_at, m.content) for m in episodes])],
        system=PATTERN_SYSTEM_PROMPT,
    )
    patterns = reply_parsed(state, reply, parse_patterns, "pattern extraction")
    if not patterns:
        return
    vectors, _ = embed_texts(patterns)
    for pattern, vector in zip(patterns, vectors, strict=True):
        if _has_twin(state, vector):
            continue
        draft = MemoryDraft(
            title=pattern[:200],
            description=f"Pattern extracted from {len(episodes)} episodic memories",
            content=pattern,
            outcome=Memory.OUTCOME_SUCCESS,
            tags=["pattern"],
            kind=Memory.KIND_SEMANTIC,
        )
        # a one-sentence pattern is its own title; one that echoes the prompt (its example) is kept out
        if draft_refused(
            state, draft, source="patterns", prompts=PATTERN_INSTRUCTIONS, title_is_content=True
        ):
            continue
        with transaction.atomic():
            (memory,) = memories_create(
                principal=state.principal,
                drafts=[draft],
                project=state.project,
                origin=Memory.ORIGIN_EXTRACTED,
                initial_confidence=INITIAL_CONFIDENCE + 0.1,
                vectors=[vector],
                provenance=ProvenanceInput(how=HOW_PATTERN, run_id=state.run.id, sources=episodes),
            )
            for episode in episodes:
                link_add(state, memory.id, episode.id, MemoryLink.KIND_REFERENCES, 1.0, "pattern source")
        if memory.state == Memory.STATE_QUARANTINED:
            state.warnings.append(
                f"patterns: the instruction-smell detector held “{memory.title[:80]}” ({memory.id}) for review"
            )
            continue
        state.created.append(memory.id)
        state.counters["patterns"] += 1
        events.pattern_extracted.send(sender=ConsolidationRun, run=state.run, memory=memory, source_count=len(episodes))


def _working_reason(state: RunState, memory: Memory) -> str:
    """Which of the working → semantic criteria held, with its figures."""
    if memory.importance > 0.7:
        return f"importance {memory.importance:g} > 0.7"
    if memory.usage_count >= 3:
        return f"used {memory.usage_count} times (3 or more)"
    return f"working memory older than 15 min ({int((state.now - memory.created_at).total_seconds() // 60)} min)"


def _has_twin(state: RunState, vector: list[float]) -> bool:
    from pgvector.django import CosineDistance

    nearest = (
        Memory.objects.filter(organization=state.run.organization, project=state.project, state=Memory.STATE_ACTIVE)
        .annotate(d=CosineDistance("embedding", vector))
        .order_by("d")
        .values_list("d", flat=True)
        .first()
    )
    return nearest is not None and 1 - nearest >= duplicate_threshold()
