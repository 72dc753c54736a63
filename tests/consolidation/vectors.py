"""Embeddings with chosen cosine similarities, for driving the consolidation cycle in tests.

The cycle reads similarity from pgvector, so the tests set each memory's ``embedding`` directly
to a vector built here instead of relying on the embedder.

A *spoke* is the hub axis plus a tilt towards one more axis: ``spoke(hub, axis, c)`` is the unit
vector along ``e_hub + a * e_axis`` with ``a = sqrt(1/c - 1)``. Any two spokes of one hub on
different axes then have cosine ``1 / (1 + a²) = c`` exactly (in real arithmetic); spokes of
different hubs are orthogonal (cosine 0). Give every memory its own tilt axis.

The second half holds the drivers the cycle tests share: ``remember`` (record a memory through
the real service, then pin its embedding and any life fields), ``disputed_pair`` (two memories
linked as contradicting), ``cycle_llm`` (a ScriptedLLM that answers each of the cycle's prompt
types) and ``run_cycle`` (request + execute one run).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from django.conf import settings

from accounts.access import Principal
from accounts.models import Project
from consolidation.models import ConsolidationRun
from consolidation.prompts.judge import (
    SUPERSESSION_SYSTEM_PROMPT,
    build_contradiction_prompt,
    build_supersession_prompt,
    is_confident_contradiction,
    is_confident_supersession,
    parse_contradiction,
    parse_supersession,
)
from consolidation.prompts.judge_batch import JUDGE_BATCH_SYSTEM_PROMPT
from consolidation.prompts.reply import PromptParseError, SourceMemory
from consolidation.prompts.summaries import SUMMARY_SYSTEM_PROMPT, build_summary_prompt
from consolidation.prompts.synthesis import build_synthesis_prompt, parse_synthesis
from consolidation.prompts.synthesis_batch import SYNTHESIS_BATCH_SYSTEM_PROMPT
from consolidation.runs import consolidation_execute, consolidation_request, run_options_validate
from memories.models import Memory, MemoryLink
from tests.factories import MemoryFactory, MemoryLinkFactory
from tests.fakes import ScriptedLLM


def dimensions() -> int:
    return int(settings.EMBEDDING_DIMENSIONS)


def vec(components: Mapping[int, float], *, normalise: bool = True) -> list[float]:
    """A vector of the embedding size with the given (axis → value) components, unit length by default."""
    size = dimensions()
    values = [0.0] * size
    for axis, value in components.items():
        if not 0 <= axis < size:
            raise ValueError(f"axis {axis} is outside 0..{size - 1}")
        values[axis] = float(value)
    if normalise:
        norm = math.sqrt(sum(v * v for v in values))
        if norm == 0:
            raise ValueError("a zero vector has no direction")
        values = [v / norm for v in values]
    return values


def tilt_for(cosine: float) -> float:
    """The tilt ``a`` for which two spokes of one hub have cosine ``1 / (1 + a²) = cosine``."""
    if not 0 < cosine <= 1:
        raise ValueError("cosine must be in (0, 1]")
    return math.sqrt(1.0 / cosine - 1.0)


def spoke(hub: int, axis: int, cosine: float, *, normalise: bool = True) -> list[float]:
    """Unit vector on ``hub`` tilted towards ``axis``; any two spokes of ``hub`` (on different axes)
    built with the same ``cosine`` have exactly that cosine similarity."""
    if hub == axis:
        raise ValueError("the tilt axis must differ from the hub")
    return vec({hub: 1.0, axis: tilt_for(cosine)}, normalise=normalise)


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def set_embedding(memory: Memory | str, vector: list[float]) -> None:
    """Overwrite a memory's stored embedding (bypassing the embedder)."""
    memory_id = memory if isinstance(memory, str) else memory.pk
    updated = Memory.objects.filter(pk=memory_id).update(embedding=vector)
    assert updated == 1, f"no memory {memory_id!r}"


