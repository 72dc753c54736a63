"""Clustering, then synthesis: cluster the neighbour graph, then merge each cluster into one
consolidated memory with the LLM (each merge its own transaction)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import transaction

from accounts.services import audit_record
from consolidation import clustering
from consolidation.phases.conflicts import clusters_without_conflicts, edges_without_conflicts
from consolidation.phases.registry import RunCounter, phase_register
from consolidation.phases.synthesis_batch import Unanswered, clusters_synthesize_batched
from consolidation.prompts.synthesis import (
    SYNTHESIS_INSTRUCTIONS,
    SYNTHESIS_SYSTEM_PROMPT,
    Synthesis,
    build_synthesis_prompt,
    consolidated_confidence,
    parse_synthesis,
)
from consolidation.prompts.synthesis_batch import SYNTHESIS_BATCH_INSTRUCTIONS, ClusterAnswer
from consolidation.run_state import (
    RunState,
    budget_refused,
    draft_refused,
    link_add,
    llm_map,
    pair_key,
    prompt_source,
    run_archive,
    run_llm,
)
from consolidation.selectors import (
    Edge,
    ScannedMemory,
)
from consolidation.validation import tags_lenient
from memories.models import Memory, MemoryLink
from memories.writes import (
    HOW_SYNTHESISED,
    MemoryDraft,
    ProvenanceInput,
    embed_texts,
    memories_create,
    memories_lock_active,
    memory_embedding_text,
)

logger = logging.getLogger("consolidation")


@phase_register(
    name="cluster",
    order=50,
    description="group similar memories over the neighbour graph, keeping disputed and conflicting pairs apart",
    counters=(
        RunCounter("clusters", "clusters_created", "Clusters of similar memories a run formed"),
        RunCounter("skipped"),  # memories in no cluster, or in one that was not merged
    ),
)
def cluster_step(state: RunState) -> None:
    state.clusters = clusters_build(state, state.memories, state.edges)


@phase_register(
    name="synthesize",
    order=60,
    description="merge each cluster into one consolidated memory with the LLM",
    counters=(
        RunCounter("created", "memories_created", "Memories synthesised from clusters", dry_run_label="Would create"),
    ),
)
def synthesize_step(state: RunState) -> None:
    clusters_synthesize(state, state.clusters)


def clusters_build(
    state: RunState, memories: dict[str, ScannedMemory], edges: list[Edge]
) -> list[clustering.Cluster[str]]:
    # disputed memories wait for a moderator instead of being merged away
    disputed: set[str] = set()
    for source, target in MemoryLink.objects.filter(
        organization_id=state.run.organization_id,
        kind=MemoryLink.KIND_CONTRADICTS,
        resolved_at__isnull=True,
        source__project=state.project,
    ).values_list("source_id", "target_id"):
        if source in memories:
            disputed.update((source, target))
    candidates = {mid: m for mid, m in memories.items() if mid not in disputed}
    # and memories with conflict cues are never synthesised into one (phases.conflicts,
    # docs/decisions.md#never-merge-what-may-disagree);
    # with an LLM to synthesise, only pairs the judge (or a moderator) found compatible are joined
    live = [e for e in edges_without_conflicts(state, edges) if e[0] in candidates and e[1] in candidates]
    if run_llm(state).provider != "none":
        live = [e for e in live if pair_key(e[0], e[1]) in state.cleared]
    clusters = clustering.average_linkage_clusters(
        list(candidates),
        live,
        state.options.similarity_threshold,
        min_size=state.options.min_cluster_size,
        max_size=state.options.max_cluster_size,
    )
    clusters = clusters_without_conflicts(state, clusters, edges, min_size=state.options.min_cluster_size)
    # biggest, tightest clusters first so max_clusters keeps the most valuable merges
    clusters.sort(key=lambda c: (-len(c.member_ids), -c.average_similarity, c.member_ids[0]))
    state.counters["clusters"] = len(clusters)
    if state.options.max_clusters:
        clusters = clusters[: state.options.max_clusters]
    # ``skipped``: memories evaluated but not consolidated (failed clusters add theirs later)
    state.counters["skipped"] = len(memories) - len({mid for c in clusters for mid in c.member_ids})
    return clusters


def clusters_synthesize(state: RunState, clusters: list[clustering.Cluster[str]]) -> None:
    """The LLM's synthesis of the clusters — several a call with their summaries (``CONSOLIDATION_SYNTHESIS_
    BATCH_CLUSTERS``), or one call per cluster when that is 1 — then one transaction per merge."""
    if not clusters:
        return
    llm = run_llm(state)
    if state.dry:
        # the run's own decision: without an LLM the clusters wait, so nothing would be archived
        ready = llm.provider != "none"
        described = preview_sources(state, [m for c in clusters for m in c.member_ids])
        for c in clusters:
            state.note(
                "clusters",
                {
                    "members": list(c.member_ids),
                    "titles": [described[m]["title"] for m in c.member_ids],
                    "average_similarity": round(c.average_similarity, 4),
                    "sources": [described[m] for m in c.member_ids],
                    "then": "synthesised into one memory" if ready else "waits for an LLM (LLM_PROVIDER=none)",
                },
            )
            if ready:  # a dry run reports what *would* be archived (docs/consolidation.md#dry-runs)
                state.archived.extend(c.member_ids)
                state.merges.append(("", list(c.member_ids)))
                state.counters["archived"] += len(c.member_ids)
        if not ready:
            state.warnings.append(f"{len(clusters)} clusters would wait for an LLM (LLM_PROVIDER=none)")
        return
    if llm.provider == "none":
        state.warnings.append(
            f"{len(clusters)} clusters wait for an LLM (LLM_PROVIDER=none); duplicates, tiers and archival were applied"
        )
        state.counters["skipped"] += sum(len(c.member_ids) for c in clusters)
        return
    sources = {
        m.id: m
        for m in Memory.objects.filter(pk__in=[mid for c in clusters for mid in c.member_ids]).defer("embedding")
    }
    if settings.CONSOLIDATION_SYNTHESIS_BATCH_CLUSTERS > 1:
        prompted = {mid: prompt_source(m) for mid, m in sources.items()}
        outcomes: list[Any] = clusters_synthesize_batched(state, llm, clusters, prompted)
        instructions: Sequence[str] = (SYNTHESIS_BATCH_INSTRUCTIONS,)
    else:
        outcomes = llm_map(
            state,
            llm,
            "synthesize",
            [build_synthesis_prompt([prompt_source(sources[mid]) for mid in c.member_ids]) for c in clusters],
            system=SYNTHESIS_SYSTEM_PROMPT,
        )
        instructions = SYNTHESIS_INSTRUCTIONS
    for cluster, outcome in zip(clusters, outcomes, strict=True):
        state.check_time()
        if budget_refused(outcome):  # the cluster waits for the run's resumption
            state.counters["skipped"] += len(cluster.member_ids)
            continue
        if isinstance(outcome, Exception) or (isinstance(outcome, Unanswered) and outcome.error):
            state.errors.append(f"cluster {cluster.member_ids[0]}…: {getattr(outcome, 'error', '') or outcome}")
            state.counters["skipped"] += len(cluster.member_ids)
            continue
        if isinstance(outcome, Unanswered):  # left out twice by the batched reply: the next run asks
            state.counters["skipped"] += len(cluster.member_ids)
            continue
        try:
            answer = outcome if isinstance(outcome, ClusterAnswer) else ClusterAnswer(parse_synthesis(outcome), None)
            merged = _merge_cluster(
                state, cluster, [sources[mid] for mid in cluster.member_ids], answer.synthesis, instructions
            )
        except Exception as exc:  # one cluster failing must not stop the others; its transaction rolled back
            logger.warning("cluster merge failed in run %s: %s", state.run.id, exc)
            state.errors.append(f"cluster {cluster.member_ids[0]}…: {type(exc).__name__}: {exc}")
            state.counters["skipped"] += len(cluster.member_ids)
            continue
        if merged is None:
            state.counters["skipped"] += len(cluster.member_ids)
        elif answer.summary is not None:
            # the summary came with the synthesis: the summaries phase stores it without a call of its own
            state.summaries_given[merged.id] = answer.summary


def preview_sources(state: RunState, ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """How a dry run's preview names each proposed source: near-identical rows often share a title,
    so the id, creation time and project tell them apart (docs/consolidation.md#dry-runs)."""
    rows = Memory.objects.filter(organization_id=state.run.organization_id, pk__in=list(ids)).values_list(
        "id", "title", "created_at"
    )
    described = {
        mid: {"id": mid, "title": title, "created_at": created.isoformat(), "project": state.project.slug}
        for mid, title, created in rows
    }
    # a source gone since the scan (never deleted, but be safe) still gets an entry
    return {
        mid: described.get(mid) or {"id": mid, "title": "", "created_at": "", "project": state.project.slug}
        for mid in ids
    }


def _merge_cluster(
    state: RunState,
    cluster: clustering.Cluster[str],
    sources: list[Memory],
    synthesis: Synthesis,
    instructions: Sequence[str],
) -> Memory | None:
    """Create the consolidated memory, archive the sources into it, link both ways — atomically."""
    confidence = consolidated_confidence([(m.confidence, m.usage_count) for m in sources])
    draft = MemoryDraft(
        title=synthesis.title[:200],
        description=(synthesis.source_attribution or f"Synthesized from {len(sources)} source memories")[:2000],
        content=synthesis.content[:20000],
        outcome=synthesis.outcome,
        tags=tags_lenient(synthesis.tags),
        kind=Memory.KIND_PROCEDURAL,
    )
    if draft_refused(state, draft, source="synthesis", prompts=instructions):
        return None  # the sources stay as they are; a later run synthesises the cluster again
    (vector,), _ = embed_texts([memory_embedding_text(draft.title, draft.description, draft.content)])
    with transaction.atomic():
        live = memories_lock_active([m.id for m in sources])
        if len(live) != len(sources):
            return None  # a source changed since the scan (re-run, moderator): leave it for next time
        (merged,) = memories_create(
            principal=state.principal,
            drafts=[draft],
            project=state.project,
            origin=Memory.ORIGIN_CONSOLIDATED,
            initial_confidence=min(0.99, max(0.01, confidence.final)),
            vectors=[vector],
            provenance=ProvenanceInput(how=HOW_SYNTHESISED, run_id=state.run.id, sources=sources),
        )
        if merged.state == Memory.STATE_QUARANTINED:
            # the synthesis carries text the detector holds for review: it waits in quarantine and its
            # sources stay active, unmerged (docs/security/memory-poisoning.md#quarantine)
            state.warnings.append(
                f"synthesis: the instruction-smell detector held “{merged.title[:80]}” ({merged.id}) for review; "
                f"its {len(sources)} sources stay active"
            )
            return None
        merged.usage_count = sum(m.usage_count for m in sources)
        merged.save(update_fields=["usage_count"])
        run_archive(state, [source.id for source in sources], Memory.ARCHIVED_CONSOLIDATED, into=merged)
        for source in sources:
            link_add(
                state,
                merged.id,
                source.id,
                MemoryLink.KIND_CONSOLIDATES,
                cluster.average_similarity,
                "synthesized into a consolidated memory",
            )
        audit_record(
            organization=state.run.organization,
            actor=state.principal,
            verb="memory.consolidate",
            target=merged,
            data={
                "run": state.run.id,
                "sources": [m.id for m in sources],
                "confidence": {"weighted": confidence.weighted, "bonus": confidence.bonus},
            },
        )
    logger.info(
        "Synthesised %s from %d memories",
        merged.id,
        len(sources),
        extra={"run": state.run.id, "memory_id": merged.id, "source_ids": [m.id for m in sources]},
    )
    state.created.append(merged.id)
    state.merges.append((merged.id, [m.id for m in sources]))
    state.archived.extend(m.id for m in sources)
    state.counters["created"] += 1
    state.counters["archived"] += len(sources)
    return merged
