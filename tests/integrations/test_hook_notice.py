"""A user whose memory is off is told once a session (docs/claude-code.md#when-memory-is-off): when the token
is refused, missing, or the service cannot be reached, the session's start hook — or its first prompt
hook when no start hook ran (a resumed session, Gemini CLI's BeforeAgent) — prints one ``systemMessage``
saying so and what to check; later hooks of the session print none. Claude Code, Codex and Gemini CLI
show a hook's ``systemMessage`` to the user; Cursor's sessionStart has no such field, so its hook prints
nothing. Each hook is run as its client runs it, with the client's documented event on stdin."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.agent_hook_events import claude_code_event, codex_event, cursor_event, gemini_event
from tests.claude_code_transcript import transcript_text
from tests.hook_state import hook_env, queue_empty_wait

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {
    "claude-code": REPO / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py",
    "codex": REPO / "integrations" / "codex" / "reasoningbank_codex.py",
    "gemini": REPO / "integrations" / "gemini-cli" / "reasoningbank_gemini.py",
    "cursor": REPO / "integrations" / "cursor" / "reasoningbank_cursor.py",
}
QUESTION = "why is the checkout test flaky?"


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def hook(
    client: str, action: str, event: dict[str, Any], url: str, token: str = "rb_test", **env: str
) -> dict[str, Any]:
    """The hook's answer on stdout as JSON ({} when it printed nothing); it always exits 0."""
    done = subprocess.run(
        [sys.executable, str(SCRIPTS[client]), action],
        input=json.dumps(event),
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN=token, **env),
        capture_output=True,
        text=True,
        timeout=5,
    )
    assert done.returncode == 0
    return json.loads(done.stdout) if done.stdout.strip() else {}


def told(answer: dict[str, Any]) -> str:
    return str(answer.get("systemMessage", ""))


def test_claude_code_tells_each_session_once_that_its_token_is_refused(stand):
    state, url = stand
    state.status = 401
    start = claude_code_event("SessionStart", source="startup")
    prompt = claude_code_event("UserPromptSubmit", prompt=QUESTION)
    first = told(hook("claude-code", "session-start", start, url, token="rb_wrong"))
    assert "memory is off" in first and "refused the token (401: Invalid token.)" in first
    assert "REASONINGBANK_TOKEN" in first and "memories:write" in first
    assert [hook("claude-code", "prompt", prompt, url, token="rb_wrong") for _ in range(2)] == [{}, {}]
    another = {**prompt, "session_id": "another-session"}  # resumed or new: no start hook ran for it here
    assert "refused the token" in told(hook("claude-code", "prompt", another, url, token="rb_wrong"))
    assert hook("claude-code", "prompt", another, url, token="rb_wrong") == {}
    assert len(state.requests) == 5  # every hook still asked: memory comes back as soon as the token works


def test_gemini_tells_the_first_prompt_once_that_the_service_is_out_of_reach():
    url = closed_url()
    event = gemini_event("BeforeAgent", prompt=QUESTION)
    first = told(hook("gemini", "prompt", event, url))
    assert f"could not reach {url}" in first and "REASONINGBANK_URL" in first
    assert "captured sessions wait on this machine (0 in " in first
    assert hook("gemini", "prompt", event, url) == {}


def test_codex_tells_the_session_start_once_and_not_its_prompts():
    url = closed_url()
    assert "could not reach" in told(hook("codex", "session-start", codex_event("SessionStart", source="startup"), url))
    assert hook("codex", "prompt", codex_event("UserPromptSubmit", prompt=QUESTION), url) == {}


def test_cursor_has_no_message_for_the_user_so_its_hook_prints_nothing(stand):
    state, url = stand
    state.status = 401
    event = cursor_event("sessionStart", session_id="c0ffee00-cursor", is_background_agent=False, composer_mode="agent")
    assert hook("cursor", "session-start", event, url, token="rb_wrong") == {}


def test_without_a_token_the_session_is_told_to_set_one_once():
    event = claude_code_event("SessionStart", source="startup")
    first = told(hook("claude-code", "session-start", event, closed_url(), token=""))
    assert "REASONINGBANK_TOKEN is not set" in first
    assert hook("claude-code", "prompt", claude_code_event("UserPromptSubmit", prompt=QUESTION), closed_url(), "") == {}


def test_a_slow_answer_is_not_memory_off_and_tells_nobody(stand):
    state, url = stand
    state.gate = threading.Event()  # no answer within the hook's budget
    answer = hook(
        "claude-code",
        "prompt",
        claude_code_event("UserPromptSubmit", prompt=QUESTION),
        url,
        **{"REASONINGBANK_TIMEOUT": "0.5"},
    )
    state.gate.set()
    assert answer == {}


def test_a_token_that_may_read_but_not_write_is_told_its_sessions_are_not_saved(stand, tmp_path, state_dir):
    state, url = stand
    state.script = [403]  # the capture's submission: refused; the start and prompt hooks' searches: answered
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(transcript_text(session_id="earlier"))
    ended = {
        **claude_code_event("SessionEnd", reason="other", session_id="earlier"),
        "transcript_path": str(transcript),
    }
    hook("claude-code", "capture", ended, url)
    state.wait_for(1, "answered")
    queue_empty_wait(state_dir)

    start = hook("claude-code", "session-start", claude_code_event("SessionStart", source="startup"), url)
    assert start["hookSpecificOutput"]["additionalContext"].startswith("<memory_consolidated_summaries>")
    assert "not saving your sessions" in told(start) and "403" in told(start)
    again = hook("claude-code", "prompt", claude_code_event("UserPromptSubmit", prompt=QUESTION), url)
    assert "mem_1" in again["hookSpecificOutput"]["additionalContext"] and told(again) == ""

    hook("claude-code", "capture", ended, url)  # the token fixed on the service: accepted
    state.wait_for(4, "answered")
    queue_empty_wait(state_dir)
    fresh = claude_code_event("SessionStart", source="startup", session_id="fresh-session")
    assert told(hook("claude-code", "session-start", fresh, url)) == ""


@pytest.mark.parametrize("client", ["claude-code", "gemini"])
def test_the_notice_is_a_field_the_client_reads_and_nothing_else_is_printed(client):
    event = (claude_code_event if client == "claude-code" else gemini_event)("SessionStart", source="startup")
    answer = hook(client, "session-start", event, closed_url())
    assert set(answer) == {"systemMessage"}  # the common output field of both clients' hook JSON
