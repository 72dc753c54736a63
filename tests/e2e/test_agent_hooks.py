"""The Gemini CLI, Cursor and Codex CLI hooks (integrations/, docs/connecting-agents.md#other-agents),
each run as its client runs it — a process given the event's documented JSON on stdin — against the
live service and its worker: a session file in the client's format is handed in, the worker distils it
through the stub LLM, and a later session gets the distilled memory. A Codex capture at Stop is held
until the session is idle (ten minutes) and its SessionEnd hands it in as final: here it is checked as
held and converted, then distilled at SessionEnd, and its prompt hook recalls what another session
taught."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent_transcripts import codex_rollout_text, cursor_transcript_text, gemini_recording_text
from tests.claude_code_transcript import SECRET
from tests.e2e.conftest import Setup, manage_ok
from tests.e2e.harness import Service, rest, token_from, unique
from tests.e2e.test_claude_code_plugin import wait_for_distillation
from tests.hook_state import hook_env, queue_empty_wait

pytestmark = pytest.mark.usefixtures("hook_state_dir")

INTEGRATIONS = Path(__file__).resolve().parents[2] / "integrations"
SCRIPTS = {
    "codex": INTEGRATIONS / "codex" / "reasoningbank_codex.py",
    "gemini": INTEGRATIONS / "gemini-cli" / "reasoningbank_gemini.py",
    "cursor": INTEGRATIONS / "cursor" / "reasoningbank_cursor.py",
}


def run(
    client: str, action: str, event: dict[str, Any], service: Service, token: str
) -> subprocess.CompletedProcess[str]:
    env = hook_env(REASONINGBANK_URL=service.url, REASONINGBANK_TOKEN=token)
    done = subprocess.run(
        [sys.executable, str(SCRIPTS[client]), action],
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0 and done.stderr == "", done
    return done


def distilled_memory(service: Service, token: str, session_id: str, marker: str) -> dict[str, Any]:
    with rest(service, token) as http:
        session = wait_for_distillation(service, http, session_id)
        detail = http.get(f"/api/v1/sessions/{session_id}").json()
        memory_id = next(m["id"] for m in session["memories"] if marker in m["title"])
        memory = http.get(f"/api/v1/memories/{memory_id}").json()
    assert session["outcome"] == "success" and SECRET not in detail["trace"]
    return dict(memory)


def test_gemini_cli_hands_a_session_in_at_its_end_and_recalls_it_once_in_the_next(
    service: Service, acme: Setup, tmp_path: Path
) -> None:
    marker, first, second = unique(), unique("gm"), unique("gm")
    recording = tmp_path / "session-2026-12-02T08-55-45731ba3.jsonl"  # Gemini CLI 0.61.0's own recording
    recording.write_text(gemini_recording_text(session_id=first, marker=marker))
    base = {"cwd": str(tmp_path), "timestamp": "2026-11-27T09:00:00.000Z"}
    end = {
        **base,
        "session_id": first,
        "transcript_path": str(recording),
        "hook_event_name": "SessionEnd",
        "reason": "exit",
    }

    assert run("gemini", "capture", end, service, acme.project_token).stdout == ""
    memory = distilled_memory(service, acme.project_token, first, marker)

    prompt = {
        **base,
        "session_id": second,
        "transcript_path": str(tmp_path / "later.json"),
        "hook_event_name": "BeforeAgent",
        "prompt": f"{memory['description']} — what did we learn about it?",
    }
    answer = json.loads(run("gemini", "prompt", prompt, service, acme.project_token).stdout)
    again = run("gemini", "prompt", prompt, service, acme.project_token).stdout
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert memory["id"] in answer["hookSpecificOutput"]["additionalContext"]
    assert memory["id"] not in again  # never twice in one session


def test_cursor_hands_a_conversation_in_at_its_end_and_the_next_one_starts_with_it(
    service: Service, acme: Setup, tmp_path: Path
) -> None:
    marker, first, second = unique(), unique("cu"), unique("cu")
    # a project of its own: the start block holds a project's best memories, and the shared web-app
    # project has many by the time this runs in the whole suite
    slug = f"cursor-{marker.lower()}"
    manage_ok(service, "create_project", "acme", slug)
    token = token_from(manage_ok(service, "create_token", "acme", "--label", slug, "--project", slug))
    transcript = tmp_path / f"{first}.jsonl"
    transcript.write_text(cursor_transcript_text(marker=marker))
    common = {
        "generation_id": "g-1",
        "model": "claude-4.5-sonnet",
        "cursor_version": "2.1.0",
        "workspace_roots": [str(tmp_path)],
    }
    end = {
        **common,
        "conversation_id": first,
        "session_id": first,
        "hook_event_name": "sessionEnd",
        "reason": "user_close",
        "duration_ms": 61000,
        "is_background_agent": False,
        "transcript_path": str(transcript),
    }

    run("cursor", "capture", end, service, token)
    memory = distilled_memory(service, token, first, marker)

    start = {
        **common,
        "conversation_id": second,
        "session_id": second,
        "hook_event_name": "sessionStart",
        "is_background_agent": False,
        "composer_mode": "agent",
        "transcript_path": None,
    }
    block = json.loads(run("cursor", "session-start", start, service, token).stdout)["additional_context"]
    assert block.startswith("<memory_consolidated_summaries") and memory["title"] in block


def test_codex_hands_the_rollout_in_at_each_stop_held_then_at_session_end_and_recalls_per_prompt(
    service: Service, acme: Setup, tmp_path: Path, hook_state_dir: Path
) -> None:
    marker, session_id = unique(), unique("cx")
    rollout = tmp_path / f"rollout-2026-11-27T09-00-00-{session_id}.jsonl"
    rollout.write_text(codex_rollout_text(session_id=session_id, cwd=str(tmp_path), marker=marker))
    common = {
        "session_id": session_id,
        "transcript_path": str(rollout),
        "cwd": str(tmp_path),
        "model": "gpt-5-codex",
        "permission_mode": "default",
        "turn_id": unique("turn"),
    }
    stop = {**common, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "Fixed."}

    run("codex", "capture", stop, service, acme.project_token)
    queue_empty_wait(hook_state_dir)  # the sender has posted it
    with rest(service, acme.project_token) as http:
        held = http.get(f"/api/v1/sessions/{session_id}").json()
    assert held["status"] == "queued" and held["next_attempt_at"]  # held until the session is idle
    assert held["trace"].startswith(f"[user] Fix the flaky checkout test ({marker})") and SECRET not in held["trace"]

    end = {  # Codex 0.171.0's SessionEnd input: no model, permission mode or turn
        "session_id": session_id,
        "transcript_path": str(rollout),
        "cwd": str(tmp_path),
        "hook_event_name": "SessionEnd",
        "reason": "other",
    }
    run("codex", "capture", end, service, acme.project_token)
    distilled_memory(service, acme.project_token, session_id, marker)  # now, not once idle

    with rest(service, acme.project_token) as http:
        http.post(
            "/api/v1/memories",
            json={
                "title": f"Give each checkout test its own cart {marker}",
                "description": "When checkout tests share one mutable cart fixture",
                "content": "Build the cart with make_cart() inside each test; a shared cart leaks between tests.",
                "outcome": "success",
            },
        ).raise_for_status()
    prompt = {
        **common,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "The checkout tests share one mutable cart fixture",
    }
    answer = json.loads(run("codex", "prompt", prompt, service, acme.project_token).stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert marker in answer["hookSpecificOutput"]["additionalContext"]
