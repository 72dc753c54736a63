"""Which part of a session handed in again is new (memories/sessions/continuation.py): the trace grown at
its end, a hook's cut capture of a long session, the same capture again or an older one arriving late, and
a trace that continues nothing. Pure: no database."""

from __future__ import annotations

import pytest

from memories.sessions.continuation import (
    ANCHOR_CHARS,
    DROPPED_MARK,
    TraceMismatch,
    distilled_trim,
    pending_start,
    trace_continue,
)

KEPT = "\n".join(f"[user] step {n}: " + "x" * 80 for n in range(40))
LATER = "\n[user] step 40: the resumed part\n[assistant] done"


def test_a_trace_grown_at_its_end_continues_with_what_was_added() -> None:
    assert trace_continue(KEPT, KEPT + LATER) == LATER


def test_the_same_trace_again_holds_nothing_new() -> None:
    assert trace_continue(KEPT, KEPT) == ""


def test_a_cut_capture_continues_after_the_end_of_what_is_kept() -> None:
    lines = (KEPT + LATER).split("\n")
    cut = "\n".join(lines[:1] + lines[25:])  # the first prompt, then the end: the middle left out
    assert trace_continue(KEPT, cut) == LATER


def test_an_ambiguous_end_is_taken_at_its_first_place_so_nothing_is_skipped() -> None:
    kept = "[user] go\n" + "[tool Bash] make\n[Bash ok] done\n" * 40
    incoming = kept + "[user] again\n" + "[tool Bash] make\n[Bash ok] done\n" * 40
    tail = trace_continue(kept, incoming)
    assert incoming.endswith(tail) and "[user] again" in tail  # distilled again rather than lost


def test_an_earlier_capture_arriving_late_holds_nothing_new() -> None:
    lines = KEPT.split("\n")
    assert trace_continue(KEPT, "\n".join(lines[:20])) == ""
    assert trace_continue(KEPT, "\n".join(lines[:1] + lines[10:30])) == ""  # an older cut capture


def test_a_trace_of_another_conversation_is_a_mismatch() -> None:
    with pytest.raises(TraceMismatch):
        trace_continue(KEPT, "[user] something else entirely\n[assistant] ok")
    with pytest.raises(TraceMismatch):
        trace_continue(KEPT, KEPT[:-ANCHOR_CHARS] + "[user] the end rewritten\n" + LATER)


def test_the_pending_part_starts_after_the_distilled_one_or_at_the_start_of_a_line_that_grew() -> None:
    trace = "[user] one\n[assistant] two\n[user] three"
    assert pending_start(trace, 0) == 0
    assert trace[pending_start(trace, len("[user] one\n[assistant] two")) :] == "[user] three"
    assert trace[pending_start(trace, len("[user] one\n[assistant] tw")) :] == "[assistant] two\n[user] three"
    assert pending_start(trace, len(trace)) == len(trace)


def test_trimming_keeps_the_end_of_the_distilled_part_and_all_that_is_pending() -> None:
    trace = KEPT + LATER
    trimmed, upto = distilled_trim(trace, len(KEPT), keep=1000)
    assert trimmed.startswith(DROPPED_MARK) and trimmed.endswith(KEPT[-900:] + LATER)
    assert trimmed[upto:] == LATER and upto - len(DROPPED_MARK) <= 1000
    assert trimmed[len(DROPPED_MARK) :].startswith("[user] step")  # cut at a line's start
    assert trace_continue(trimmed, trace + "\n[user] more") == "\n[user] more"  # found by its end
    assert distilled_trim(trace, 500, keep=1000) == (trace, 500)
