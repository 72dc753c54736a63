"""The batched synthesis (docs/consolidation.md#batched-synthesis): several clusters in one prompt, and for
each cluster both its synthesised memory and its summary in one answer — instead of a synthesis call and
a summary call per cluster. Memories are listed with short ids (``M1``…) unique across the prompt, and
clusters name them (``Cluster C1 — members M1, M2``), so every answer is tied to its cluster twice: by
the cluster's id and by the exact set of its members.

An answer is dropped when its cluster is unknown, when its members are not exactly that cluster's (a
swapped or mixed-up answer), when its memory fields are unreadable, or when another answer gives the same
cluster a different synthesis. A cluster without a kept answer is simply not synthesised: the caller asks
once more, then leaves it for the next run — never guesses. A cluster's summary is optional in the answer:
without a readable one the memory is still written and its summary is asked for on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from consolidation.prompts.fence import DATA_NOTE, SOURCES_CLOSE, SOURCES_OPEN, SYSTEM_NOTE, fence_neutralise
from consolidation.prompts.reply import (
    PromptParseError,
    SourceMemory,
    as_list,
    as_text,
    json_candidates,
    timestamp_text,
)
from consolidation.prompts.summaries import ClusterSummary, summary_from_object
from consolidation.prompts.synthesis import TITLE_MAX_LENGTH, Synthesis

# the reply's length per cluster: a synthesised memory runs to 200–400 tokens and its summary to about
# 200; room for about 1.5 times that, so a wordy model is not cut off before the last cluster
REPLY_TOKENS_PER_CLUSTER: Final = 900
REPLY_TOKENS_BASE: Final = 256


def synthesis_batch_max_tokens(clusters: int) -> int:
    """The reply tokens a batch of ``clusters`` is allowed (a cut-off reply loses its last answers)."""
    return REPLY_TOKENS_BASE + REPLY_TOKENS_PER_CLUSTER * clusters


SYNTHESIS_BATCH_SYSTEM_PROMPT: Final = (
    "You consolidate an engineering team's memory bank: each cluster of similar memories becomes one "
    f"synthesized memory with a short summary. {SYSTEM_NOTE} You answer with JSON only."
)

SYNTHESIS_BATCH_INSTRUCTIONS: Final = (
    "For each cluster, using only that cluster's memories (never mix clusters):\n"
    "1. Identify the common theme across its memories\n"
    "2. Synthesize the key insights into a coherent, comprehensive strategy\n"
    "3. Preserve important details that shouldn't be lost\n"
    "4. Note when and how to apply this consolidated knowledge\n"
    "5. Summarize it: key decisions and their rationale, outcomes and lessons learned, and which facts "
    "newer memories superseded\n"
    "\n"
    "Respond with a JSON array only, one object per cluster, every cluster answered once, naming the "
    "cluster and exactly its members:\n"
    '[{"cluster": "C1", "members": ["M1", "M2"], "title": "concise title", '
    '"content": "synthesized strategy with specific steps", "tags": ["tag"], "outcome": "success|failure", '
    '"source_attribution": "brief description of sources", "summary": "2-3 sentence summary", '
    '"key_facts": ["fact"], "decisions": [{"decision": "...", "rationale": "...", "outcome": "...", '
    '"confidence": "high|medium|low"}], "superseded_facts": [{"original_fact": "...", "superseded_by": "...", '
    '"source_memory_id": "M1"}]}]'
)


@dataclass(frozen=True)
class BatchCluster:
    """One cluster of the prompt: ``label`` (``C1``) and its members, each with its short id (``M1``)."""

    label: str
    members: tuple[tuple[str, SourceMemory], ...]

    @property
    def member_labels(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.members)


@dataclass(frozen=True)
class ClusterAnswer:
    """One cluster's answer: its synthesised memory and, when the answer held a readable one, its summary
    (superseded facts name their source by the member's short id: the caller maps it back)."""

    synthesis: Synthesis
    summary: ClusterSummary | None


def build_synthesis_batch_prompt(clusters: Sequence[BatchCluster]) -> str:
    """The clusters, each with its members oldest first, then the instructions.

    Raises ``ValueError`` for no cluster, a cluster without members, or a cluster or memory label used
    twice (an answer could then not be told apart)."""
    if not clusters:
        raise ValueError("a batched synthesis prompt needs at least one cluster")
    cluster_labels = [c.label for c in clusters]
    member_labels = [label for c in clusters for label in c.member_labels]
    if len(set(cluster_labels)) != len(cluster_labels):
        raise ValueError("two clusters share a label")
    if len(set(member_labels)) != len(member_labels):
        raise ValueError("two memories share a label")
    lines = [f"Consolidate each of these {len(clusters)} clusters of similar memories.", ""]
    lines += [DATA_NOTE, "", SOURCES_OPEN]
    for cluster in clusters:
        if not cluster.members:
            raise ValueError(f"cluster {cluster.label} has no members")
        lines += [f"Cluster {cluster.label} — members {', '.join(cluster.member_labels)}:", ""]
        # oldest first, as the summary prompt: what superseded what reads in order
        ordered = sorted(
            cluster.members,
            key=lambda m: (m[1].created_at is None, m[1].created_at.timestamp() if m[1].created_at else 0.0, m[0]),
        )
        for label, source in ordered:
            lines += [
                f"[{label}]" + (f" recorded {timestamp_text(source.created_at)}" if source.created_at else ""),
                f"Title: {fence_neutralise(source.title)}",
                f"Content: {fence_neutralise(source.content)}",
                f"Tags: {fence_neutralise(', '.join(source.tags))}",
                f"Outcome: {source.outcome}",
                f"Confidence: {source.confidence:.2f}, Usage: {source.usage_count}",
                "",
            ]
    return "\n".join([*lines, SOURCES_CLOSE, "", SYNTHESIS_BATCH_INSTRUCTIONS])


def parse_synthesis_batch(text: str, clusters: Sequence[BatchCluster]) -> dict[str, ClusterAnswer]:
    """The answers the reply gives, by cluster label — only those attributable beyond doubt.

    Raises :class:`PromptParseError` when the reply holds no JSON object naming a cluster. Otherwise an
    answer is dropped when its ``cluster`` is not one asked, its ``members`` are not exactly that
    cluster's, its title, content or outcome is unreadable, or another answer gives the same cluster a
    different synthesis; clusters without a kept answer are absent from the result."""
    expected = {c.label: c for c in clusters}
    # every object naming a cluster, read one by one rather than as one array: a reply cut short by the
    # token limit still gives the answers it completed (the rest are asked again)
    items = [v for v in json_candidates(text, "{") if isinstance(v, dict) and "cluster" in v]
    if not items:
        raise PromptParseError("batched synthesis reply contains no answer naming a cluster", text)
    found: dict[str, ClusterAnswer] = {}
    conflicting: set[str] = set()
    for item in items:
        label = as_text(item.get("cluster"))
        cluster = expected.get(label)
        if cluster is None or not _members_match(item.get("members"), cluster.member_labels):
            continue  # not a cluster we asked about, or not the memories it is about: never guessed
        synthesis = _synthesis(item)
        if synthesis is None:
            continue
        if label in found and found[label].synthesis != synthesis:
            conflicting.add(label)
        found.setdefault(label, ClusterAnswer(synthesis, _summary(item, cluster.member_labels, text)))
    return {label: answer for label, answer in found.items() if label not in conflicting}


def _members_match(value: Any, labels: tuple[str, ...]) -> bool:
    named = [as_text(v) for v in as_list(value)]
    return len(named) == len(labels) and set(named) == set(labels)


def _synthesis(item: dict[str, Any]) -> Synthesis | None:
    title = " ".join(as_text(item.get("title")).split())
    content = as_text(item.get("content"))
    outcome = as_text(item.get("outcome")).strip("*_`'\". ").lower()
    if not title or not content or outcome not in ("success", "failure"):
        return None
    tags: list[str] = []
    seen: set[str] = set()
    raw_tags = item.get("tags")
    # a list as asked, or the single-prompt habit of one comma-separated string
    for raw in as_text(raw_tags).split(",") if isinstance(raw_tags, str) else as_list(raw_tags):
        tag = as_text(raw).strip("`'\"")
        if tag and tag.casefold() not in seen:
            seen.add(tag.casefold())
            tags.append(tag)
    return Synthesis(
        title=title[:TITLE_MAX_LENGTH].rstrip(),
        content=content,
        tags=tuple(tags),
        outcome="success" if outcome == "success" else "failure",
        source_attribution=as_text(item.get("source_attribution")),
    )


def _summary(item: dict[str, Any], member_labels: tuple[str, ...], raw: str) -> ClusterSummary | None:
    try:
        return summary_from_object(item, member_labels, raw)
    except PromptParseError:
        return None  # the memory stands; its summary is asked for on its own
