"""The transcript converter and the outcome it infers (memories/sessions/transcripts.py, pure), on a
Claude Code session file in the real format (tests/claude_code_transcript.py)."""

from __future__ import annotations

import json

import pytest

from memories.sessions.transcripts import (
    OUTPUT_MAX,
    TRACE_FORMATS,
    claude_code_convert,
    cut,
    trace_convert,
)
from tests.claude_code_transcript import SIDE_NOTE, transcript_records, transcript_text


def converted(**kwargs):
    return claude_code_convert(transcript_text(session_id="s-1", **kwargs))


def test_the_trace_keeps_prompts_assistant_text_and_tool_calls_with_their_outcomes():
    trace = converted(marker="E2E-abc").trace
    lines = trace.splitlines()
    assert "[user] The checkout test is flaky again (E2E-abc). Please find out why and fix it." in lines
    assert "[assistant] I'll run the checkout tests to see the failure." in lines
    assert (
        '[tool Bash] {"command": "pytest tests/test_checkout.py -q", "description": "Run the checkout tests"}' in lines
    )
    assert any(line.startswith("[Bash error] F.") for line in lines)
    assert any(line.startswith("[tool Edit] ") and "copy.deepcopy(CART)" in line for line in lines)
    assert "[Bash ok] ....................\n20 passed in 1.2s" in trace
    assert "[user] Thanks, that works now." in lines


def test_bookkeeping_thinking_and_command_markup_are_left_out():
    trace = converted().trace
    for absent in (
        "Fix flaky checkout test",
        "local-command-caveat",
        "Run the suite first",
        "turn_duration",
        "file-history-snapshot",
        "signature",
    ):
        assert absent not in trace


def test_a_subagents_lines_are_marked_as_sidechain():
    result = converted()
    sidechain = [line for line in result.trace.splitlines() if line.startswith("[sidechain] ")]
    assert sidechain == [
        "[sidechain] [user] Which tests mutate the cart fixture?",
        '[sidechain] [tool Grep] {"pattern": "cart_fixture", "path": "tests"}',
        "[sidechain] [Grep ok] tests/test_checkout.py",  # its output goes on over the next lines
        f"[sidechain] [assistant] Found it: {SIDE_NOTE}.",
    ]
    assert f"[Task ok] Found it: {SIDE_NOTE}." in result.trace.splitlines()  # the main line's answer, unmarked
    assert result.sidechain_lines == 4
    assert result.prompts == 2  # the subagent's prompt is not the user's


def test_a_long_output_keeps_its_head_and_tail():
    trace = converted().trace
    failing = next(line for line in trace.split("\n[") if line.startswith("Bash error]"))
    assert "characters cut" in failing
    assert failing.endswith("1 failed, 1 passed in 0.4s")
    assert len(failing) < OUTPUT_MAX + 100


def test_the_trace_is_much_shorter_than_the_session_file():
    text = transcript_text(session_id="s-1")
    assert len(claude_code_convert(text).trace) < len(text) / 3


def test_a_tail_cut_mid_line_and_unknown_lines_are_skipped():
    text = transcript_text(session_id="s-1")
    tail = text[len(text) // 2 :]  # starts inside a line
    result = claude_code_convert('{"type": "brand-new-kind", "x": 1}\nnot json\n' + tail)
    assert result.trace.startswith("[")
    assert "[user] Thanks, that works now." in result.trace


def test_the_secret_passes_through_the_converter_unchanged_for_the_service_to_scrub():
    # the converter does not scrub (the service does, before and after): what it keeps is the text as sent
    from tests.claude_code_transcript import SECRET

    assert SECRET in converted().trace


@pytest.mark.parametrize(
    ("kwargs", "outcome"),
    [
        ({"verdict": "Thanks, that works now."}, "success"),
        ({"verdict": "It still fails on CI, this doesn't work."}, "failure"),
        ({"verdict": "", "final_tests_pass": True}, "success"),
        ({"verdict": "", "final_tests_pass": False}, "failure"),
        ({"verdict": "Can you also rename the helper?", "final_tests_pass": True}, "success"),
        ({"verdict": "ok", "final_tests_pass": False}, "failure"),
    ],
)
def test_the_outcome_is_the_users_verdict_else_the_last_test_run(kwargs, outcome):
    assert converted(**kwargs).outcome == outcome


def test_a_thanks_that_starts_more_work_is_no_verdict():
    records = transcript_records(session_id="s-1", verdict="Thanks! Now also add a test for the promo code.")
    records.append(
        {
            "type": "assistant",
            "isSidechain": False,
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_99",
                        "name": "Write",
                        "input": {"file_path": "t.py", "content": "x"},
                    }
                ],
            },
        }
    )
    result = claude_code_convert("\n".join(json.dumps(r) for r in records))
    assert result.outcome == "unknown"
    assert result.outcome_reason == "files were edited after the last test run"


def test_no_verdict_and_no_tests_is_unknown():
    text = "\n".join(
        json.dumps(r)
        for r in [
            {"type": "user", "message": {"role": "user", "content": "Explain the checkout module."}},
            {
                "type": "assistant",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "It sums carts."}]},
            },
        ]
    )
    assert claude_code_convert(text).outcome == "unknown"


def test_a_plain_trace_is_kept_as_it_is_and_unknown():
    result = trace_convert("user: hi\nagent: hello", "plain")
    assert (result.trace, result.outcome) == ("user: hi\nagent: hello", "unknown")
    assert TRACE_FORMATS[:2] == ("plain", "claude-code-jsonl")
    with pytest.raises(ValueError, match="unknown trace format"):
        trace_convert("x", "cursor")


def test_cut_keeps_short_texts_and_says_how_much_it_cut():
    assert cut("short", 10) == "short"
    assert cut("a" * 100 + "END", 30) == "a" * 20 + " … [73 characters cut] … " + "a" * 7 + "END"