# --- memories with pinned embeddings ----------------------------------------------------------------


def remember(
    principal: Principal,
    title: str,
    vector: list[float] | None = None,
    *,
    content: str | None = None,
    kind: str | None = None,
    tags: list[str] | None = None,
    project: str = "web-app",
    **fields: Any,
) -> Memory:
    """Record a memory through ``memory_record`` (``MemoryFactory``), then set its embedding and any
    other columns (confidence, usage_count, importance, created_at, last_used_at, ...) directly."""
    if vector is not None:
        fields["embedding"] = vector
    memory = MemoryFactory(
        principal=principal,
        title=title,
        description=f"When dealing with {title.lower()}",
        content=content or f"{title}. Details that must survive consolidation.",
        tags=tags if tags is not None else ["testing"],
        kind=kind,
        project=project,
        **fields,
    )
    memory.refresh_from_db()
    return memory


def disputed_pair(principal: Principal, **link_fields: Any) -> tuple[Memory, Memory, MemoryLink]:
    """Two memories naming different databases (orthogonal embeddings), linked the way the
    consolidation judge links a contradiction (weight 0.9 unless given)."""
    first = remember(principal, "Project database", vec({1: 1.0}), content="The project's database is PostgreSQL")
    second = remember(principal, "Project database engine", vec({2: 1.0}), content="The project's database is MySQL")
    link = MemoryLinkFactory(
        source=first, target=second, kind=MemoryLink.KIND_CONTRADICTS, **{"weight": 0.9, **link_fields}
    )
    return first, second, link


# --- a fake LLM that answers the cycle's prompts ----------------------------------------------------

Reply = str | Callable[[str], str]

SYNTHESIS_PREFIX = "You are consolidating"
CONTRADICTION_PREFIX = "Do these two statements contradict"
PATTERN_PREFIX = "Analyze these episodic memories"


def synthesis_reply(
    title: str,
    content: str = "Step 1: do the thing. Step 2: check it worked.",
    *,
    tags: str = "consolidated, testing",
    outcome: str = "success",
    attribution: str = "Synthesized from similar source memories",
) -> str:
    return f"TITLE: {title}\nCONTENT: {content}\nTAGS: {tags}\nOUTCOME: {outcome}\nSOURCE_ATTRIBUTION: {attribution}"


def source_titles(prompt: str) -> list[str]:
    """The ``Title:`` lines of a synthesis prompt, in order."""
    return [line[len("Title: ") :] for line in prompt.splitlines() if line.startswith("Title: ")]


def default_synthesis(prompt: str) -> str:
    titles = source_titles(prompt)
    return synthesis_reply(
        f"Consolidated: {titles[0]}",
        f"Merged guidance from {len(titles)} memories: " + "; ".join(titles),
        attribution=f"Synthesized from {len(titles)} source memories",
    )


def supersession_reply(supersedes: bool = False, confidence: str = "high") -> str:
    return json.dumps({"supersedes": supersedes, "confidence": confidence, "reason": "newer" if supersedes else None})


def contradiction_reply(contradicts: bool, confidence: float = 0.9, explanation: str = "") -> str:
    return json.dumps(
        {
            "reasoning": "Compared both statements about the same subject.",
            "contradicts": contradicts,
            "confidence": confidence,
            "explanation": explanation or ("They name different databases" if contradicts else "compatible"),
        }
    )


def summary_source_ids(prompt: str) -> list[str]:
    """The ``Memory id:`` lines of a summary prompt, in order (oldest first)."""
    return [line[len("Memory id: ") :] for line in prompt.splitlines() if line.startswith("Memory id: ")]


