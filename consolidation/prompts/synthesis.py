"""The synthesis prompt (docs/consolidation.md#clustering-and-synthesis) and its parser, and the
consolidated-confidence formula a synthesised memory gets (docs/confidence.md#consolidated-memories)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from consolidation.prompts.fence import DATA_NOTE, SOURCES_CLOSE, SOURCES_OPEN, SYSTEM_NOTE, fence_neutralise
from consolidation.prompts.reply import Outcome, PromptParseError, SourceMemory

# ---------------------------------------------------------------------------------------------
# Synthesis
# ---------------------------------------------------------------------------------------------

# Memory titles are short labels in lists and search results; the prompt asks for a "concise
# title" but models sometimes ramble, so we cut rather than reject an otherwise good synthesis.
TITLE_MAX_LENGTH: Final = 200

# The template, split around the per-memory blocks. Kept as literal text so it reads as the model
# sees it; the golden test pins it byte-for-byte (docs/consolidation.md#the-prompts).
_SYNTHESIS_HEADER: Final = f"""You are consolidating similar memories into a single synthesized memory.

{DATA_NOTE}

Source Memories:
{SOURCES_OPEN}
---
"""

_SYNTHESIS_FOOTER: Final = f"""---
{SOURCES_CLOSE}

Your Task:
1. Identify the common theme across these memories
2. Synthesize the key insights into a coherent, comprehensive strategy
3. Preserve important details that shouldn't be lost
4. Note when and how to apply this consolidated knowledge

Output Format:
TITLE: <concise title>
CONTENT: <synthesized strategy with specific steps>
TAGS: <comma-separated tags>
OUTCOME: success|failure
SOURCE_ATTRIBUTION: <brief description of sources>"""

# sent as the system message with every synthesis prompt
SYNTHESIS_SYSTEM_PROMPT: Final = (
    f"You consolidate an engineering team's memory bank. {SYSTEM_NOTE} Follow the output format exactly."
)

# the synthesis prompt's own instructions (without the sources): the write gate refuses a reply that
# only restates them (memories/core/gate.py)
SYNTHESIS_INSTRUCTIONS: Final = (_SYNTHESIS_HEADER, _SYNTHESIS_FOOTER)


@dataclass(frozen=True)
class Synthesis:
    """A parsed synthesis reply: the new consolidated memory's fields."""

    title: str
    content: str
    tags: tuple[str, ...]
    outcome: Outcome
    source_attribution: str


def build_synthesis_prompt(sources: Sequence[SourceMemory]) -> str:
    """The synthesis prompt, byte-for-byte (no trailing newline)."""
    if not sources:
        raise ValueError("a synthesis prompt needs at least one source memory")
    blocks = [
        f"Memory {number}:\n"
        f"Title: {fence_neutralise(source.title)}\n"
        f"Content: {fence_neutralise(source.content)}\n"
        f"Tags: {fence_neutralise(', '.join(source.tags))}\n"
        f"Confidence: {source.confidence:.2f}, Usage: {source.usage_count}\n"
        for number, source in enumerate(sources, start=1)
    ]
    return _SYNTHESIS_HEADER + "\n".join(blocks) + _SYNTHESIS_FOOTER


# "TITLE: x", and the markdown decorations models like to add: "**TITLE:** x", "**TITLE**: x",
# "- TITLE: x". Keys are upper-case only, as the template asks: a lower-case "Outcome:" inside
# the prose of CONTENT must not be mistaken for the OUTCOME field.
_SYNTHESIS_KEY_LINE: Final = re.compile(
    r"^\s*(?:[-*>#]+\s+)?\**\s*(TITLE|CONTENT|TAGS|OUTCOME|SOURCE[_ ]ATTRIBUTION)\s*\**\s*:\s*\**"
    r"[ \t]?(.*)$"
)


