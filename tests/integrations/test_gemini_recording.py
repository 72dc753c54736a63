"""What the Gemini CLI hook (integrations/gemini-cli/reasoningbank_gemini.py) makes of a chat recording:
the JSON Lines Gemini CLI writes since 0.39 (the real 0.61.0 recording, tests/agent_transcripts.py) and
the single object it wrote before, read within the hook's bounds and sent as the one object every
release of the service reads. The reading is called in the hook's own process (tests/hook_modules.py),
and the hook is run once as Gemini CLI 0.61.0 ran it, with the AfterAgent input that CLI gave, against
a stand-in for the service (tests/integrations/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memories.sessions.transcripts import trace_convert
from tests.agent_hook_events import gemini_event
from tests.agent_transcripts import GEMINI_RECORDING, gemini_recording_text, gemini_session_text
from tests.hook_modules import GEMINI_HOOK, gemini_recording_read


@pytest.fixture
def read(monkeypatch):
    """The hook's reading of a recording file within ``limit`` bytes: (the object sent, the count)."""
    monkeypatch.setenv("REASONINGBANK_TIMEOUT", "30")  # a slow test machine is not the hook's deadline

    def reading(path: Path, limit: int = 500_000) -> tuple[dict[str, Any], int]:
        trace, count = gemini_recording_read(path, limit)
        assert len(trace.encode()) <= limit
        return json.loads(trace), count

    return reading


def test_the_061_recording_is_sent_as_one_object_of_its_conversation_each_message_as_it_ended(read):
    sent, count = read(GEMINI_RECORDING)
    assert sent["sessionId"] == "45731ba3-3159-4299-b046-efb1103ef4b2"  # from the metadata line
    assert [m["type"] for m in sent["messages"]] == ["user"] + ["gemini"] * 5 + ["user", "gemini"]
    assert count == 8
    calls = [call for m in sent["messages"] for call in m.get("toolCalls", [])]
    assert [call["name"] for call in calls] == [
        "run_shell_command",
        "replace",
        "run_shell_command",
        "run_shell_command",
    ]
    assert all(call["result"][0]["functionResponse"]["response"]["output"] for call in calls)  # done, with output
    text = json.dumps(sent)
    # bulk and the CLI's own: thoughts, token counts, the environment message, the tool outputs' user
    # copies, the parts a hook added whole
    assert '"thoughts"' not in text and '"tokens"' not in text and "session_context" not in text
    assert not any("functionResponse" in json.dumps(m.get("content")) for m in sent["messages"] if m["type"] == "user")
    assert "Thanks, that works now." in json.dumps(sent["messages"][-2]) and "hook_context" not in json.dumps(
        sent["messages"][-2]
    )


def test_the_service_reads_what_the_hook_sent_as_it_reads_the_recording_itself(read):
    sent, _ = read(GEMINI_RECORDING)
    from_hook = trace_convert(json.dumps(sent), "gemini-cli-json")
    from_file = trace_convert(GEMINI_RECORDING.read_text(), "gemini-cli-json")
    assert from_hook.trace == from_file.trace and from_hook.trace.startswith("[user] Fix the flaky checkout test")
    assert (from_hook.outcome, from_hook.prompts, from_hook.tool_calls) == ("success", 2, 4)


def test_a_long_recording_is_cut_to_its_task_and_the_end_that_fits(read, tmp_path):
    lines = gemini_recording_text().splitlines()
    filler = [
        json.dumps({"id": f"f{i}", "timestamp": "t", "type": "gemini", "content": f"step {i} " + "x" * 2000})
        for i in range(100)
    ]
    path = tmp_path / "session-long.jsonl"
    path.write_text("\n".join(lines[:4] + filler + lines[4:]) + "\n")  # the filler right after the task
    sent, count = read(path, limit=20_000)
    words = [json.dumps(m["content"]) for m in sent["messages"]]
    assert "Fix the flaky checkout test" in words[0] and "Glad it works." in words[-1]
    assert 2 < len(sent["messages"]) < count == 108


def test_a_recording_longer_than_the_read_bound_is_replayed_from_its_two_ends(read, tmp_path):
    lines = gemini_recording_text().splitlines()
    filler = [
        json.dumps({"id": f"f{i}", "timestamp": "t", "type": "gemini", "content": "y" * 4000}) for i in range(200)
    ]
    path = tmp_path / "session-huge.jsonl"
    path.write_text("\n".join(lines[:4] + filler + lines[4:]) + "\n")
    assert path.stat().st_size > 256 * 1024 + 4 * 4096  # more than the head and the tail the hook reads
    sent, _ = read(path, limit=4096)
    assert sent["sessionId"] == "45731ba3-3159-4299-b046-efb1103ef4b2"
    assert "Fix the flaky checkout test" in json.dumps(sent["messages"][0])  # the task, from the head
    assert sent["messages"][-1]["content"] == "Glad it works."  # the end, from the tail


def test_the_old_single_object_format_is_still_read(read, tmp_path):
    path = tmp_path / "session-old.json"
    path.write_text(gemini_session_text(session_id="g-old", marker="E2E-old"))
    sent, count = read(path)
    assert sent["sessionId"] == "g-old" and count == 5  # the info line is not the conversation
    assert [m["type"] for m in sent["messages"]] == ["user", "gemini", "gemini", "gemini", "user"]


def test_a_recording_with_no_conversation_yet_counts_none(read, tmp_path):
    path = tmp_path / "session-new.jsonl"
    path.write_text("\n".join(gemini_recording_text().splitlines()[:2]) + "\n")  # metadata, environment
    sent, count = read(path)
    assert (sent["messages"], count) == ([], 0)


def test_gemini_cli_061s_after_agent_event_hands_in_its_recording(stand, tmp_path):
    """The hook run as Gemini CLI 0.61.0 runs it, with the AfterAgent input it gave (captured from the
    real CLI: the prompt carries the hooks' context), the recording at ``transcript_path``."""
    state, url = stand
    path = tmp_path / "session-2026-12-02T08-55-45731ba3.jsonl"
    path.write_text(gemini_recording_text(session_id="45731ba3-3159-4299-b046-efb1103ef4b2", marker="E2E-real"))
    event = gemini_event(
        "AfterAgent",
        session_id="45731ba3-3159-4299-b046-efb1103ef4b2",
        transcript_path=str(path),
        timestamp="2026-12-02T08:55:15.714Z",
        prompt="Thanks, that works now.",
        prompt_response="Glad it works.",
        stop_hook_active=False,
    )
    env = {"PATH": os.environ.get("PATH", ""), "REASONINGBANK_URL": url, "REASONINGBANK_TOKEN": "rb_test"}
    done = subprocess.run(
        [sys.executable, str(GEMINI_HOOK), "capture"],
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    ((route, body, _),) = state.wait_for(1)  # the detached sender posts what the hook queued
    assert route == "/api/v1/sessions" and (body["trace_format"], body["partial"]) == ("gemini-cli-json", True)
    converted = trace_convert(body["trace"], "gemini-cli-json")
    assert converted.trace.startswith("[user] Fix the flaky checkout test (E2E-real)")
    assert converted.trace.endswith("[user] Thanks, that works now.\n[assistant] Glad it works.")
