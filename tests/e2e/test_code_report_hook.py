"""The git/CI code report of docs/connecting-agents.md (scripts/git-code-report) against the live
service: installed as a real git post-commit hook it ties each agent commit to its session; run as the
CI step it reports the commit older than 7 days kept and the reverted one reverted, and the memories
each session was given get the matching code-stability signal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, rest, unique

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "git-code-report"
DAY = 86_400


def git(repo: Path, *args: str, env: dict[str, str], days_old: float = 0) -> str:
    when = f"@{int(time.time() - days_old * DAY)} +0000"
    dated = {**env, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    done = subprocess.run(["git", *args], cwd=repo, env=dated, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_hooked_repository_reports_kept_and_reverted_code_to_the_sessions_memories(
    service: Service, acme: Setup, tmp_path: Path
) -> None:
    marker = unique()
    sessions = {"kept": f"session-kept-{marker}", "reverted": f"session-reverted-{marker}"}
    given: dict[str, str] = {}
    with rest(service, acme.project_token) as http:
        for verdict, session_id in sessions.items():
            title = f"Strategy {verdict} {marker}"
            created = http.post(
                "/api/v1/memories",
                json={
                    "title": title,
                    "description": f"When {verdict}",
                    "content": f"Do {verdict}: the write gate wants a real lesson.",
                    "outcome": "success",
                },
            )
            assert created.status_code == 201, created.text
            given[verdict] = created.json()["id"]
            found = http.post(
                "/api/v1/memories/search",
                json={"query": title, "session_id": session_id, "limit": 1, "min_confidence": 0},
            )
            assert [m["id"] for m in found.json()["memories"]] == [given[verdict]], found.text

    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Agent",
        "GIT_AUTHOR_EMAIL": "agent@example.test",
        "GIT_COMMITTER_NAME": "Agent",
        "GIT_COMMITTER_EMAIL": "agent@example.test",
        "REASONINGBANK_URL": service.url,
        "REASONINGBANK_TOKEN": acme.project_token,
    }
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", env=env)
    hook = repo / ".git" / "hooks" / "post-commit"
    hook.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{SCRIPT}" committed\n')
    hook.chmod(0o755)
    shas = {}
    for verdict, session_id in sessions.items():
        (repo / f"{verdict}.txt").write_text(verdict)
        git(repo, "add", f"{verdict}.txt", env=env)
        git(
            repo,
            "commit",
            "-q",
            "-m",
            f"Add {verdict}",
            env={**env, "REASONINGBANK_SESSION_ID": session_id},
            days_old=8,
        )
        shas[verdict] = git(repo, "rev-parse", "HEAD", env=env).strip()
    git(repo, "revert", "--no-edit", shas["reverted"], env=env)  # by a person: no session, not reported

    ci = subprocess.run(
        [sys.executable, str(SCRIPT), "verdicts"], cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )

    assert ci.returncode == 0, ci.stdout + ci.stderr
    assert f"reverted {shas['reverted'][:12]}: Code reverted" in ci.stdout, ci.stdout
    assert f"kept {shas['kept'][:12]}: Code kept" in ci.stdout, ci.stdout
    with rest(service, acme.project_token) as http:
        for verdict, positive in (("kept", True), ("reverted", False)):
            signals = http.get(f"/api/v1/memories/{given[verdict]}/signals").json()["results"]
            stability = [s for s in signals if s["type"] == "stability"]
            assert [s["positive"] for s in stability] == [positive], json.dumps(signals)
            assert stability[0]["session_id"] == sessions[verdict]
        again = http.post("/api/v1/sessions/code-report", json={"commit": shas["kept"], "status": "kept"})
        assert again.json()["already_reported"] is True
