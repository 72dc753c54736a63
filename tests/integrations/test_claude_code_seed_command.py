"""The Claude Code plugin's ``/reasoningbank:seed-from-git`` command (docs/code-memory.md#seeding-from-history):
its command file in the plugin's layout, and its script run as Claude Code runs it — a real git repository
read in a subprocess, the commits posted to the live service (Django's live server, the test database
behind it): the dry run, the seeding, the re-run with nothing new."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memories.models import AgentSession, SeededCommit

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "integrations" / "claude-code"
COMMAND = PLUGIN / "commands" / "seed-from-git.md"
SCRIPT = PLUGIN / "scripts" / "reasoningbank_seed.py"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_the_command_file_has_its_front_matter_and_runs_the_shipped_script_dry_first() -> None:
    text = COMMAND.read_text()
    front = text.split("---")[1]
    assert re.search(r"^description: \S", front, re.M) and re.search(r"^allowed-tools: Bash\(python3:\*\)", front, re.M)
    run_lines = [line for line in text.splitlines() if "reasoningbank_seed.py" in line]
    assert run_lines and "--dry-run" in run_lines[0]  # the dry run comes first
    assert "${CLAUDE_PLUGIN_ROOT}/scripts/reasoningbank_seed.py" in text and SCRIPT.is_file()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "api"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.test")
    git(repo, "config", "user.name", "Dev")
    git(repo, "remote", "add", "origin", "git@github.com:acme/api.git")
    for n, message in enumerate(
        ["Add the retry policy for webhook deliveries", "Fix retries: back off exponentially, capped at ten minutes"]
    ):
        (repo / "retry.py").write_text(f"def backoff(attempt):\n    return min(600, 2 ** attempt + {n})\n")
        git(repo, "add", "retry.py")
        git(repo, "commit", "-q", "-m", message, "-m", "Deliveries to a slow receiver were retried every second.")
    return repo


def test_the_script_estimates_then_submits_then_finds_nothing_new(
    transactional_db: Any, cast: Any, make_token: Any, live_server: Any, repo: Path
) -> None:
    raw, _ = make_token(cast.org_a, projects=[cast.project_a])
    env = {**os.environ, "REASONINGBANK_URL": live_server.url, "REASONINGBANK_TOKEN": raw}

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    dry = run("--dry-run")
    assert "Dry run: 2 commit(s), 0 already seeded; 1 batch(es) for none" in dry
    assert not AgentSession.objects.exists()
    seeded = run()
    assert "2 commit(s) submitted in 1 batch(es)" in seeded
    assert SeededCommit.objects.filter(organization=cast.org_a).count() == 2
    assert run() == "No new commit to seed.\n"
    assert "0 of 1 batch(es) distilled; 1 wait for an LLM" in run("--status")
