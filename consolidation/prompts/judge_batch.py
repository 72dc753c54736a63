"""The batched judge (docs/consolidation.md#the-judge): several close pairs in one prompt, one verdict per
pair — supersedes, contradicts or compatible — instead of a supersession check and a contradiction
judge per pair. Memories are listed once with short ids (``M1``…) and pairs name them (``P1: M1 → M2``),
so a memory in several pairs costs its tokens once.

Every verdict must stay attributable to its pair: the reply names the pair *and* its two memories, and
a reply item whose pair is unknown, whose memories do not match the pair, or that answers a pair twice
with different verdicts is dropped. A pair the reply leaves out (or answers unreadably) is simply not
decided: the caller asks again, never guesses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from consolidation.prompts.reply import PromptParseError, as_number, as_text, json_candidates, timestamp_text

PairVerdictKind = Literal["supersedes", "contradicts", "compatible"]
VERDICT_KINDS: Final = ("supersedes", "contradicts", "compatible")

# a supersession or a contradiction acts only above this confidence (strict), as the single-pair judge's
# contradiction gate (consolidation.prompts.judge.CONTRADICTION_MIN_CONFIDENCE)
BATCH_MIN_CONFIDENCE: Final = 0.7
# the reply's length: a verdict with its reasoning runs to about 100 tokens; room for twice that
REPLY_TOKENS_PER_PAIR: Final = 200
REPLY_TOKENS_BASE: Final = 256


def batch_max_tokens(pairs: int) -> int:
    """The reply tokens a batch of ``pairs`` is allowed (a cut-off reply loses its last verdicts)."""
    return REPLY_TOKENS_BASE + REPLY_TOKENS_PER_PAIR * pairs


JUDGE_BATCH_SYSTEM_PROMPT: Final = (
    "You are a careful reviewer of an engineering team's knowledge base. You compare pairs of memories "
    "and answer with JSON only."
)

JUDGE_BATCH_INSTRUCTIONS: Final = (
    "For each pair, decide one verdict:\n"
    '- "supersedes": the NEWER memory replaces the OLDER one (a decision changed, an updated version of the '
    "same information, or the older is obsolete). Be conservative: only with clear evidence.\n"
    '- "contradicts": both cannot be true at the same time about the same subject, and neither clearly '
    "replaces the other.\n"
    '- "compatible": they can both be true: the same advice, one more specific than the other, or different '
    "subjects.\n"
    "\n"
    "Think about each pair before you decide: write its reasoning first, then its verdict.\n"
    "\n"
    "Respond with a JSON array only, one object per pair, every pair answered once, with the keys in this "
    "order:\n"
    '[{"pair": "P1", "older": "M1", "newer": "M2", "reasoning": "...", '
    '"verdict": "supersedes|contradicts|compatible", "confidence": 0.0-1.0, "explanation": "one line"}]'
)


@dataclass(frozen=True)
class BatchMemory:
    """One memory as the batched prompt shows it; ``label`` is its short id in the prompt (``M1``)."""

    label: str
    title: str
    content: str
    created_at: datetime


@dataclass(frozen=True)
class BatchPair:
    """One pair of the prompt: ``label`` (``P1``) and its memories' labels, older first."""

    label: str
    older: str
    newer: str


@dataclass(frozen=True)
class PairVerdict:
    verdict: PairVerdictKind
    confidence: float
    explanation: str
    reasoning: str

    @property
    def confident(self) -> bool:
        return self.confidence > BATCH_MIN_CONFIDENCE


def build_judge_batch_prompt(memories: Sequence[BatchMemory], pairs: Sequence[BatchPair]) -> str:
    """The memories once each, then the pairs (older first), then the instructions.

    Raises ``ValueError`` for a pair naming a memory the prompt does not list, a pair listed twice, or
    a pair whose "older" memory was recorded after its "newer" one (the supersession question is
    directional: asked backwards it would retire the fresher memory)."""
    by_label = {m.label: m for m in memories}
    if len(by_label) != len(memories):
        raise ValueError("two memories share a label")
    seen: set[str] = set()
    for pair in pairs:
        if pair.label in seen:
            raise ValueError(f"pair {pair.label} is listed twice")
        seen.add(pair.label)
        if pair.older not in by_label or pair.newer not in by_label:
            raise ValueError(f"pair {pair.label} names a memory the prompt does not list")
        if by_label[pair.older].created_at > by_label[pair.newer].created_at:
            raise ValueError(f"pair {pair.label}: the older memory must not be recorded after the newer")
    lines = [f"Judge each of these {len(pairs)} pairs of memories.", "", "Memories:"]
    for m in memories:
        lines += [
            f"[{m.label}] recorded {timestamp_text(m.created_at)}",
            f"Title: {m.title}",
            f"Content: {m.content}",
            "",
        ]
    lines.append("Pairs (OLDER → NEWER):")
    lines += [f"{p.label}: {p.older} → {p.newer}" for p in pairs]
    return "\n".join([*lines, "", JUDGE_BATCH_INSTRUCTIONS])


def parse_judge_batch(text: str, pairs: Sequence[BatchPair]) -> dict[str, PairVerdict]:
    """The verdicts the reply gives, by pair label — only those attributable beyond doubt.

    Raises :class:`PromptParseError` when the reply holds no JSON object naming a pair. Otherwise an
    item is dropped when its ``pair`` is not one asked, its ``older``/``newer`` are not that pair's
    memories (a swapped or mislabelled answer), its verdict or confidence is unreadable, or another item
    answers the same pair differently; pairs without a kept verdict are absent from the result."""
    expected = {p.label: p for p in pairs}
    # every object that names a pair, read one by one rather than as one array: a reply cut short by
    # the token limit still gives the verdicts it completed (the rest are asked again)
    items = [v for v in json_candidates(text, "{") if isinstance(v, dict) and "pair" in v]
    if not items:
        raise PromptParseError("batched judge reply contains no verdict objects naming a pair", text)
    found: dict[str, PairVerdict] = {}
    conflicting: set[str] = set()
    for item in items:
        label = as_text(item.get("pair"))
        pair = expected.get(label)
        if pair is None or (as_text(item.get("older")), as_text(item.get("newer"))) != (pair.older, pair.newer):
            continue  # not a pair we asked about, or not the memories it is about: never guessed
        verdict = _verdict(item)
        if verdict is None:
            continue
        if label in found and found[label].verdict != verdict.verdict:
            conflicting.add(label)
        found.setdefault(label, verdict)
    return {label: v for label, v in found.items() if label not in conflicting}


def _verdict(item: dict[str, object]) -> PairVerdict | None:
    kind = as_text(item.get("verdict")).lower()
    confidence = as_number(item.get("confidence"))
    if kind not in VERDICT_KINDS or confidence is None or not (math.isfinite(confidence) and 0 <= confidence <= 1):
        return None
    verdict: PairVerdictKind = (
        "supersedes" if kind == "supersedes" else ("contradicts" if kind == "contradicts" else "compatible")
    )
    return PairVerdict(verdict, confidence, as_text(item.get("explanation")), as_text(item.get("reasoning")))
