"""What a hook may spend (docs/security/hooks.md): its time — ``REASONINGBANK_TIMEOUT`` seconds from the
moment the dispatcher starts, reading and the HTTP call included, so that it ends itself before its client
gives up on it — and the sizes it works within: the memories and tokens a prompt may get, the bytes of a
transcript it sends, the messages a session needs to be worth sending. Every number comes from the
environment, clamped to a sane range."""

from __future__ import annotations

import math
import os
import time
from typing import NamedTuple

from .errors import HookError

STARTED = time.monotonic()  # reset by clock_start(): the dispatcher's start, not this module's import


def clock_start() -> None:
    """The budget counts from now (the dispatcher calls it first; a test reading a file calls it too)."""
    global STARTED
    STARTED = time.monotonic()


def env_number(name: str, default: float, *, low: float, high: float, strict: bool = True) -> float:
    """A number from the environment, clamped to ``[low, high]``; a value that is no number is a HookError
    (or the default, not ``strict``: the detached sender has no one to tell)."""
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw.strip() else default
    except ValueError:
        if not strict:
            value = default
        else:
            raise HookError(f"{name} must be a number, not {raw!r}") from None
    return min(max(value, low), high)


def budget() -> float:
    return env_number("REASONINGBANK_TIMEOUT", 2.0, low=0.2, high=30.0)


def seconds_left() -> float:
    return max(budget() - (time.monotonic() - STARTED), 0.0)


def budget_left() -> float:
    """The seconds left for a request; a HookError when too few are left to make one."""
    left = seconds_left()
    if left <= 0.05:
        raise HookError(f"the {budget():g} s budget was spent before the request")
    return left


def deadline_check(what: str) -> None:
    """A HookError once the budget is spent: reading must stop in time for the hook to exit quietly
    before its client gives up on it."""
    if seconds_left() <= 0:
        raise HookError(f"reading the {what} took the whole {budget():g} s budget: not sent")


def tokens(text: str) -> int:
    """The service's estimate: four characters a token."""
    return math.ceil(len(text) / 4)


class PromptCaps(NamedTuple):
    """What one prompt may get: at most ``memories`` memories, within ``tokens`` tokens framing included,
    each at least ``min_similarity`` similar to the prompt."""

    memories: int
    tokens: int
    min_similarity: float


def prompt_caps() -> PromptCaps:
    return PromptCaps(
        memories=int(env_number("REASONINGBANK_PROMPT_MEMORIES", 3, low=1, high=20)),
        tokens=int(env_number("REASONINGBANK_PROMPT_TOKENS", 600, low=100, high=20000)),
        min_similarity=env_number("REASONINGBANK_PROMPT_MIN_SIMILARITY", 0.35, low=0.0, high=1.0),
    )


class RecallCaps(NamedTuple):
    """What one tool-time recall may get: at most ``memories`` memories within ``tokens`` tokens, framing
    included."""

    memories: int
    tokens: int


def recall_caps() -> RecallCaps:
    return RecallCaps(
        memories=int(env_number("REASONINGBANK_RECALL_MEMORIES", 2, low=1, high=20)),
        # the low bound is the service's: the block's framing and one short note
        tokens=int(env_number("REASONINGBANK_RECALL_TOKENS", 500, low=250, high=20000)),
    )


def trace_limit() -> int:
    """The most bytes of a transcript a capture sends (the service takes a little more)."""
    return int(env_number("REASONINGBANK_TRACE_MAX_BYTES", 500_000, low=4096, high=50_000_000))


def capture_min_messages() -> float:
    """A session with fewer conversation messages is not sent: a question and its answer teach nothing."""
    return env_number("REASONINGBANK_CAPTURE_MIN_MESSAGES", 4, low=1, high=1000)
