"""A session handed in again after it was distilled (docs/memory-model.md#sessions-that-continue): which
part of the new trace is new, where distillation picks up, and how much of the distilled part is kept.

A client's transcript grows by append (Claude Code's session file after ``--resume`` / ``--continue``,
Codex's rollout, a hook's every capture), and its conversion is line by line, so the trace of a later
capture begins with the trace of an earlier one — unless the hook cut the middle of a long session out,
keeping its first prompt and as much of its end as fits. So the new part is found by the end of what is
kept: it follows the kept trace when the new trace begins with it, else the first place where the longest
end of the kept trace that the new one holds occurs (the first, so that an ambiguous match distils a turn
again rather than skips one). A trace in which neither is found, and that is no older view of the kept
part either, is no continuation: ``TraceMismatch``, for the caller to refuse — never guessed at.

Pure: no Django.
"""

from __future__ import annotations

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

# the end of the kept trace looked for in a new one: at most about its last one to three entries, at
# least a line or two — long enough not to occur by chance, short enough to survive a hook's cut close to it
ANCHOR_CHARS, ANCHOR_MIN = 600, 160
DROPPED_MARK = "[… the earlier part of this session, distilled before, is no longer kept …]\n"


class TraceMismatch(ValueError):
    """The new trace neither continues the kept one nor is an older view of it."""


def trace_continue(kept: str, incoming: str) -> str:
    """What ``incoming`` holds after ``kept``: ``""`` when it holds nothing more (the same submission
    again, or an earlier capture arriving late). Raises ``TraceMismatch`` when it does not continue it."""
    if incoming.startswith(kept):
        return incoming[len(kept) :]
    end = _shared_end(kept, incoming)
    if end is not None:
        return incoming[end:]
    body = incoming.split("\n", 1)[-1]  # a cut capture: its first prompt, then a stretch of the conversation
    if incoming in kept or (body.strip() and body in kept):
        return ""
    raise TraceMismatch("the trace does not continue the one distilled before")


def _shared_end(kept: str, incoming: str) -> int | None:
    """Where, in ``incoming``, the longest end of ``kept`` it holds (``ANCHOR_MIN`` to ``ANCHOR_CHARS``
    characters) first occurs, up to its last character; None when not even the shortest does. The longest,
    because the entry where a hook cut a capture can read differently (a tool's result whose call was cut
    off is named ``tool``): a shorter end still matches past it. Any end of a matching end matches too, so
    the length is searched by halving."""
    low, high = min(ANCHOR_MIN, len(kept)), min(ANCHOR_CHARS, len(kept))
    if kept[-low:] not in incoming:
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if kept[-middle:] in incoming:
            low = middle
        else:
            high = middle - 1
    anchor = kept[-low:]
    return incoming.find(anchor) + len(anchor)


def pending_start(trace: str, distilled_upto: int) -> int:
    """Where the part of ``trace`` still to distil begins for the prompt: after ``distilled_upto``, or at
    the start of the line it falls in when that line was cut (an entry that grew is read whole)."""
    if distilled_upto <= 0:
        return 0
    if distilled_upto >= len(trace) or trace[distilled_upto] == "\n":
        return min(distilled_upto + 1, len(trace))
    return trace.rfind("\n", 0, distilled_upto) + 1


def distilled_trim(trace: str, distilled_upto: int, *, keep: int) -> tuple[str, int]:
    """``trace`` with its distilled part cut to its last ``keep`` characters or so (from a line's start,
    behind a mark saying so), and the distilled offset in the result. What is not distilled yet
    is never cut, and a later capture is found by the end of the distilled part, which stays."""
    if distilled_upto <= keep:
        return trace, distilled_upto
    cut = distilled_upto - keep
    line_end = trace.find("\n", cut, distilled_upto)
    cut = line_end + 1 if line_end >= 0 else cut
    return DROPPED_MARK + trace[cut:], len(DROPPED_MARK) + distilled_upto - cut


def redaction_marks(text: str) -> int:
    """How many ``[REDACTED:…]`` marks ``text`` holds (reasoningbank.scrubbing's)."""
    return text.count("[REDACTED:")