def default_summary(prompt: str) -> str:
    """A well-formed summary reply naming the prompt's sources (the oldest superseded by the newest)."""
    ids = summary_source_ids(prompt)
    return json.dumps(
        {
            "summary": f"Summary of {len(ids)} memories.",
            "key_facts": [f"fact from {mid}" for mid in ids],
            "decisions": [
                {
                    "decision": "Keep the newest advice",
                    "rationale": "it was measured",
                    "outcome": "fewer incidents",
                    "confidence": "high",
                }
            ],
            "superseded_facts": [
                {"original_fact": "the oldest advice", "superseded_by": "the newest advice", "source_memory_id": ids[0]}
            ],
        }
    )


def _answer(reply: Reply, prompt: str) -> str:
    return reply(prompt) if callable(reply) else reply


_BATCH_MEMORY = re.compile(r"^\[(M\d+)\] recorded (.+)\nTitle: (.*)\nContent: (.*)$", re.MULTILINE)
_BATCH_PAIR = re.compile(r"^(P\d+): (M\d+) → (M\d+)$", re.MULTILINE)


def batch_pairs(prompt: str) -> list[tuple[str, tuple[str, str, datetime], tuple[str, str, datetime]]]:
    """The pairs of a batched judge prompt: (pair label, older, newer), each memory (title, content, recorded)."""
    memories = {
        label: (title, content, datetime.fromisoformat(at))
        for label, at, title, content in _BATCH_MEMORY.findall(prompt)
    }
    return [(pair, memories[older], memories[newer]) for pair, older, newer in _BATCH_PAIR.findall(prompt)]


def batch_from_single(supersession: Reply, contradiction: Reply) -> Callable[[str], str]:
    """A batched judge that answers each pair as the single-pair replies would: the supersession reply
    to that pair's supersession prompt, then (unless it supersedes confidently) the contradiction reply to
    its contradiction prompt — so the tests written for the per-pair judge keep their meaning."""

    def answer(prompt: str) -> str:
        items = []
        labels = dict((p, (o, n)) for p, o, n in _BATCH_PAIR.findall(prompt))
        for pair, older, newer in batch_pairs(prompt):
            item = {"pair": pair, "older": labels[pair][0], "newer": labels[pair][1], "reasoning": "as asked singly"}
            sup = parse_supersession(_answer(supersession, build_supersession_prompt(older, newer)))
            if is_confident_supersession(sup):
                items.append({**item, "verdict": "supersedes", "confidence": 0.9, "explanation": sup.reason or ""})
                continue
            con = parse_contradiction(_answer(contradiction, build_contradiction_prompt(older[1], newer[1])))
            verdict = "contradicts" if con.contradicts else "compatible"
            confidence = con.confidence if con.contradicts else 0.9
            if con.contradicts and not is_confident_contradiction(con):
                confidence = min(confidence, 0.5)
            items.append({**item, "verdict": verdict, "confidence": confidence, "explanation": con.explanation})
        return json.dumps(items)

    return answer


_BATCH_CLUSTER = re.compile(r"^Cluster (C\d+) — members (.+):$", re.MULTILINE)
_CLUSTER_SOURCE = re.compile(
    r"^\[(M\d+)\](?: recorded (.+))?\nTitle: (.*)\nContent: (.*)\nTags: (.*)\nOutcome: (.*)\n"
    r"Confidence: ([\d.]+), Usage: (\d+)$",
    re.MULTILINE,
)


def batch_clusters(prompt: str) -> list[tuple[str, list[SourceMemory]]]:
    """The clusters of a batched synthesis prompt: (cluster label, its sources as listed, each with its
    short id ``M1`` as its id)."""
    blocks = _BATCH_CLUSTER.split(prompt)[1:]
    return [
        (
            label,
            [
                SourceMemory(
                    id=mid, title=title, content=content, tags=tuple(t for t in tags.split(", ") if t),
                    confidence=float(conf), usage_count=int(usage), outcome=outcome,
                    created_at=datetime.fromisoformat(at) if at else None,
                )
                for mid, at, title, content, tags, outcome, conf, usage in _CLUSTER_SOURCE.findall(text)
            ],
        )
        for label, _, text in zip(blocks[0::3], blocks[1::3], blocks[2::3], strict=True)
    ]  # fmt: skip


