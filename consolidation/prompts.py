"""LLM prompts and reply parsers for consolidation, free of Django.

Every prompt here is copied from a seed (the specification) and every parser turns a model's
free-text reply into a frozen dataclass or raises :class:`PromptParseError`. Keeping them pure
means the golden-text tests pin the prompts byte-for-byte, and the services only ever see
validated values -- a malformed reply fails loudly instead of writing half a memory.

- synthesis (seed 000 "Consolidation Prompt Template") + the consolidated-confidence formula;
- contradiction judge (seed 004 ``CheckContradictionAsync``, reworded to reason before its
  verdict);
- supersession (seed 002 ``SUPERSESSION_SYSTEM_PROMPT``);
- pattern extraction from episodic memories (seed 004 ``BuildPatternExtractionPrompt``);
- cluster summaries (seed 002 ``SUMMARY_SYSTEM_PROMPT``).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

Outcome = Literal["success", "failure"]
SupersessionConfidence = Literal["high", "medium", "low"]


class PromptParseError(ValueError):
    """An LLM reply that does not have the shape its prompt asked for.

    ``raw`` keeps the full reply so the job log / dashboard can show what the model actually said.
    """

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


# ---------------------------------------------------------------------------------------------
# Synthesis (seed 000)
# ---------------------------------------------------------------------------------------------

# Memory titles are short labels in lists and search results; seed 000 asks for a "concise
# title" but models sometimes ramble, so we cut rather than reject an otherwise good synthesis.
TITLE_MAX_LENGTH: Final = 200

# Seed 000's template, split around the per-memory blocks. Kept as literal text so it reads like
# the seed; the golden test pins it byte-for-byte.
_SYNTHESIS_HEADER: Final = """You are consolidating similar memories into a single synthesized memory.

Source Memories:
---
"""

_SYNTHESIS_FOOTER: Final = """---

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

# the synthesis prompt's own instructions (without the sources): the write gate refuses a reply that
# only restates them (memories/gate.py)
SYNTHESIS_INSTRUCTIONS: Final = (_SYNTHESIS_HEADER, _SYNTHESIS_FOOTER)


@dataclass(frozen=True)
class SourceMemory:
    """What the synthesis prompt needs to know about one memory in a cluster.

    ``outcome`` and ``created_at`` are not printed by seed 000's template; they travel with the
    source so the caller can reconcile the synthesised outcome and keep lineage without a second
    query.
    """

    id: Hashable
    title: str
    content: str
    tags: tuple[str, ...]
    confidence: float
    usage_count: int
    outcome: str
    created_at: datetime | None = None

    def __post_init__(self) -> None:
        # Accept any sequence of tags from callers (ORM ArrayField gives a list) but store a
        # tuple so the dataclass really is immutable.
        object.__setattr__(self, "tags", tuple(self.tags))


@dataclass(frozen=True)
class Synthesis:
    """A parsed synthesis reply: the new consolidated memory's fields."""

    title: str
    content: str
    tags: tuple[str, ...]
    outcome: Outcome
    source_attribution: str


