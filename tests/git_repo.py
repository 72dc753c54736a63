"""A small real git repository a test builds in its tmp_path: files written, commits made with the
committer dates the test names (so that which commit is older never depends on the clock), and what a
commit changed as the git hook reports it (the Claude Code plugin's ``reasoningbank_hooks/code_changes``)."""

from __future__ import annotations

import importlib
import os
import subprocess
from pathlib import Path
from typing import Any

import tests.hook_modules  # noqa: F401  (puts the plugin's hooks folder on sys.path)

# the module the git hook, the plugin and bench/code_memory.py load, imported the way they do
code_changes = importlib.import_module("reasoningbank_hooks.code_changes")

REMOTE = "git@github.com:acme/api.git"
EPOCH = 1_790_000_000  # 2026-09-21: commits are made at EPOCH + the test's seconds


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "dev@acme.test")
        self.git("config", "user.name", "Dev")
        self.git("config", "commit.gpgsign", "false")
        self.git("remote", "add", "origin", REMOTE)

    def git(self, *args: str, at: int | None = None) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        if at is not None:
            stamp = f"@{EPOCH + at} +0000"
            env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
        return subprocess.run(["git", *args], cwd=self.root, env=env, capture_output=True, text=True, check=True).stdout

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def commit(self, message: str, *, at: int) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, at=at)
        return self.git("rev-parse", "HEAD").strip()

    def changes(self, sha: str = "HEAD") -> tuple[str, int, list[Any]]:
        return code_changes.commit_changes(sha, git=lambda *args: self.git(*args))

    def report(self, sha: str = "HEAD") -> dict[str, Any]:
        """The commit's report body, as ``scripts/git-code-report`` sends it (one: these commits are small)."""
        full, committed_at, changes = self.changes(sha)
        (body,) = code_changes.report_bodies(REMOTE, full, committed_at, changes)
        return body
