"""What every consolidation prompt's parser shares: the error a malformed reply raises, the source
memory a prompt is built from, and the lenient readers of a JSON reply (a model wraps JSON in fences
or prose, quotes booleans, drops list brackets)."""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

Outcome = Literal["success", "failure"]


class PromptParseError(ValueError):
    """An LLM reply that does not have the shape its prompt asked for.

    ``raw`` keeps the full reply so the job log / dashboard can show what the model actually said.
    """

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


@dataclass(frozen=True)
class SourceMemory:
    """What the synthesis prompt needs to know about one memory in a cluster.

    ``outcome`` and ``created_at`` are not printed by the synthesis template; they travel with the
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


def json_candidates(text: str, opener: str) -> Iterator[Any]:
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


def json_object_with(text: str, required_key: str, what: str) -> dict[str, Any]:
    found_object = False
    for value in json_candidates(text, "{"):
        if isinstance(value, dict):
            if required_key in value:
                return value
            found_object = True
    if found_object:
        raise PromptParseError(f"{what} reply has no {required_key!r} field", text)
    raise PromptParseError(f"{what} reply contains no JSON object", text)


def as_bool(value: Any, key: str, what: str, raw: str) -> bool:
    if isinstance(value, bool):
        return value
    # Some models quote booleans; accept the unambiguous spellings only.
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise PromptParseError(f"{what} {key!r} must be true or false, got {value!r}", raw)


def as_number(value: Any) -> float | None:
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


def as_text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def as_list(value: Any) -> list[Any]:
    """A JSON list as given; a lone value (models sometimes drop the brackets) as a one-item list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def timestamp_text(moment: datetime) -> str:
    # Temporal judgements (which memory is newer) hinge on timestamps: print them unambiguously,
    # with the UTC offset when the datetime has one.
    return moment.isoformat(sep=" ", timespec="seconds")
