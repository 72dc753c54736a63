"""The Codex CLI, Gemini CLI and Cursor transcript converters (memories/sessions/transcripts_agents.py,
pure) on session files in each client's real format (tests/agent_transcripts.py), reached through the
one registry of formats (``trace_convert``)."""

from __future__ import annotations

import pytest

from memories.sessions.transcripts import TRACE_FORMATS, trace_convert
from tests.agent_transcripts import codex_rollout_text, cursor_transcript_text, gemini_session_text
from tests.claude_code_transcript import SECRET


def codex(**kwargs):
    return trace_convert(codex_rollout_text(session_id="c-1", **kwargs), "codex-rollout-jsonl")


def gemini(**kwargs):
    return trace_convert(gemini_session_text(session_id="g-1", **kwargs), "gemini-cli-json")


def cursor(**kwargs):
    return trace_convert(cursor_transcript_text(**kwargs), "cursor-jsonl")


def test_every_client_format_is_in_the_one_registry():
    assert {"codex-rollout-jsonl", "gemini-cli-json", "cursor-jsonl"} <= set(TRACE_FORMATS)


def test_a_codex_rollout_keeps_the_users_words_the_answers_and_each_shell_call_with_its_exit():
    converted = codex(marker="E2E-cx")
    lines = converted.trace.splitlines()
    assert lines[0] == "[user] Fix the flaky checkout test (E2E-cx): test_checkout_total fails one run in three."
    assert "[assistant] Running the checkout tests first." in lines
    assert any(
        line.startswith('[tool shell] {"command": ["bash", "-lc", "pytest tests/test_checkout.py -q"]')
        for line in lines
    )
    assert any(line.startswith("[shell error] FAILED tests/test_checkout.py::test_checkout_total") for line in lines)
    assert any(line.startswith("[tool apply_patch] ") and "make_cart()" in line for line in lines)
    assert "[shell ok] 3 passed in 0.41s" in lines
    assert lines[-1] == "[user] Thanks, that works now."
    # Codex's own messages, its reasoning and the UI's copies of each message are not the conversation
    assert "environment_context" not in converted.trace and "gAAAAB" not in converted.trace
    assert converted.trace.count("Running the checkout tests first.") == 1
    assert (converted.prompts, converted.tool_calls) == (2, 4)


def test_a_gemini_recording_keeps_prompts_answers_and_tool_calls_and_drops_info_lines():
    converted = gemini(marker="E2E-gm")
    lines = converted.trace.splitlines()
    assert lines[0] == "[user] Fix the flaky checkout test (E2E-gm): test_checkout_total fails one run in three."
    assert any(
        line.startswith("[tool run_shell_command] ") and "pytest tests/test_checkout.py -q" in line for line in lines
    )
    assert any(line.startswith("[run_shell_command error] Command: pytest") for line in lines)
    assert any(line.startswith("[tool replace] ") and "make_cart()" in line for line in lines)
    assert "Request cancelled." not in converted.trace
    assert lines[-1] == "[user] Thanks, that works now."


def test_a_cursor_transcript_unwraps_the_users_query_and_keeps_tool_calls_without_results():
    converted = cursor(marker="E2E-cu")
    lines = converted.trace.splitlines()
    assert lines[0] == "[user] Fix the flaky checkout test (E2E-cu): test_checkout_total fails one run in three."
    assert '[tool Shell] {"command": "pytest tests/test_checkout.py -q"}' in lines
    assert "<user_query>" not in converted.trace
    assert lines[-1] == "[user] Thanks, that works now."


@pytest.mark.parametrize("convert", [codex, gemini, cursor])
def test_the_users_plain_verdict_decides_the_outcome(convert):
    assert convert().outcome == "success"
    assert convert(verdict="It still fails on CI.").outcome == "failure"


@pytest.mark.parametrize("convert", [codex, gemini])
def test_without_a_verdict_the_last_test_run_decides(convert):
    converted = convert(
        verdict="Now add a test for the empty cart and explain what you changed in the fixture, please."
    )
    assert (converted.outcome, converted.outcome_reason) == ("success", "the last test run passed")


def test_a_cursor_session_without_a_verdict_is_unknown_since_cursor_keeps_no_test_output():
    converted = cursor(verdict="Now add a test for the empty cart and explain what you changed in the fixture, please.")
    assert converted.outcome == "unknown"


@pytest.mark.parametrize(
    ("trace_format", "text"),
    [
        ("codex-rollout-jsonl", '{"type": "response_item", "payload": {"type": "mystery"}}\nnot json\n[1, 2]\n'),
        (
            "gemini-cli-json",
            '{"sessionId": "x", "messages": [{"type": "user"}, 7, {"type": "gemini", "toolCalls": "?"}]}',
        ),
        ("gemini-cli-json", '{"sessionId": "x", "messages": [ cut mid-file'),
        ("cursor-jsonl", '{"role": "user", "message": {"content": 3}}\n{"role": "tool"}\n'),
    ],
)
def test_unknown_or_broken_parts_are_skipped_never_an_error(trace_format, text):
    assert trace_convert(text, trace_format).trace == ""


def test_the_converters_keep_the_secret_for_the_service_to_scrub_around_them():
    # scrubbing is the service's (it scrubs the raw file before and the trace after): a converter that
    # dropped secrets would hide that the raw text held one
    assert SECRET in codex().trace and SECRET in gemini().trace and SECRET in cursor().trace