def synthesis_batch_from_single(synthesis: Reply, summary: Reply) -> Callable[[str], str]:
    """A batched synthesis that answers each cluster as the single-cluster replies would: the synthesis
    reply to that cluster's synthesis prompt, and the summary reply to its summary prompt (the sources
    named by their short ids) — so the tests written for a call per cluster keep their meaning. A cluster
    whose synthesis reply is unreadable is left out of the answer (as a model that skipped it); one whose
    summary reply is unreadable or raises is answered without a summary."""

    def answer(prompt: str) -> str:
        items = []
        for label, sources in batch_clusters(prompt):
            try:
                parsed = parse_synthesis(_answer(synthesis, build_synthesis_prompt(sources)))
            except PromptParseError:
                continue
            item: dict[str, Any] = {
                "cluster": label,
                "members": [str(source.id) for source in sources],
                "title": parsed.title,
                "content": parsed.content,
                "tags": list(parsed.tags),
                "outcome": parsed.outcome,
                "source_attribution": parsed.source_attribution,
            }
            try:
                summarised = json.loads(_answer(summary, build_summary_prompt(sources)))
            except Exception:  # any failure of the summary reply: the cluster goes without a summary
                summarised = None
            if isinstance(summarised, dict):
                item |= {k: v for k, v in summarised.items() if k not in item}
            items.append(item)
        return json.dumps(items)

    return answer


def cycle_llm(
    *,
    synthesis: Reply = default_synthesis,
    supersession: Reply = supersession_reply(False),
    contradiction: Reply = contradiction_reply(False),
    patterns: Reply = "[]",
    summary: Reply = default_summary,
    calls: int = 100,
) -> ScriptedLLM:
    """A ScriptedLLM whose every step routes by prompt type (synthesis, summary, supersession,
    contradiction, patterns); an unknown prompt fails the test. ``llm.calls`` keeps them all."""

    def route(system: str, prompt: str) -> str:
        if prompt.startswith(SYNTHESIS_PREFIX):
            return _answer(synthesis, prompt)
        if system == JUDGE_BATCH_SYSTEM_PROMPT:
            return batch_from_single(supersession, contradiction)(prompt)
        if system == SYNTHESIS_BATCH_SYSTEM_PROMPT:
            return synthesis_batch_from_single(synthesis, summary)(prompt)
        if system == SUPERSESSION_SYSTEM_PROMPT:
            return _answer(supersession, prompt)
        if system == SUMMARY_SYSTEM_PROMPT:
            return _answer(summary, prompt)
        if prompt.startswith(CONTRADICTION_PREFIX):
            return _answer(contradiction, prompt)
        if prompt.startswith(PATTERN_PREFIX):
            return _answer(patterns, prompt)
        raise AssertionError(f"unexpected prompt: {prompt[:120]!r}")

    return ScriptedLLM(script=[route] * calls)


def prompts_of(llm: ScriptedLLM, prefix: str) -> list[str]:
    """The prompts of ``llm``'s calls starting with ``prefix``; a batched synthesis call counts as the
    synthesis prompt of each of its clusters (what the tests on synthesis inputs read)."""
    asked: list[str] = []
    for system, prompt in llm.calls:
        if system == SYNTHESIS_BATCH_SYSTEM_PROMPT:
            asked += [build_synthesis_prompt(sources) for _, sources in batch_clusters(prompt)]
        else:
            asked.append(prompt)
    return [prompt for prompt in asked if prompt.startswith(prefix)]


# --- running the cycle -----------------------------------------------------------------------------


def run_cycle(principal: Principal, project: Project, llm: Any, **options: Any) -> ConsolidationRun:
    """Request a manual run with validated options and execute it synchronously."""
    run = consolidation_request(principal=principal, project=project, options=run_options_validate(**options))
    finished = consolidation_execute(run.id, llm=llm)
    assert finished is not None, "the run was not claimed"
    return finished
