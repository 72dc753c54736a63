"""Phase 4: the LLM judge on new pairs in the contradiction band — contradictions are linked for a
moderator, clear supersessions archive the older memory (seed 002: "be conservative").
"""

from __future__ import annotations

import logging

from django.db import transaction

from consolidation import events
from consolidation import prompts as cprompts
from consolidation.context import (
    CONTRADICTION_BAND,
    MAX_JUDGED_PAIRS,
    RunContext,
    link_add,
    llm_map,
    reply_parsed,
    run_archive,
    run_llm,
)
from consolidation.models import ConsolidationRun
from consolidation.selectors import (
    Edge,
    ScannedMemory,
)
from memories.models import Memory, MemoryLink
from memories.moderation import memories_lock_active

logger = logging.getLogger("consolidation")


def pairs_judge(ctx: RunContext, edges: list[Edge], memories: dict[str, ScannedMemory]) -> None:
    """Pairs in the 0.7–0.95 band that involve a memory new since the last run: first the
    supersession check (002, conservative), otherwise the contradiction judge (004). Pairs are
    chosen from the scan; texts are only loaded for the (at most 50) pairs an LLM will read."""
    low, high = CONTRADICTION_BAND
    candidates = sorted(
        (e for e in edges if low <= e[2] < high and e[0] in memories and e[1] in memories), key=lambda e: -e[2]
    )
    if not candidates:
        return
    linked = set(
        MemoryLink.objects.filter(
            organization_id=ctx.run.organization_id,
            kind__in=[MemoryLink.KIND_CONTRADICTS, MemoryLink.KIND_SUPERSEDES],
            source__project=ctx.project,
        ).values_list("source_id", "target_id")
    )
    since = ctx.since.timestamp() if ctx.since is not None else None
    chosen: list[tuple[str, str, float]] = []
    for a, b, similarity in candidates:
        if (a, b) in linked or (b, a) in linked:
            continue
        first, second = sorted((memories[a], memories[b]), key=lambda m: (m.created, m.id))
        if since is not None and second.created < since:
            continue  # both were already judged by an earlier run
        chosen.append((first.id, second.id, similarity))
        if len(chosen) >= MAX_JUDGED_PAIRS:
            ctx.warnings.append(f"only the {MAX_JUDGED_PAIRS} most similar new pairs were judged this run")
            break
    if not chosen:
        return
    if ctx.dry:
        for older_id, newer_id, similarity in chosen:
            ctx.note("judge_pairs", {"older": older_id, "newer": newer_id, "similarity": round(similarity, 4)})
        return
    llm = run_llm(ctx)
    if llm.provider == "none":
        ctx.warnings.append(f"{len(chosen)} pairs wait for an LLM to check for contradictions")
        return
    rows = {
        m.id: m
        for m in Memory.objects.filter(
            pk__in={mid for pair in chosen for mid in pair[:2]}, state=Memory.STATE_ACTIVE
        ).only("id", "title", "content", "created_at")
    }
    pairs = [(rows[o], rows[n], s) for o, n, s in chosen if o in rows and n in rows]
    if not pairs:
        return
    verdicts = llm_map(
        ctx,
        llm,
        "supersede",
        [
            cprompts.build_supersession_prompt((o.title, o.content, o.created_at), (n.title, n.content, n.created_at))
            for o, n, _ in pairs
        ],
        system=cprompts.SUPERSESSION_SYSTEM_PROMPT,
    )
    undecided: list[tuple[Memory, Memory, float]] = []
    for (older, newer, similarity), reply in zip(pairs, verdicts, strict=True):
        verdict = reply_parsed(ctx, reply, cprompts.parse_supersession, f"supersession check {older.id}/{newer.id}")
        if verdict is None:
            continue
        if cprompts.is_confident_supersession(verdict):
            with transaction.atomic():
                if len(memories_lock_active([older.id, newer.id])) == 2:
                    run_archive(ctx, older.id, Memory.ARCHIVED_SUPERSEDED)
                    link_add(ctx, newer.id, older.id, MemoryLink.KIND_SUPERSEDES, similarity, verdict.reason or "")
                    memories.pop(older.id, None)
                    ctx.archived.append(older.id)
                    ctx.counters["supersessions"] += 1
                    ctx.counters["archived"] += 1
        else:
            undecided.append((older, newer, similarity))
    if not undecided:
        return
    replies = llm_map(
        ctx,
        llm,
        "judge",
        [cprompts.build_contradiction_prompt(o.content, n.content) for o, n, _ in undecided],
        system="You are a careful reviewer of an engineering team's knowledge base. Answer with JSON only.",
    )
    found = []
    for (older, newer, _similarity), reply in zip(undecided, replies, strict=True):
        verdict = reply_parsed(ctx, reply, cprompts.parse_contradiction, f"contradiction check {older.id}/{newer.id}")
        if verdict is None:
            continue
        if cprompts.is_confident_contradiction(verdict):
            # both stay active: a moderator decides (DESIGN: no silent invalidation)
            link_add(
                ctx,
                newer.id,
                older.id,
                MemoryLink.KIND_CONTRADICTS,
                verdict.confidence,
                verdict.explanation or verdict.reasoning,
            )
            ctx.counters["contradictions"] += 1
            found.append(
                {
                    "first": newer.id,
                    "second": older.id,
                    "confidence": verdict.confidence,
                    "explanation": verdict.explanation,
                }
            )
    if found:
        events.contradiction_detected.send(sender=ConsolidationRun, run=ctx.run, contradictions=found)