def build_synthesis_prompt(sources: Sequence[SourceMemory]) -> str:
    """Seed 000's consolidation prompt, byte-for-byte (no trailing newline, like the seed)."""
    if not sources:
        raise ValueError("a synthesis prompt needs at least one source memory")
    blocks = [
        f"Memory {number}:\n"
        f"Title: {source.title}\n"
        f"Content: {source.content}\n"
        f"Tags: {', '.join(source.tags)}\n"
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
    """Parse seed 000's ``KEY: value`` reply. CONTENT (and any field) may span several lines.

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
# Consolidated confidence (seed 000)
# ---------------------------------------------------------------------------------------------

# Seed 000 caps the bonus ("up to +0.1") but gives no variance scale; ours: a population stdev of
# 0.2 or more (sources disagreeing by roughly +/-0.2) earns nothing, identical scores earn all.
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
    """Seed 000: weighted = sum(c * (u + 1)) / sum(u + 1), plus a consensus bonus.

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


# ---------------------------------------------------------------------------------------------
# Shared JSON extraction
# ---------------------------------------------------------------------------------------------


def _json_candidates(text: str, opener: str) -> Iterator[Any]:
    """Every JSON value that starts at an ``opener`` character, in order of position.

    Models wrap JSON in ```json fences or a sentence of prose; instead of guessing at the
    wrapping we try to decode at each ``{`` / ``[`` and let the caller take the first value of
    the right shape. Replies are short, so the repeated attempts cost nothing.
    """
    decoder = json.JSONDecoder()
    position = text.find(opener)
    while position != -1:
        try:
            value, _ = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            pass
        else:
            yield value
        position = text.find(opener, position + 1)


def _first_object_with(text: str, required_key: str, what: str) -> dict[str, Any]:
    found_object = False
    for value in _json_candidates(text, "{"):
        if isinstance(value, dict):
            if required_key in value:
                return value
            found_object = True
    if found_object:
        raise PromptParseError(f"{what} reply has no {required_key!r} field", text)
    raise PromptParseError(f"{what} reply contains no JSON object", text)


def _as_bool(value: Any, key: str, what: str, raw: str) -> bool:
    if isinstance(value, bool):
        return value
    # Some models quote booleans; accept the unambiguous spellings only.
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise PromptParseError(f"{what} {key!r} must be true or false, got {value!r}", raw)


def _as_number(value: Any) -> float | None:
    # JSON true/false are ints to Python but not probabilities; quoted numbers ("0.8") are fine.
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _as_text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


# ---------------------------------------------------------------------------------------------
# Contradiction judge (seed 004)
# ---------------------------------------------------------------------------------------------

# Seed 004 links a contradiction only when ``result.Confidence > 0.7f`` (strictly greater).
CONTRADICTION_MIN_CONFIDENCE: Final = 0.7


@dataclass(frozen=True)
class ContradictionVerdict:
    contradicts: bool
    confidence: float
    explanation: str
    reasoning: str


def build_contradiction_prompt(first_content: str, second_content: str) -> str:
    """Seed 004's contradiction question, asking for the reasoning *before* the verdict.

    The opening (question + both statements) is seed 004's text unchanged. The seed asked for
    ``{"contradicts", "confidence", "explanation"}``, which makes the model commit to a verdict
    first and rationalise afterwards; putting ``reasoning`` first in the requested JSON makes it
    think, then decide. ``explanation`` stays the one-line reason stored on the Contradicts link.
    """
    return (
        "Do these two statements contradict each other?\n"
        "\n"
        f"Statement 1: {first_content}\n"
        f"Statement 2: {second_content}\n"
        "\n"
        "Two statements contradict each other when both cannot be true at the same time about "
        "the same subject. Statements about different subjects, or where one is merely more "
        "specific than the other, do not contradict.\n"
        "\n"
        "Think it through before you decide: write your reasoning first, then your verdict.\n"
        "\n"
        "Respond with JSON only, with the keys in this order: "
        '{"reasoning": "...", "contradicts": true/false, "confidence": 0.0-1.0, '
        '"explanation": "..."}'
    )


def parse_contradiction(text: str) -> ContradictionVerdict:
    """Parse the judge's JSON (first object with a ``contradicts`` key, fences/prose tolerated)."""
    what = "contradiction"
    data = _first_object_with(text, "contradicts", what)
    contradicts = _as_bool(data["contradicts"], "contradicts", what, text)

    raw_confidence = data.get("confidence")
    confidence = _as_number(raw_confidence)
    if confidence is None:
        raise PromptParseError(f"contradiction 'confidence' must be a number, got {raw_confidence!r}", text)
    if not (math.isfinite(confidence) and 0.0 <= confidence <= 1.0):
        raise PromptParseError(f"contradiction 'confidence' must be between 0 and 1, got {raw_confidence!r}", text)

    return ContradictionVerdict(
        contradicts=contradicts,
        confidence=confidence,
        explanation=_as_text(data.get("explanation")),
        reasoning=_as_text(data.get("reasoning")),
    )


def is_confident_contradiction(
    verdict: ContradictionVerdict, min_confidence: float = CONTRADICTION_MIN_CONFIDENCE
) -> bool:
    """Seed 004's gate: ``Contradicts && Confidence > 0.7`` (strict, so exactly 0.7 is not)."""
    return verdict.contradicts and verdict.confidence > min_confidence


# ---------------------------------------------------------------------------------------------
# Supersession (seed 002)
# ---------------------------------------------------------------------------------------------

SUPERSESSION_SYSTEM_PROMPT: Final = """Analyze two memories to determine if the newer supersedes the older.

Supersession means the newer memory:
1. Directly contradicts the older (decision changed)
2. Replaces the older (updated version of same info)
3. Makes the older obsolete (topic no longer relevant)

Be conservative - only mark as superseded with clear evidence.

Output JSON:
{
  "supersedes": true|false,
  "confidence": "high|medium|low",
  "reason": "explanation if supersedes is true, null otherwise"
}
"""

# (title, content, created_at) of one memory in a supersession check.
SupersessionCandidate = tuple[str, str, datetime]


@dataclass(frozen=True)
class SupersessionVerdict:
    supersedes: bool
    confidence: SupersessionConfidence
    reason: str | None


def _format_timestamp(moment: datetime) -> str:
    # Seed 002 stresses that temporal judgements hinge on timestamps: print them unambiguously,
    # with the UTC offset when the datetime has one.
    return moment.isoformat(sep=" ", timespec="seconds")


def build_supersession_prompt(older: SupersessionCandidate, newer: SupersessionCandidate) -> str:
    """User message for :data:`SUPERSESSION_SYSTEM_PROMPT`: the OLDER memory, then the NEWER.

    Raises ``ValueError`` if ``older`` was recorded after ``newer``: the question is directional,
    and asking it backwards would archive the fresher memory.
    """
    older_title, older_content, older_at = older
    newer_title, newer_content, newer_at = newer
    if older_at > newer_at:
        raise ValueError("older memory must not be recorded after the newer memory")
    return (
        f"OLDER memory (recorded {_format_timestamp(older_at)}):\n"
        f"Title: {older_title}\n"
        f"Content: {older_content}\n"
        "\n"
        f"NEWER memory (recorded {_format_timestamp(newer_at)}):\n"
        f"Title: {newer_title}\n"
        f"Content: {newer_content}\n"
        "\n"
        "Does the NEWER memory supersede the OLDER memory? Respond with the JSON object only."
    )


def parse_supersession(text: str) -> SupersessionVerdict:
    """Parse seed 002's supersession JSON (first object with ``supersedes``)."""
    what = "supersession"
    data = _first_object_with(text, "supersedes", what)
    supersedes = _as_bool(data["supersedes"], "supersedes", what, text)

    raw_confidence = data.get("confidence")
    level = raw_confidence.strip().lower() if isinstance(raw_confidence, str) else None
    if level == "high":
        confidence: SupersessionConfidence = "high"
    elif level == "medium":
        confidence = "medium"
    elif level == "low":
        confidence = "low"
    else:
        raise PromptParseError(f"supersession 'confidence' must be high, medium or low, got {raw_confidence!r}", text)

    reason = data.get("reason")
    return SupersessionVerdict(
        supersedes=supersedes,
        confidence=confidence,
        # Seed 002 sends null when there is nothing to explain; an empty string means the same.
        reason=(reason.strip() or None) if isinstance(reason, str) else None,
    )


def is_confident_supersession(verdict: SupersessionVerdict) -> bool:
    """Only a "high" confidence supersession acts -- seed 002: "Be conservative"."""
    return verdict.supersedes and verdict.confidence == "high"


# ---------------------------------------------------------------------------------------------
# Pattern extraction (seed 004)
# ---------------------------------------------------------------------------------------------

# Seed 004: ``episodicMemories.Take(20)`` in the prompt, and no extraction below 3 episodes.
PATTERN_EPISODE_LIMIT: Final = 20
MIN_EPISODES_FOR_PATTERNS: Final = 3

# Ours: a reply with dozens of "patterns" is the model listing episodes back at us; keep the first
# ten so one run cannot flood the bank with new semantic memories.
MAX_PATTERNS: Final = 10


# seed 004's lines around the episodes; the write gate refuses a pattern that echoes them (the example!)
PATTERN_INSTRUCTIONS: Final = (
    "Analyze these episodic memories and extract recurring patterns or facts:",
    "Extract generalizable facts or patterns. Output as JSON array of strings:",
    'Example: ["User prefers to run tests before committing", "Project uses PostgreSQL"]',
)


def build_pattern_prompt(episodes: Sequence[tuple[datetime, str]]) -> str:
    """Seed 004's ``BuildPatternExtractionPrompt`` byte-for-byte (each AppendLine is a ``\\n``).

    ``episodes`` are ``(created_at, content)`` in the order to show; only the first 20 are used.
    """
    if not episodes:
        raise ValueError("a pattern prompt needs at least one episode")
    shown = episodes[:PATTERN_EPISODE_LIMIT]
    head, *tail = PATTERN_INSTRUCTIONS
    lines = [head, "", *(f"- [{created_at:%Y-%m-%d}] {content}" for created_at, content in shown), "", *tail]
    return "".join(line + "\n" for line in lines)


def parse_patterns(text: str) -> list[str]:
    """Parse the JSON array of pattern strings (fences/prose tolerated).

    Takes the first array whose items are all strings; blank entries and case-insensitive
    repeats are dropped, at most 10 are kept. Raises :class:`PromptParseError` when there is no
    such array (``[]`` is a valid "no patterns" answer).
    """
    found_array = False
    for value in _json_candidates(text, "["):
        if not isinstance(value, list):
            continue
        if all(isinstance(item, str) for item in value):
            patterns: list[str] = []
            seen: set[str] = set()
            for item in value:
                pattern = item.strip()
                if pattern and pattern.casefold() not in seen:
                    seen.add(pattern.casefold())
                    patterns.append(pattern)
            return patterns[:MAX_PATTERNS]
        found_array = True
    if found_array:
        raise PromptParseError("pattern reply array must contain only strings", text)
    raise PromptParseError("pattern reply contains no JSON array", text)


# ---------------------------------------------------------------------------------------------
# Cluster summaries (seed 002 "Summarization Prompt", ``MemorySummary``)
# ---------------------------------------------------------------------------------------------

SUMMARY_SYSTEM_PROMPT: Final = """You are a memory consolidation agent. Create a concise summary of related memories from a software project.

Guidelines:
- Preserve key decisions and their rationale
- Note outcomes and lessons learned
- Identify superseded or outdated information
- Be concise but complete
- Focus on actionable knowledge

Output JSON:
{
  "summary": "2-3 sentence summary",
  "key_facts": ["fact1", "fact2"],
  "decisions": [{"decision": "...", "rationale": "...", "outcome": "...", "confidence": "high|medium|low"}],
  "superseded_facts": [{"original_fact": "...", "superseded_by": "...", "source_memory_id": "..."}]
}
"""  # noqa: E501 (seed 002, verbatim)

# Ours: what one summary may hold. A summary is read at every session start, so it stays short;
# longer text is cut, not rejected (the model's content is still good).
SUMMARY_MAX_LENGTH: Final = 4000
SUMMARY_ITEM_MAX_LENGTH: Final = 1000
SUMMARY_MAX_ITEMS: Final = 20
DecisionConfidence = Literal["high", "medium", "low"]


@dataclass(frozen=True)
class SummaryDecision:
    decision: str
    rationale: str
    outcome: str | None
    confidence: DecisionConfidence


@dataclass(frozen=True)
class SupersededFact:
    original_fact: str
    superseded_by: str
    source_memory_id: str  # empty when the model named no source of this cluster


@dataclass(frozen=True)
class ClusterSummary:
    summary: str
    key_facts: tuple[str, ...]
    decisions: tuple[SummaryDecision, ...]
    superseded_facts: tuple[SupersededFact, ...]


def build_summary_prompt(sources: Sequence[SourceMemory]) -> str:
    """User message for :data:`SUMMARY_SYSTEM_PROMPT`: the cluster's memories oldest first, each with
    its id (superseded facts name their source by it) and recording time (what superseded what)."""
    if not sources:
        raise ValueError("a summary prompt needs at least one source memory")
    ordered = sorted(
        sources, key=lambda s: (s.created_at is None, s.created_at.timestamp() if s.created_at else 0.0, str(s.id))
    )
    blocks = [
        f"Memory id: {source.id}\n"
        + (f"Recorded: {_format_timestamp(source.created_at)}\n" if source.created_at else "")
        + f"Outcome: {source.outcome}\n"
        f"Title: {source.title}\n"
        f"Content: {source.content}\n"
        for source in ordered
    ]
    return (
        f"Summarize these {len(ordered)} related memories (oldest first):\n\n"
        + "\n".join(blocks)
        + "\nRespond with the JSON object only."
    )


_TRAILING_COMMA: Final = re.compile(r",(\s*[}\]])")


def parse_summary(text: str, source_ids: Sequence[str]) -> ClusterSummary:
    """Parse seed 002's summary JSON, repairing what models commonly get wrong: a ```json fence or
    prose around the object, trailing commas, a single string where a list belongs, a decision's
    confidence in another case. Raises :class:`PromptParseError` (the reply kept) when there is no
    object with a non-empty ``summary``. A superseded fact naming a memory outside the cluster keeps
    its text but no source id: the model cannot point lineage at a memory it was not shown."""
    what = "summary"
    try:
        data = _first_object_with(text, "summary", what)
    except PromptParseError:
        repaired = _TRAILING_COMMA.sub(r"\1", text)
        if repaired == text:
            raise
        data = _first_object_with(repaired, "summary", what)
    summary = _as_text(data.get("summary"))
    if not summary:
        raise PromptParseError("summary reply has an empty 'summary'", text)

    key_facts = tuple(
        fact[:SUMMARY_ITEM_MAX_LENGTH] for fact in (_as_text(item) for item in _as_list(data.get("key_facts"))) if fact
    )[:SUMMARY_MAX_ITEMS]

    decisions: list[SummaryDecision] = []
    for item in _as_list(data.get("decisions")):
        if isinstance(item, str):
            item = {"decision": item}
        if not isinstance(item, dict) or not _as_text(item.get("decision")):
            continue
        level = _as_text(item.get("confidence")).lower()
        outcome = _as_text(item.get("outcome"))
        decisions.append(
            SummaryDecision(
                decision=_as_text(item["decision"])[:SUMMARY_ITEM_MAX_LENGTH],
                rationale=_as_text(item.get("rationale"))[:SUMMARY_ITEM_MAX_LENGTH],
                outcome=outcome[:SUMMARY_ITEM_MAX_LENGTH] or None,
                # seed 002 asks for high|medium|low; anything else is not a judgement we can use
                confidence=level if level in ("high", "medium", "low") else "low",  # type: ignore[arg-type]
            )
        )

    allowed = {str(source_id) for source_id in source_ids}
    superseded: list[SupersededFact] = []
    for item in _as_list(data.get("superseded_facts")):
        if not isinstance(item, dict):
            continue
        original, newer = _as_text(item.get("original_fact")), _as_text(item.get("superseded_by"))
        if not (original and newer):
            continue
        source = _as_text(item.get("source_memory_id"))
        superseded.append(
            SupersededFact(
                original_fact=original[:SUMMARY_ITEM_MAX_LENGTH],
                superseded_by=newer[:SUMMARY_ITEM_MAX_LENGTH],
                source_memory_id=source if source in allowed else "",
            )
        )
    return ClusterSummary(
        summary=summary[:SUMMARY_MAX_LENGTH],
        key_facts=key_facts,
        decisions=tuple(decisions[:SUMMARY_MAX_ITEMS]),
        superseded_facts=tuple(superseded[:SUMMARY_MAX_ITEMS]),
    )


def _as_list(value: Any) -> list[Any]:
    """A JSON list as given; a lone value (models sometimes drop the brackets) as a one-item list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
