"""The judge's prompts and parsers (docs/consolidation.md#the-judge): the contradiction judge (asked to
reason before its verdict) and the supersession check."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from consolidation.prompts.reply import PromptParseError, as_bool, as_number, as_text, json_object_with, timestamp_text

SupersessionConfidence = Literal["high", "medium", "low"]


# ---------------------------------------------------------------------------------------------
# Contradiction judge
# ---------------------------------------------------------------------------------------------

# A contradiction is linked only when the judge's confidence is strictly greater than 0.7.
CONTRADICTION_MIN_CONFIDENCE: Final = 0.7

# sent as the system message with every contradiction prompt
CONTRADICTION_SYSTEM_PROMPT: Final = (
    "You are a careful reviewer of an engineering team's knowledge base. Answer with JSON only."
)


@dataclass(frozen=True)
class ContradictionVerdict:
    contradicts: bool
    confidence: float
    explanation: str
    reasoning: str


def build_contradiction_prompt(first_content: str, second_content: str) -> str:
    """The contradiction question, asking for the reasoning *before* the verdict.

    The opening is the question and both statements. Asking for
    ``{"contradicts", "confidence", "explanation"}`` in that order makes the model commit to a verdict
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
    data = json_object_with(text, "contradicts", what)
    contradicts = as_bool(data["contradicts"], "contradicts", what, text)

    raw_confidence = data.get("confidence")
    confidence = as_number(raw_confidence)
    if confidence is None:
        raise PromptParseError(f"contradiction 'confidence' must be a number, got {raw_confidence!r}", text)
    if not (math.isfinite(confidence) and 0.0 <= confidence <= 1.0):
        raise PromptParseError(f"contradiction 'confidence' must be between 0 and 1, got {raw_confidence!r}", text)

    return ContradictionVerdict(
        contradicts=contradicts,
        confidence=confidence,
        explanation=as_text(data.get("explanation")),
        reasoning=as_text(data.get("reasoning")),
    )


def is_confident_contradiction(
    verdict: ContradictionVerdict, min_confidence: float = CONTRADICTION_MIN_CONFIDENCE
) -> bool:
    """The gate: contradicts, with confidence ``> 0.7`` (strict, so exactly 0.7 is not)."""
    return verdict.contradicts and verdict.confidence > min_confidence


# ---------------------------------------------------------------------------------------------
# Supersession
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
        f"OLDER memory (recorded {timestamp_text(older_at)}):\n"
        f"Title: {older_title}\n"
        f"Content: {older_content}\n"
        "\n"
        f"NEWER memory (recorded {timestamp_text(newer_at)}):\n"
        f"Title: {newer_title}\n"
        f"Content: {newer_content}\n"
        "\n"
        "Does the NEWER memory supersede the OLDER memory? Respond with the JSON object only."
    )


def parse_supersession(text: str) -> SupersessionVerdict:
    """Parse the supersession JSON (first object with ``supersedes``)."""
    what = "supersession"
    data = json_object_with(text, "supersedes", what)
    supersedes = as_bool(data["supersedes"], "supersedes", what, text)

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
        # The prompt asks for null when there is nothing to explain; an empty string means the same.
        reason=(reason.strip() or None) if isinstance(reason, str) else None,
    )


def is_confident_supersession(verdict: SupersessionVerdict) -> bool:
    """Only a "high" confidence supersession acts -- the prompt says "Be conservative"."""
    return verdict.supersedes and verdict.confidence == "high"
