"""The Claude Code plugin's SessionStart hook (integrations/claude-code, docs/claude-code.md), run as
Claude Code runs it — a process with the event on stdin — against the live service."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, rest, unique
from tests.hook_state import hook_env

pytestmark = pytest.mark.usefixtures("hook_state_dir")

HOOK = Path(__file__).resolve().parents[2] / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py"
EVENT = {"session_id": "abc123", "hook_event_name": "SessionStart", "source": "startup", "cwd": "/tmp"}


def run_hook(service: Service, token: str, session_id: str = "abc123") -> subprocess.CompletedProcess[str]:
    env = hook_env(REASONINGBANK_URL=service.url, REASONINGBANK_TOKEN=token)
    event = json.dumps({**EVENT, "session_id": session_id})
    return subprocess.run(
        [sys.executable, str(HOOK), "session-start"], input=event, env=env, capture_output=True, text=True, timeout=60
    )


def test_the_hook_prints_the_projects_memory_as_additional_context(service: Service, acme: Setup) -> None:
    marker = unique()
    with rest(service, acme.project_token) as http:
        response = http.post(
            "/api/v1/memories",
            json={
                "title": f"Run database migrations before deploying {marker}",
                "description": "Deploys with schema changes",
                "content": "Apply migrations in a separate step, then roll out the code that needs them.",
                "outcome": "success",
            },
        )
        assert response.status_code == 201, response.text

    done = run_hook(service, acme.project_token)

    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert context.startswith("<memory_consolidated_summaries version=")
    assert context.endswith("</memory_consolidated_summaries>")
    assert f"Run database migrations before deploying {marker}" in context


def test_a_bad_token_never_blocks_the_session(service: Service) -> None:
    done = run_hook(service, "rb_not-a-real-token")
    assert done.returncode == 0
    assert "refused the token (401" in json.loads(done.stdout)["systemMessage"]  # the user is told, once
    assert "401" in done.stderr
    assert run_hook(service, "rb_not-a-real-token").stdout == ""


def test_the_outcome_of_a_session_the_hook_started_reaches_every_memory_it_was_given(
    service: Service, acme: Setup
) -> None:
    """The block's memories are the session's, and its outcome moves them (docs/session-context.md#the-ledger)."""
    marker = unique()
    with rest(service, acme.project_token) as http:
        ids = [
            http.post(
                "/api/v1/memories",
                json={
                    "title": f"{title} {marker}",
                    "description": "Deploys",
                    "content": f"{title}, always.",
                    "outcome": "success",
                },
            ).json()["id"]
            for title in ("Tag releases before deploying", "Announce deploys in the team channel")
        ]
        before = {mid: http.get(f"/api/v1/memories/{mid}").json()["confidence"] for mid in ids}

        done = run_hook(service, acme.project_token, session_id=f"session-{marker}")
        assert done.returncode == 0, done.stderr
        block = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert f"Tag releases before deploying {marker}" in block
        assert f"Announce deploys in the team channel {marker}" in block

        # the agent reports one memory's outcome with its session id: both memories it started with learn it
        reported = http.post(
            f"/api/v1/memories/{ids[0]}/outcome", json={"succeeded": True, "session_id": f"session-{marker}"}
        )
        assert reported.status_code == 200, reported.text
        after = {mid: http.get(f"/api/v1/memories/{mid}").json()["confidence"] for mid in ids}
    assert all(after[mid] > before[mid] for mid in ids), (before, after)
