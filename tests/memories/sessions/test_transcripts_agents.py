"""The Codex CLI, Gemini CLI and Cursor transcript converters (memories/sessions/transcripts_agents.py,
pure) on session files in each client's real format (tests/agent_transcripts.py), reached through the
one registry of formats (``trace_convert``)."""

from __future__ import annotations

import json

import pytest

from memories.sessions.transcripts import TRACE_FORMATS, trace_convert
from tests.agent_transcripts import (
    codex_rollout_text,
    cursor_transcript_text,
    gemini_recording_text,
    gemini_session_text,
)
from tests.claude_code_transcript import SECRET


def codex(**kwargs):
    return trace_convert(codex_rollout_text(session_id="c-1", **kwargs), "codex-rollout-jsonl")


def gemini(**kwargs):
    return trace_convert(gemini_session_text(session_id="g-1", **kwargs), "gemini-cli-json")


def gemini_lines(*extra: dict, **kwargs):
    """The real Gemini CLI 0.61.0 recording, with ``extra`` records appended as the CLI appends them."""
    text = gemini_recording_text(**kwargs) + "".join(json.dumps(record) + "\n" for record in extra)
    return trace_convert(text, "gemini-cli-json")


def recorded(predicate) -> dict:
    """The first message of the real recording that ``predicate`` picks, as a line or a checkpoint has it."""
    for line in gemini_recording_text().splitlines():
        record = json.loads(line)
        for message in [record, *record.get("$set", {}).get("messages", [])]:
            if "id" in message and predicate(message):
                return message
    raise AssertionError("no such message in the recording")


def thanks(message: dict) -> bool:
    return message["type"] == "user" and "Thanks, that works now." in json.dumps(message["content"])


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


def test_a_gemini_cli_061_recording_reads_as_its_conversation_each_turn_once():
    converted = gemini_lines(marker="E2E-gl")
    lines = converted.trace.splitlines()
    assert lines[0] == "[user] Fix the flaky checkout test (E2E-gl): test_checkout_total fails one run in three."
    assert lines.count("[assistant] Running the checkout tests first.") == 1  # written three times, read once
    assert [line.split("]")[0] + "]" for line in lines if line.startswith("[tool ")] == [
        "[tool run_shell_command]",
        "[tool replace]",
        "[tool run_shell_command]",
        "[tool run_shell_command]",
    ]
    assert any(line.startswith("[run_shell_command error] Output: FAILED tests/") for line in lines)  # exit 1
    assert "[run_shell_command ok] Output: 3 passed in 0.41s" in lines
    assert lines[-3:] == [
        "[assistant] The cart fixture was shared between tests; test_checkout_total now builds its own (E2E-gl).",
        "[user] Thanks, that works now.",
        "[assistant] Glad it works.",
    ]
    assert (converted.prompts, converted.tool_calls, converted.outcome) == (2, 4, "success")


def test_what_the_cli_and_the_hooks_added_to_a_gemini_recording_is_not_the_users_words():
    trace = gemini_lines().trace
    assert trace.startswith("[user] Fix the flaky checkout test") and "[user] Thanks, that works now." in trace
    # the environment the CLI sends first, the memories the hooks injected (escaped, inside the user's
    # turn), the model's thoughts and the CLI's framing of a tool's output
    for added in ("session_context", "hook_context", "reasoningbank_memories", "Use make_cart().", "**Planning**"):
        assert added not in trace, added
    assert "untrusted_context" not in trace


def test_a_resumed_gemini_recording_keeps_the_turns_its_checkpoint_left_out():
    # on resume Gemini CLI 0.61 wrote a checkpoint of the history without the first prompt (it opened
    # with the hook's context) and without the tool calls' records: the prompt and the calls stay
    trace = gemini_lines().trace
    assert trace.count("Fix the flaky checkout test") == 1 and trace.count("[tool replace]") == 1


def test_a_gemini_compression_keeps_the_turns_before_it_and_its_summary_once():
    environment = recorded(lambda m: "<session_context>" in json.dumps(m))
    verdict = recorded(thanks)
    summary = "<state_snapshot>\n<overall_goal>Fix the flaky checkout test.</overall_goal>\n</state_snapshot>"
    checkpoint = {
        "$set": {
            "messages": [  # as the CLI writes it: the environment, the summary, its answer, recent copies
                environment,
                {"id": "s-1", "timestamp": "t", "type": "user", "content": [{"text": summary}]},
                {
                    "id": "s-2",
                    "timestamp": "t",
                    "type": "gemini",
                    "content": [{"text": "Got it. Thanks for the additional context!"}],
                },
                {"id": "s-3", "timestamp": "t", "type": "user", "content": verdict["content"]},
            ],
            "lastUpdated": "t",
        }
    }
    later = {"id": "n-1", "timestamp": "t", "type": "user", "content": [{"text": "Now the empty cart."}]}
    trace = gemini_lines(checkpoint, later).trace
    assert trace.startswith("[user] Fix the flaky checkout test")  # the turns before are not lost
    assert trace.count("[user] Thanks, that works now.") == 1  # the checkpoint's copy is not added again
    assert trace.endswith(f"[summary of the conversation before] {summary}\n[user] Now the empty cart.")
    assert "Got it." not in trace


def test_a_gemini_rewind_drops_the_rewound_turn_and_what_followed():
    verdict = recorded(thanks)
    retry = {"id": "r-1", "timestamp": "t", "type": "user", "content": [{"text": "It still fails on CI."}]}
    converted = gemini_lines({"$rewindTo": verdict["id"]}, retry)
    assert "Thanks, that works now." not in converted.trace and "Glad it works." not in converted.trace
    assert converted.trace.splitlines()[-1] == "[user] It still fails on CI." and converted.outcome == "failure"


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
        (
            "gemini-cli-json",
            '{"sessionId": "x", "projectHash": "h"}\nnot json\n{"$set": 7}\n{"$rewindTo": 5}\n'
            '{"id": 3, "type": "user"}\n{"$set": {"messages": [1, {"id": "m", "type": "user", "content": 5}]}}\n',
        ),
        ("cursor-jsonl", '{"role": "user", "message": {"content": 3}}\n{"role": "tool"}\n'),
    ],
)
def test_unknown_or_broken_parts_are_skipped_never_an_error(trace_format, text):
    assert trace_convert(text, trace_format).trace == ""


def test_the_converters_keep_the_secret_for_the_service_to_scrub_around_them():
    # scrubbing is the service's (it scrubs the raw file before and the trace after): a converter that
    # dropped secrets would hide that the raw text held one
    assert SECRET in codex().trace and SECRET in gemini().trace and SECRET in cursor().trace
    assert SECRET in gemini_lines().trace
