"""The Claude Code plugin's hooks (integrations/claude-code, docs/claude-code.md), each run as Claude Code
runs it — a process with the event's JSON on stdin — against the live service and its worker: a session
file in Claude Code's format is handed in at SessionEnd, the worker distils it through the stub LLM, and
the next session's prompts get the distilled memory once, within the token cap."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.claude_code_transcript import SECRET, transcript_text
from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, rest, unique
from tests.e2e.llm_stub import LLMStub
from tests.hook_state import hook_env, queue_empty_wait

pytestmark = pytest.mark.usefixtures("hook_state_dir")

HOOK = Path(__file__).resolve().parents[2] / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py"
DISTILL_WITHIN = 60  # seconds from SessionEnd until the worker has produced the session's memories


def run_hook(
    action: str, event: dict[str, Any], *, url: str, token: str, **env: str
) -> subprocess.CompletedProcess[str]:
    environment = hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN=token, **env)
    return subprocess.run(
        [sys.executable, str(HOOK), action],
        input=json.dumps(event),
        env=environment,
        capture_output=True,
        text=True,
        timeout=30,
    )


def prompt_event(session_id: str, prompt: str, cwd: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": f"{cwd}/{session_id}.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def injected(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    if not done.stdout:
        return ""
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    return str(answer["hookSpecificOutput"]["additionalContext"])


def wait_for_distillation(service: Service, http: Any, session_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + DISTILL_WITHIN
    while True:
        crashed = service.worker_crash_lines()
        assert not crashed, "the worker crashed:\n" + "\n".join(crashed)
        session = http.get(f"/api/v1/sessions/{session_id}").json()
        if session.get("status") in ("done", "failed") or time.monotonic() > deadline:
            assert session.get("status") == "done", f"not distilled within {DISTILL_WITHIN}s: {session}"
            return session
        time.sleep(1)


def test_a_session_handed_in_at_its_end_is_recalled_once_in_the_next_session(
    service: Service, acme: Setup, llm_stub: LLMStub, tmp_path: Path
) -> None:
    marker, first, second = unique(), unique("cc"), unique("cc")
    transcript = tmp_path / f"{first}.jsonl"
    transcript.write_text(transcript_text(session_id=first, cwd=str(tmp_path), marker=marker))
    end = {
        "session_id": first,
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }

    captured = run_hook("capture", end, url=service.url, token=acme.project_token)

    assert (captured.returncode, captured.stdout, captured.stderr) == (0, "", "")
    with rest(service, acme.project_token) as http:
        session = wait_for_distillation(service, http, first)
        detail = http.get(f"/api/v1/sessions/{first}").json()
        memory_id = next(m["id"] for m in session["memories"] if marker in m["title"])
        memory = http.get(f"/api/v1/memories/{memory_id}").json()
    assert session["outcome"] == "success"  # the tests passed at the end and the user said thanks
    assert SECRET not in detail["trace"] and session["redactions"] >= 1
    assert "[sidechain] [user] Which tests mutate the cart fixture?" in detail["trace"]
    distilled = [c.prompt for c in llm_stub.calls_of("distill") if marker in c.prompt]
    assert distilled and SECRET not in distilled[0]

    prompt = f"{memory['description']} — what did we learn about it?"
    recalled = injected(
        run_hook("prompt", prompt_event(second, prompt, str(tmp_path)), url=service.url, token=acme.project_token)
    )
    again = injected(
        run_hook("prompt", prompt_event(second, prompt, str(tmp_path)), url=service.url, token=acme.project_token)
    )

    assert recalled.startswith("<reasoningbank_memories>") and recalled.endswith("</reasoningbank_memories>")
    assert memory_id in recalled and f"Distilled {marker}" in recalled
    assert math.ceil(len(recalled) / 4) <= 600  # the default cap
    assert memory_id not in again  # never twice in one session


def test_the_injected_block_never_exceeds_the_token_cap(service: Service, acme: Setup, tmp_path: Path) -> None:
    marker = unique()
    # distinct lessons on one topic (a near copy would be answered with the first, not recorded)
    lessons = [
        ("Generate the new payment gateway signing key pair offline", "on an air-gapped machine, then import it."),
        ("Publish the new payment signing public key before switching", "so verifiers accept both for a day."),
        ("Switch the payment gateway to sign with the new key", "during the low-traffic window after midnight."),
        ("Keep the old payment signing key for verification only", "until every queued webhook has been retried."),
        ("Revoke the old payment gateway signing key", "after a week, and delete it from the secrets store."),
        ("Record each payment key rotation in the audit log", "with the key fingerprints and who approved it."),
    ]
    with rest(service, acme.project_token) as http:
        for title, detail in lessons:
            response = http.post(
                "/api/v1/memories",
                json={
                    "title": f"{title} {marker}",
                    "description": "When the payment gateway's signing keys must be rotated",
                    "content": f"{title}, {detail} " * 2,
                    "outcome": "success",
                },
            )
            assert response.status_code == 201, response.text
    for cap in (250, 400, 600):
        block = injected(
            run_hook(
                "prompt",
                prompt_event(unique("cc"), "How do I rotate the payment gateway signing keys?", str(tmp_path)),
                url=service.url,
                token=acme.project_token,
                REASONINGBANK_PROMPT_TOKENS=str(cap),
            )
        )
        assert block and marker in block
        assert math.ceil(len(block) / 4) <= cap


def test_a_memory_the_prompt_hook_shows_again_and_again_gains_impressions_not_confidence(
    service: Service, acme: Setup, tmp_path: Path
) -> None:
    """docs/confidence.md#impressions-and-use: the hook's recall is no use of what it shows."""
    marker = unique()
    with rest(service, acme.project_token) as http:
        recorded = http.post(
            "/api/v1/memories",
            json={
                "title": f"Pin the protobuf compiler version in the build image {marker}",
                "description": "When generated protobuf code differs between developer machines and CI",
                "content": "Pin protoc in the build image and regenerate the code there, never on laptops.",
                "outcome": "success",
            },
        )
        assert recorded.status_code == 201, recorded.text
        memory_id, before = recorded.json()["id"], recorded.json()["memory"]["confidence"]
        shown = 0
        for _ in range(4):  # four sessions, each shown it once (a session is never shown it twice)
            block = injected(
                run_hook(
                    "prompt",
                    prompt_event(unique("cc"), "Why does the generated protobuf code differ in CI?", str(tmp_path)),
                    url=service.url,
                    token=acme.project_token,
                )
            )
            shown += memory_id in block
        assert shown == 4
        deadline = time.monotonic() + 10  # the count is written behind the hook's answer
        while (memory := http.get(f"/api/v1/memories/{memory_id}").json())["impression_count"] < 4:
            assert time.monotonic() < deadline, memory
            time.sleep(0.2)
        signals = http.get(f"/api/v1/memories/{memory_id}/signals").json()["results"]
    assert memory["impression_count"] == 4 and memory["last_shown_at"]
    assert (memory["usage_count"], memory["last_used_at"], signals) == (0, None, [])
    assert memory["confidence"] == pytest.approx(before, abs=1e-9)


