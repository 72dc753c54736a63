"""Pattern extraction from episodic memories (docs/consolidation.md#patterns): the prompt and its parser."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

from consolidation.prompts.fence import DATA_NOTE, SOURCES_CLOSE, SOURCES_OPEN, SYSTEM_NOTE, fence_neutralise
from consolidation.prompts.reply import PromptParseError, json_candidates

# At most 20 episodes in the prompt, and no extraction below 3 episodes.
PATTERN_EPISODE_LIMIT: Final = 20
MIN_EPISODES_FOR_PATTERNS: Final = 3

# Ours: a reply with dozens of "patterns" is the model listing episodes back at us; keep the first
# ten so one run cannot flood the bank with new semantic memories.
MAX_PATTERNS: Final = 10


# sent as the system message with every pattern prompt
PATTERN_SYSTEM_PROMPT: Final = (
    f"You extract durable facts and habits from an engineering team's episodic memories. {SYSTEM_NOTE}"
)

# the prompt's lines around the episodes; the write gate refuses a pattern that echoes them (the example!)
PATTERN_INSTRUCTIONS: Final = (
    "Analyze these episodic memories and extract recurring patterns or facts:",
    "Extract generalizable facts or patterns. Output as JSON array of strings:",
    'Example: ["User prefers to run tests before committing", "Project uses PostgreSQL"]',
)


def build_pattern_prompt(episodes: Sequence[tuple[datetime, str]]) -> str:
    """The pattern prompt, byte-for-byte as the golden test pins it (each line ends in ``\\n``).

    ``episodes`` are ``(created_at, content)`` in the order to show; only the first 20 are used.
    """
    if not episodes:
        raise ValueError("a pattern prompt needs at least one episode")
    shown = episodes[:PATTERN_EPISODE_LIMIT]
    head, *tail = PATTERN_INSTRUCTIONS
    episodes_shown = (f"- [{created_at:%Y-%m-%d}] {fence_neutralise(content)}" for created_at, content in shown)
    lines = [head, "", DATA_NOTE, "", SOURCES_OPEN, *episodes_shown, SOURCES_CLOSE, "", *tail]
    return "".join(line + "\n" for line in lines)


def parse_patterns(text: str) -> list[str]:
    """Parse the JSON array of pattern strings (fences/prose tolerated).

    Takes the first array whose items are all strings; blank entries and case-insensitive
    repeats are dropped, at most 10 are kept. Raises :class:`PromptParseError` when there is no
    such array (``[]`` is a valid "no patterns" answer).
    """
    found_array = False
    for value in json_candidates(text, "["):
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
