"""The Codex CLI, Gemini CLI and Cursor hooks (integrations/codex, integrations/gemini-cli,
integrations/cursor), each run as its client runs it — a process given the event's documented JSON on
stdin — against a stand-in for the service that records what it was sent and answers as the service
does, or answers 401, or is not there at all. A capture is queued and posted by the detached sender the
hook starts (tests/integrations/test_hook_hand_off.py), so what it sends is waited for. Against the live
service: tests/e2e/test_agent_hooks.py."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent_hook_events import codex_event, cursor_event, gemini_event
from tests.agent_transcripts import codex_rollout_text, cursor_transcript_text, gemini_session_text
from tests.hook_state import hook_env, queue_empty_wait, queue_files

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {
    "codex": REPO / "integrations" / "codex" / "reasoningbank_codex.py",
    "gemini": REPO / "integrations" / "gemini-cli" / "reasoningbank_gemini.py",
    "cursor": REPO / "integrations" / "cursor" / "reasoningbank_cursor.py",
}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(
    client: str, action: str, event: dict[str, Any], url: str, token: str = "rb_test"
) -> subprocess.CompletedProcess[str]:
    env = hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN=token)
    return subprocess.run(
        [sys.executable, str(SCRIPTS[client]), action],
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


CASES = [
    ("codex", "session-start", codex_event("SessionStart", source="startup")),
    ("codex", "prompt", codex_event("UserPromptSubmit", prompt="why is the checkout test flaky?")),
    ("codex", "capture", codex_event("Stop", stop_hook_active=False, last_assistant_message="Done.")),
    ("gemini", "session-start", gemini_event("SessionStart", source="startup")),
    ("gemini", "prompt", gemini_event("BeforeAgent", prompt="why is the checkout test flaky?")),
    ("gemini", "capture", gemini_event("AfterAgent", prompt="fix it", prompt_response="Done.", stop_hook_active=False)),
    (
        "cursor",
        "session-start",
        cursor_event("sessionStart", session_id="c0ffee00-cursor", is_background_agent=False, composer_mode="agent"),
    ),
    ("cursor", "capture", cursor_event("stop", status="completed", loop_count=0)),
]


def with_transcript(client: str, event: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    if event["hook_event_name"] not in ("Stop", "AfterAgent", "SessionEnd", "stop", "sessionEnd"):
        return event
    path = tmp_path / "session"
    text = {
        "codex": lambda: codex_rollout_text(session_id=event.get("session_id", "s")),
        "gemini": lambda: gemini_session_text(session_id=event.get("session_id", "s")),
        "cursor": cursor_transcript_text,
    }[client]()
    path.write_text(text)
    return {**event, "transcript_path": str(path)}


ASKING = [case for case in CASES if case[1] != "capture"]
CAPTURING = [case for case in CASES if case[1] == "capture"]


def told(done: subprocess.CompletedProcess[str]) -> str:
    """The systemMessage the hook printed (the user is told memory is off), or "" when it printed none."""
    return str(json.loads(done.stdout)["systemMessage"]) if done.stdout.strip() else ""


@pytest.mark.parametrize(("client", "action", "event"), ASKING)
def test_with_the_service_out_of_reach_a_hook_exits_0_with_one_line_on_stderr(client, action, event):
    done = run(client, action, event, f"http://127.0.0.1:{closed_port()}")
    assert done.returncode == 0
    assert len(done.stderr.splitlines()) == 1 and "could not reach" in done.stderr
    # Codex and Gemini CLI show a systemMessage (tests/integrations/test_hook_notice.py); Cursor has none
    assert ("could not reach" in told(done)) == (client != "cursor")


@pytest.mark.parametrize(("client", "action", "event"), ASKING)
def test_with_a_wrong_token_a_hook_exits_0_with_one_line_on_stderr(client, action, event, stand):
    state, url = stand
    state.status = 401
    done = run(client, action, event, url, token="rb_wrong")
    assert done.returncode == 0
    assert len(done.stderr.splitlines()) == 1 and "answered 401" in done.stderr
    assert ("refused the token" in told(done)) == (client != "cursor")
    assert state.requests and state.requests[0][2] == "Bearer rb_wrong"


@pytest.mark.parametrize(("client", "action", "event"), CAPTURING)
def test_with_the_service_out_of_reach_a_capture_is_queued_without_a_word(client, action, event, tmp_path, state_dir):
    done = run(client, action, with_transcript(client, event, tmp_path), f"http://127.0.0.1:{closed_port()}")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    (queued,) = queue_files(state_dir)
    assert json.loads(queued.read_text())["body"]["session_id"] == event.get("session_id", event.get("conversation_id"))


@pytest.mark.parametrize(("client", "action", "event"), CAPTURING)
def test_with_a_wrong_token_a_capture_is_queued_then_refused_and_dropped(
    client, action, event, stand, tmp_path, state_dir
):
    state, url = stand
    state.status = 401
    done = run(client, action, with_transcript(client, event, tmp_path), url, token="rb_wrong")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    ((path, _, authorization),) = state.wait_for(1)
    assert path == "/api/v1/sessions" and authorization == "Bearer rb_wrong"
    queue_empty_wait(state_dir)  # refused for good: not kept, not retried


@pytest.mark.parametrize("client", ["codex", "gemini", "cursor"])
def test_a_broken_event_or_an_unknown_action_never_fails_the_session(client, stand):
    _, url = stand
    for action, stdin in (("capture", "not json"), ("capture", "[1]"), ("explode", "{}")):
        done = subprocess.run(
            [sys.executable, str(SCRIPTS[client]), action],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
            env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="t"),
        )
        assert (done.returncode, done.stdout) == (0, "") and len(done.stderr.splitlines()) == 1


def test_codex_gets_the_prompts_memories_as_its_documented_additional_context(stand):
    state, url = stand
    done = run("codex", "prompt", codex_event("UserPromptSubmit", prompt="why is the checkout test flaky?"), url)
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "mem_1" in answer["hookSpecificOutput"]["additionalContext"]
    ((path, body, _),) = state.requests
    assert path == "/api/v1/memories/search"
    assert body["session_id"] == "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5" and body["exclude_seen"] is True


def test_gemini_gets_the_prompts_memories_from_before_agent_and_the_block_at_session_start(stand):
    state, url = stand
    prompt = json.loads(run("gemini", "prompt", gemini_event("BeforeAgent", prompt="why is it flaky?"), url).stdout)
    start = json.loads(run("gemini", "session-start", gemini_event("SessionStart", source="startup"), url).stdout)
    assert prompt["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "mem_1" in prompt["hookSpecificOutput"]["additionalContext"]
    assert start["hookSpecificOutput"]["additionalContext"].startswith("<memory_consolidated_summaries>")
    assert [body["session_id"] for _, body, _ in state.requests] == ["2b1f9c3e-gemini"] * 2


def test_cursor_gets_the_start_block_as_additional_context_under_its_conversation_id(stand):
    state, url = stand
    event = cursor_event("sessionStart", session_id="c0ffee00-cursor", is_background_agent=False, composer_mode="agent")
    answer = json.loads(run("cursor", "session-start", event, url).stdout)
    assert answer["additional_context"].startswith("<memory_consolidated_summaries>")
    assert state.requests[0][1]["session_id"] == "c0ffee00-cursor"


def test_codex_hands_in_the_rollout_at_each_stop_without_its_reasoning_or_its_own_messages(stand, tmp_path):
    state, url = stand
    event = with_transcript(
        "codex", codex_event("Stop", stop_hook_active=False, last_assistant_message="Done."), tmp_path
    )
    assert run("codex", "capture", event, url).stderr == ""
    ((path, body, _),) = state.wait_for(1)
    assert path == "/api/v1/sessions"
    assert (body["trace_format"], body["partial"], body["session_id"]) == (
        "codex-rollout-jsonl",
        True,
        event["session_id"],
    )
    assert "encrypted_content" not in body["trace"] and "environment_context" not in body["trace"]
    assert '"event_msg"' not in body["trace"] and "Fix the flaky checkout test" in body["trace"].splitlines()[0]


def test_codex_hands_in_the_rollout_as_final_at_session_end_with_its_real_input(stand, tmp_path):
    state, url = stand
    end = with_transcript("codex", codex_event("SessionEnd"), tmp_path)  # Codex 0.171.0's SessionEnd input
    assert set(end) == {"session_id", "transcript_path", "cwd", "hook_event_name", "reason"}
    assert run("codex", "capture", end, url).stderr == ""
    ((path, body, _),) = state.wait_for(1)
    assert (path, body["trace_format"], body["partial"], body["session_id"]) == (
        "/api/v1/sessions",
        "codex-rollout-jsonl",
        False,
        end["session_id"],
    )
    assert "Fix the flaky checkout test" in body["trace"]


def test_codex_does_not_capture_a_stop_it_is_continuing_from(stand, tmp_path, state_dir):
    state, url = stand
    event = with_transcript("codex", codex_event("Stop", stop_hook_active=True, last_assistant_message="x"), tmp_path)
    assert run("codex", "capture", event, url).returncode == 0
    assert (state.requests, queue_files(state_dir)) == ([], [])


def test_gemini_hands_in_each_turn_as_partial_and_the_session_end_as_final(stand, tmp_path):
    state, url = stand
    after = with_transcript(
        "gemini", gemini_event("AfterAgent", prompt="p", prompt_response="r", stop_hook_active=False), tmp_path
    )
    end = {**gemini_event("SessionEnd", reason="exit"), "transcript_path": after["transcript_path"]}
    run("gemini", "capture", after, url)
    state.wait_for(1)  # else the end, queued before the turn is sent, supersedes it: one submission
    run("gemini", "capture", end, url)
    assert [(b["trace_format"], b["partial"]) for _, b, _ in state.wait_for(2)] == [
        ("gemini-cli-json", True),
        ("gemini-cli-json", False),
    ]
    sent = json.loads(state.requests[0][1]["trace"])
    assert [m["type"] for m in sent["messages"]] == ["user", "gemini", "gemini", "gemini", "user"]  # no info line
    assert all("tokens" not in m and "thoughts" not in m for m in sent["messages"])


def test_a_long_gemini_recording_is_sent_as_valid_json_with_its_task_and_the_end_that_fits(stand, tmp_path):
    state, url = stand
    record = json.loads(gemini_session_text(session_id="g-long", marker="E2E-long"))
    filler = [{"id": f"f{i}", "type": "gemini", "content": "x" * 2000} for i in range(100)]
    record["messages"] = record["messages"][:1] + filler + record["messages"][1:]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(record))
    env_event = {**gemini_event("SessionEnd", reason="exit"), "transcript_path": str(path)}
    done = subprocess.run(
        [sys.executable, str(SCRIPTS["gemini"]), "capture"],
        input=json.dumps(env_event),
        capture_output=True,
        text=True,
        timeout=30,
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="t", REASONINGBANK_TRACE_MAX_BYTES="20000"),
    )
    assert done.stderr == ""
    trace = state.wait_for(1)[0][1]["trace"]
    sent = json.loads(trace)["messages"]
    assert len(trace.encode()) <= 20000
    assert "E2E-long" in sent[0]["content"] and sent[-1]["content"] == "Thanks, that works now."
    assert 1 < len(sent) < len(record["messages"])


def test_cursor_hands_in_the_transcript_at_stop_and_session_end(stand, tmp_path):
    state, url = stand
    stop = with_transcript("cursor", cursor_event("stop", status="completed", loop_count=0), tmp_path)
    end = {
        **cursor_event("sessionEnd", session_id="c0ffee00-cursor", reason="user_close", duration_ms=61000),
        "transcript_path": stop["transcript_path"],
    }
    run("cursor", "capture", stop, url)
    state.wait_for(1)  # else the end, queued before the stop is sent, supersedes it: one submission
    run("cursor", "capture", end, url)
    assert [(b["trace_format"], b["partial"], b["session_id"]) for _, b, _ in state.wait_for(2)] == [
        ("cursor-jsonl", True, "c0ffee00-cursor"),
        ("cursor-jsonl", False, "c0ffee00-cursor"),
    ]


def test_cursor_without_a_transcript_path_says_so_and_sends_nothing(stand, state_dir):
    state, url = stand
    done = run("cursor", "capture", cursor_event("stop", status="completed", loop_count=0), url)
    assert (done.returncode, done.stdout, state.requests, queue_files(state_dir)) == (0, "", [], [])
    assert "no transcript_path" in done.stderr


@pytest.mark.parametrize("client", ["codex", "gemini", "cursor"])
def test_a_session_shorter_than_the_threshold_is_not_sent(client, stand, tmp_path, state_dir):
    state, url = stand
    event = with_transcript(client, dict(CASES[{"codex": 2, "gemini": 5, "cursor": 7}[client]][2]), tmp_path)
    env = hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="t", REASONINGBANK_CAPTURE_MIN_MESSAGES="50")
    done = subprocess.run(
        [sys.executable, str(SCRIPTS[client]), "capture"],
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout, done.stderr, state.requests, queue_files(state_dir)) == (0, "", "", [], [])


# --- the configuration files -----------------------------------------------------------------------


def commands(config: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for event, groups in config["hooks"].items():
        for group in groups:
            for hook in group.get("hooks", [group]):
                out.setdefault(event, []).append(hook["command"])
    return out


def test_each_clients_hook_configuration_runs_its_script_with_a_known_action_on_its_documented_events():
    codex = commands(json.loads((REPO / "integrations/codex/hooks.json").read_text()))
    gemini = commands(json.loads((REPO / "integrations/gemini-cli/settings.json").read_text()))
    cursor_config = json.loads((REPO / "integrations/cursor/hooks.json").read_text())
    cursor = commands(cursor_config)
    assert set(codex) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "PreToolUse", "PostToolUse"}
    assert set(gemini) == {"SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd", "AfterTool"}
    assert set(cursor) == {"sessionStart", "stop", "sessionEnd"} and cursor_config["version"] == 1
    for found, script in (
        (codex, "codex/reasoningbank_codex.py"),
        (gemini, "gemini-cli/reasoningbank_gemini.py"),
        (cursor, "cursor/reasoningbank_cursor.py"),
    ):
        for event, lines in found.items():
            (line,) = lines
            assert f'"$REASONINGBANK_HOME/integrations/{script}"' in line, event
            assert line.split()[-1] in ("session-start", "prompt", "capture", "tool"), event


def test_the_mcp_entries_read_the_token_from_the_environment():
    gemini = json.loads((REPO / "integrations/gemini-cli/settings.json").read_text())["mcpServers"]["reasoningbank"]
    cursor = json.loads((REPO / "integrations/cursor/mcp.json").read_text())["mcpServers"]["reasoningbank"]
    codex = (REPO / "integrations/codex/config.toml").read_text()
    assert gemini["headers"]["Authorization"] == "Bearer ${REASONINGBANK_TOKEN}" and gemini["httpUrl"].endswith("/mcp")
    assert cursor["headers"]["Authorization"] == "Bearer ${env:REASONINGBANK_TOKEN}" and cursor["url"].endswith("/mcp")
    assert 'bearer_token_env_var = "REASONINGBANK_TOKEN"' in codex and "rb_" not in codex
