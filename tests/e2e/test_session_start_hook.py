"""The README's Claude Code SessionStart hook (scripts/claude-session-start), run as Claude Code runs
it — a process with the event on stdin — against the live service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, rest, unique

HOOK = Path(__file__).resolve().parents[2] / "scripts" / "claude-session-start"
EVENT = {"session_id": "abc123", "hook_event_name": "SessionStart", "source": "startup", "cwd": "/tmp"}


def run_hook(service: Service, token: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "REASONINGBANK_URL": service.url, "REASONINGBANK_TOKEN": token}
    return subprocess.run(
        [sys.executable, str(HOOK)], input=json.dumps(EVENT), env=env, capture_output=True, text=True, timeout=60
    )


def test_the_hook_prints_the_projects_memory_as_additional_context(service: Service, acme: Setup) -> None:
    marker = unique()
    with rest(service, acme.project_token) as http:
        response = http.post("/api/v1/memories", json={
            "title": f"Run database migrations before deploying {marker}",
            "description": "Deploys with schema changes",
            "content": "Apply migrations in a separate step, then roll out the code that needs them.",
            "outcome": "success",
        })
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
    assert done.stdout == ""
    assert "401" in done.stderr