def parse_synthesis(text: str) -> Synthesis:
    """Parse the ``KEY: value`` reply. CONTENT (and any field) may span several lines.

    Text before the first key (a chatty preamble) and a wrapping ``` fence are ignored. When a
    key appears twice, the first one wins and the repeat (with the lines under it) is ignored.
    Raises :class:`PromptParseError` if TITLE or CONTENT is missing/empty or OUTCOME is not
    success/failure.
    """
    lines = text.strip().splitlines()
    if lines and lines[0].lstrip().startswith("```"):
        lines = lines[1:]
    if lines and lines[-1].strip() == "```":
        lines = lines[:-1]

    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        match = _SYNTHESIS_KEY_LINE.match(line)
        if match:
            key = match.group(1).replace(" ", "_")
            # A repeated key (the model restating or starting a second answer) is read into a
            # throwaway list: the first answer wins and the repeat cannot leak into a field.
            if key in fields:
                current = []
            else:
                current = fields[key] = [match.group(2)]
            continue
        if current is not None:
            current.append(line)

    def field(key: str) -> str:
        return "\n".join(fields.get(key, [])).strip()

    title = " ".join(field("TITLE").split())
    if not title:
        raise PromptParseError("synthesis reply has no TITLE", text)
    content = field("CONTENT")
    if not content:
        raise PromptParseError("synthesis reply has no CONTENT", text)

    raw_outcome = field("OUTCOME")
    outcome = raw_outcome.strip("*_`'\". \t\n").lower()
    if outcome not in ("success", "failure"):
        shown = raw_outcome or "(missing)"
        raise PromptParseError(f"synthesis OUTCOME must be success or failure, got {shown!r}", text)

    tags: list[str] = []
    seen: set[str] = set()
    for raw_tag in field("TAGS").replace("\n", ",").split(","):
        tag = raw_tag.strip().strip("`'\"")
        if tag and tag.casefold() not in seen:
            seen.add(tag.casefold())
            tags.append(tag)

    return Synthesis(
        title=title[:TITLE_MAX_LENGTH].rstrip(),
        content=content,
        tags=tuple(tags),
        outcome="success" if outcome == "success" else "failure",
        source_attribution=field("SOURCE_ATTRIBUTION"),
    )


# ---------------------------------------------------------------------------------------------
# Consolidated confidence
# ---------------------------------------------------------------------------------------------

# The bonus is at most +0.1; its scale: a population stdev of 0.2 or more (sources disagreeing by
# roughly +/-0.2) earns nothing, identical scores earn all.
CONSENSUS_STDEV_SCALE: Final = 0.2

# A synthesis is never certain: keep consolidated confidence strictly below 1 so feedback can
# still move it and it never outranks everything by construction.
MAX_CONSOLIDATED_CONFIDENCE: Final = 0.99


@dataclass(frozen=True)
class ConsolidatedConfidence:
    """The consolidated memory's confidence, with its parts kept for the dashboard."""

    weighted: float
    bonus: float
    final: float


def consolidated_confidence(
    sources: Sequence[tuple[float, int]],
    *,
    max_bonus: float = 0.1,
    consensus_threshold: int = 2,
) -> ConsolidatedConfidence:
    """weighted = sum(c * (u + 1)) / sum(u + 1), plus a consensus bonus.

    ``sources`` are ``(confidence, usage_count)`` pairs. The ``+1`` lets never-used memories count
    a little instead of not at all. With at least ``consensus_threshold`` sources the bonus is
    ``max_bonus * max(0, 1 - pstdev(confidences) / 0.2)``: agreement between independent
    experiences is evidence, one source agreeing with itself is not. ``final`` is
    ``min(0.99, weighted + bonus)``.
    """
    if not sources:
        raise ValueError("consolidated confidence needs at least one source")
    for confidence, usage in sources:
        if not 0.0 <= confidence <= 1.0:
            raise ValueError(f"source confidence must be between 0 and 1, got {confidence}")
        if usage < 0:
            raise ValueError(f"source usage_count must be >= 0, got {usage}")

    total_weight = sum(usage + 1 for _, usage in sources)
    weighted = sum(confidence * (usage + 1) for confidence, usage in sources) / total_weight

    bonus = 0.0
    # ">= 2" as well: a single source has zero spread, which is not consensus whatever the
    # caller's threshold says.
    if len(sources) >= consensus_threshold and len(sources) >= 2:
        spread = statistics.pstdev(confidence for confidence, _ in sources)
        bonus = max_bonus * max(0.0, 1.0 - spread / CONSENSUS_STDEV_SCALE)

    final = min(MAX_CONSOLIDATED_CONFIDENCE, weighted + bonus)
    return ConsolidatedConfidence(weighted=weighted, bonus=bonus, final=final)