def test_a_prompt_nothing_in_the_bank_is_about_gets_nothing(service: Service, acme: Setup, tmp_path: Path) -> None:
    done = run_hook(
        "prompt",
        prompt_event(unique("cc"), "Write a haiku about autumn leaves falling on a pond", str(tmp_path)),
        url=service.url,
        token=acme.project_token,
    )
    assert (done.returncode, done.stdout) == (0, "")


def test_a_session_start_gets_the_projects_memory_block(service: Service, acme: Setup) -> None:
    marker = unique()
    with rest(service, acme.project_token) as http:
        http.post(
            "/api/v1/memories",
            json={
                "title": f"Run database migrations before deploying {marker}",
                "description": "Deploys with schema changes",
                "content": "Apply migrations in a separate step, then roll out the code that needs them.",
                "outcome": "success",
            },
        ).raise_for_status()
    event = {"session_id": unique("cc"), "hook_event_name": "SessionStart", "source": "startup", "cwd": "/tmp"}

    done = run_hook("session-start", event, url=service.url, token=acme.project_token)

    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("<memory_consolidated_summaries version=") and marker in context


def test_with_a_wrong_token_every_hook_exits_0_and_the_session_is_told_once(
    service: Service, tmp_path: Path, hook_state_dir: Path
) -> None:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(transcript_text(session_id="s"))
    wrong = {"url": service.url, "token": "rb_not-a-real-token"}
    start = run_hook(
        "session-start", {"session_id": "s", "hook_event_name": "SessionStart", "source": "startup"}, **wrong
    )
    prompt = run_hook("prompt", prompt_event("s", "How do I fix the flaky checkout test?", str(tmp_path)), **wrong)
    for done in (start, prompt):
        assert done.returncode == 0 and "401" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done
    assert "refused the token (401" in json.loads(start.stdout)["systemMessage"] and prompt.stdout == ""
    end = {"session_id": "s", "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
    captured = run_hook("capture", end, **wrong)
    assert (captured.returncode, captured.stdout, captured.stderr) == (0, "", "")  # queued; the sender is refused
    queue_empty_wait(hook_state_dir)  # refused for good: dropped, not retried
    assert "answered 401" in (hook_state_dir / "sender.log").read_text()
