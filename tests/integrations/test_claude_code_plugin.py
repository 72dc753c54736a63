"""The Claude Code plugin as files (integrations/claude-code and the marketplace entry at the repository's
root, in the layout Claude Code's plugin reference prescribes) and its hook script where no service is
needed: a service out of reach, no token, a session too short to send, a transcript longer than the limit.
The hooks against the live service: tests/e2e/test_claude_code_plugin.py."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.claude_code_transcript import transcript_records, transcript_text
from tests.hook_modules import transcript_read
from tests.hook_state import hook_env, queue_files
from tests.integrations.conftest import PROMPT_BLOCK

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "integrations" / "claude-code"
HOOK = PLUGIN / "hooks" / "reasoningbank_hook.py"
# the hook events Claude Code documents (hooks reference); the plugin uses eight of them
EVENTS = {
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
}
# the sources of a SessionStart (the hook input schema of Claude Code 2.1.332)
SESSION_START_SOURCES = {"startup", "resume", "clear", "compact", "fork"}


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the socket is: nothing listens there


def run(action: str, event: dict[str, Any], **env: str) -> subprocess.CompletedProcess[str]:
    environment = hook_env(**env)
    return subprocess.run(
        [sys.executable, str(HOOK), action],
        input=json.dumps(event),
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_marketplace_entry_points_at_the_plugin_directory():
    market = load(REPO / ".claude-plugin" / "marketplace.json")
    assert market["name"] == "reasoningbank" and market["owner"]["name"]
    (entry,) = market["plugins"]
    assert entry["name"] == "reasoningbank" and entry["source"] == "./integrations/claude-code"
    manifest = load(REPO / entry["source"] / ".claude-plugin" / "plugin.json")
    assert manifest["name"] == entry["name"] and manifest["version"] == entry["version"]


def test_every_hook_runs_the_plugins_script_with_a_known_action_and_a_timeout_above_its_budget():
    config = load(PLUGIN / "hooks" / "hooks.json")["hooks"]
    assert set(config) == {
        "SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd", "PreToolUse", "PostToolUse",
        "PostToolUseFailure",
    } <= EVENTS  # fmt: skip
    for event, groups in config.items():
        for group in groups:
            for hook in group["hooks"]:
                assert hook["type"] == "command"
                assert hook["command"].startswith('python3 "${CLAUDE_PLUGIN_ROOT}/hooks/reasoningbank_hook.py" ')
                action = hook["command"].rsplit(" ", 1)[1]
                expected = {"SessionStart": "session-start", "UserPromptSubmit": "prompt"}.get(event, "capture")
                expected = "tool" if "ToolUse" in event else expected
                assert action == expected and hook["timeout"] > 2, (event, hook)


def test_the_session_start_hook_fires_on_startup_clear_and_compact_never_on_a_resume_or_a_fork():
    (group,) = load(PLUGIN / "hooks" / "hooks.json")["hooks"]["SessionStart"]
    # Claude Code takes a matcher of plain names joined by "|" as that list of names, each matched whole
    assert re.fullmatch(r"[a-zA-Z0-9_|]+", group["matcher"])
    assert set(group["matcher"].split("|")) == {"startup", "clear", "compact"} < SESSION_START_SOURCES


@pytest.mark.parametrize("source", ["resume", "fork"])
def test_a_session_start_hook_run_on_a_resume_or_a_fork_anyway_injects_nothing_and_asks_nothing(source, stand):
    state, url = stand  # registered by hand without the matcher, the hook still keeps to one block a context
    event = {"session_id": "s", "hook_event_name": "SessionStart", "source": source, "cwd": "/home/dev/shop"}
    done = run("session-start", event, REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_x")
    assert (done.returncode, done.stdout, done.stderr, state.requests) == (0, "", "", [])
    started = run("session-start", {**event, "source": "startup"}, REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_x")
    assert "additionalContext" in json.loads(started.stdout)["hookSpecificOutput"]


def test_the_mcp_server_entry_reads_the_url_and_token_from_the_environment():
    server = load(PLUGIN / ".mcp.json")["mcpServers"]["reasoningbank"]
    assert server == {
        "type": "http",
        "url": "${REASONINGBANK_URL:-http://127.0.0.1:8000}/mcp",
        "headers": {"Authorization": "Bearer ${REASONINGBANK_TOKEN}"},
    }


@pytest.mark.parametrize("action", ["session-start", "prompt"])
def test_with_the_service_out_of_reach_a_hook_exits_0_printing_one_line_on_stderr(action, tmp_path):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(transcript_text(session_id="s"))
    event = {
        "session_id": "s",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "hook_event_name": {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}.get(action, "Stop"),
        "prompt": "Why is the checkout test flaky?",
    }
    done = run(action, event, REASONINGBANK_URL=f"http://127.0.0.1:{closed_port()}", REASONINGBANK_TOKEN="rb_x")
    assert done.returncode == 0 and "could not reach" in json.loads(done.stdout)["systemMessage"]
    assert len(done.stderr.strip().splitlines()) == 1 and "could not reach" in done.stderr


def test_with_the_service_out_of_reach_a_capture_is_queued_and_the_hook_exits_0_without_a_word(tmp_path, state_dir):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(transcript_text(session_id="s"))
    event = {"session_id": "s", "transcript_path": str(transcript), "cwd": str(tmp_path), "hook_event_name": "Stop"}
    done = run("capture", event, REASONINGBANK_URL=f"http://127.0.0.1:{closed_port()}", REASONINGBANK_TOKEN="rb_x")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (queued,) = queue_files(state_dir)
    assert json.loads(queued.read_text())["body"]["trace_format"] == "claude-code-jsonl"


def test_without_a_token_a_hook_says_so_and_exits_0(tmp_path, state_dir):
    done = run("prompt", {"session_id": "s", "prompt": "Why is the checkout test flaky?"})
    assert done.returncode == 0 and "REASONINGBANK_TOKEN" in done.stderr
    assert "REASONINGBANK_TOKEN is not set" in json.loads(done.stdout)["systemMessage"]
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(transcript_text(session_id="s"))
    end = {"session_id": "s", "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
    captured = run("capture", end)
    assert "REASONINGBANK_TOKEN" in captured.stderr and queue_files(state_dir) == []  # nothing could send it


def test_a_broken_event_or_an_unknown_action_never_fails_the_session():
    for action, stdin in (("prompt", "not json"), ("capture", "[1, 2]"), ("bogus", "{}")):
        done = subprocess.run(
            [sys.executable, str(HOOK), action],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
            env=hook_env(REASONINGBANK_TOKEN="rb_x"),
        )
        assert (done.returncode, done.stdout) == (0, "") and done.stderr.count("\n") == 1, (action, done)


def test_a_session_shorter_than_the_threshold_is_not_sent(tmp_path, state_dir):
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in transcript_records(session_id="s")[:4]))
    event = {"session_id": "s", "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
    done = run("capture", event, REASONINGBANK_URL=f"http://127.0.0.1:{closed_port()}", REASONINGBANK_TOKEN="rb_x")
    assert (done.returncode, done.stdout, done.stderr, queue_files(state_dir)) == (0, "", "", [])  # nothing queued


def test_a_long_transcript_is_sent_as_its_first_prompt_and_the_tail_that_fits(tmp_path):
    records = transcript_records(session_id="s")
    padding = [
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": f"step {n} " + "x" * 900}]},
        }
        for n in range(3000)
    ]  # about 3 MB: more than the head and 4 × the limit the hook reads
    lines = [records[0], *records[1:4], *padding, *records[4:]]
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in lines))

    trace, messages = transcript_read("claude-code", transcript, 200_000)
    kept = trace.splitlines()

    assert sum(len(line.encode()) + 1 for line in kept) <= 200_000
    assert "The checkout test is flaky again" in kept[0]  # the task
    assert "Thanks, that works now." in kept[-2]  # the end
    assert all('"toolUseResult"' not in line and '"summary"' not in line for line in kept)
    assert messages > len(kept)


# --- the per-prompt recall: the service frames the block (docs/security/memory-poisoning.md#framing) --------


def prompt_run(url: str, **env: str) -> subprocess.CompletedProcess[str]:
    event = {"session_id": "s-1", "hook_event_name": "UserPromptSubmit", "prompt": "Why is the checkout test flaky?"}
    return run("prompt", event, REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_x", **env)


def test_the_prompt_hook_asks_the_service_for_an_injection_and_hands_on_its_block_as_it_is(stand):
    state, url = stand
    done = prompt_run(url, REASONINGBANK_PROMPT_TOKENS="450", REASONINGBANK_PROMPT_MEMORIES="2")

    assert done.stderr == ""
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer == {"hookEventName": "UserPromptSubmit", "additionalContext": PROMPT_BLOCK}
    ((path, body, _),) = state.requests
    assert path == "/api/v1/memories/search"
    assert body["inject"] is True and body["token_budget"] == 450 and body["limit"] == 2
    assert (body["session_id"], body["exclude_seen"], body["include_summaries"]) == ("s-1", True, False)


def test_the_prompt_hook_never_builds_a_block_of_its_own_from_the_results(stand):
    state, url = stand
    state.injection_block = ""  # nothing qualified for injection, though the results list a memory
    done = prompt_run(url)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_block_over_the_cap_is_not_injected_and_the_hook_says_why(stand):
    state, url = stand
    state.injection_block = "<reasoningbank_memories>\n" + "x" * 2000 + "\n</reasoningbank_memories>"
    done = prompt_run(url, REASONINGBANK_PROMPT_TOKENS="200")
    assert (done.returncode, done.stdout) == (0, "")
    assert "over REASONINGBANK_PROMPT_TOKENS=200" in done.stderr and len(done.stderr.splitlines()) == 1
