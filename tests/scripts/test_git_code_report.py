"""scripts/git-code-report without the service: its pure parts (environment, git log parsing, which
commits are due a verdict), its jobs against a real local git repository with the HTTP call replaced,
and that the hooks never fail a commit or a session. The live round trip is tests/e2e/."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import io
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "git-code-report"
DAY = 86_400
NOW = 1_800_000_000.0
A = "3f786850e387550fdab836ed7e6dc881de23001b"
B = "89e6c98d92887913cadf06b2adb97f26cde4849b"


def _load() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("git_code_report", str(SCRIPT))
    spec = importlib.util.spec_from_loader("git_code_report", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["git_code_report"] = module  # dataclasses look their module up while the class is made
    loader.exec_module(module)
    return module


gcr = _load()


def commit(sha: str, days_old: float, message: str = "Change things") -> Any:
    return gcr.Commit(sha=sha, committed_at=int(NOW - days_old * DAY), message=message)


# --- pure parts -------------------------------------------------------------------------------------


def test_the_session_comes_from_reasoningbank_session_id_first_then_claude_session_id() -> None:
    assert gcr.session_id_from({"REASONINGBANK_SESSION_ID": " s-1 ", "CLAUDE_SESSION_ID": "c-1"}) == "s-1"
    assert gcr.session_id_from({"CLAUDE_SESSION_ID": "c-1"}) == "c-1"
    assert gcr.session_id_from({"REASONINGBANK_SESSION_ID": "  "}) == ""


def test_the_env_file_line_is_quoted_for_the_shell_that_sources_it() -> None:
    assert gcr.env_file_line("abc-123") == "export REASONINGBANK_SESSION_ID=abc-123\n"
    assert gcr.env_file_line("it's $HOME") == "export REASONINGBANK_SESSION_ID='it'\"'\"'s $HOME'\n"


def test_git_log_records_are_parsed_with_multi_line_messages() -> None:
    output = f'{A}\x1f1700000000\x1fRevert "x"\n\nThis reverts commit {B}.\n\x1e\n{B}\x1f1690000000\x1fx\n\x1e\n'
    assert gcr.log_parse(output) == [
        gcr.Commit(A, 1700000000, f'Revert "x"\n\nThis reverts commit {B}.'),
        gcr.Commit(B, 1690000000, "x"),
    ]
    assert gcr.log_parse("") == []


def test_reverted_shas_are_read_from_git_reverts_own_message_in_full_only() -> None:
    messages = [f'Revert "Add cache"\n\nThis reverts commit {A.upper()}.', "This reverts commit 3f78685.", "fix"]
    assert gcr.reverted_shas(messages) == {A}


def test_a_commit_older_than_7_days_is_kept_and_a_younger_one_waits() -> None:
    due = gcr.verdicts_due([commit(A, 8), commit(B, 6.9)], now=NOW)
    assert due == [(A, "kept")]


def test_a_reverted_commit_is_reported_at_once_whatever_its_age_and_never_as_kept() -> None:
    revert = commit("c" * 40, 0.5, f'Revert "x"\n\nThis reverts commit {A}.')
    assert gcr.verdicts_due([revert, commit(A, 8), commit(B, 1)], now=NOW) == [(A, "reverted")]


def test_commits_past_the_window_are_not_reported_again() -> None:
    assert gcr.verdicts_due([commit(A, 10.5)], now=NOW) == []
    assert gcr.verdicts_due([commit(A, 10.5)], now=NOW, window_days=14) == [(A, "kept")]
    assert gcr.verdicts_due([commit(A, 3)], now=NOW, kept_after_days=2) == [(A, "kept")]


# --- the jobs, against a real local repository --------------------------------------------------------


def git(repo: Path, *args: str, days_old: float = 0, **env: str) -> str:
    when = f"@{int(time.time() - days_old * DAY)} +0000"
    full_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Agent",
        "GIT_AUTHOR_EMAIL": "agent@example.test",
        "GIT_AUTHOR_DATE": when,
        "GIT_COMMITTER_NAME": "Agent",
        "GIT_COMMITTER_EMAIL": "agent@example.test",
        "GIT_COMMITTER_DATE": when,
        **env,
    }
    return subprocess.run(["git", *args], cwd=repo, env=full_env, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def change(repo: Path, name: str, days_old: float) -> str:
    (repo / name).write_text(f"{name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"Add {name}", days_old=days_old)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """The reports the script would send (answered 200 unless a test says otherwise)."""
    bodies: list[dict[str, str]] = []

    def fake_report(body: dict[str, str], env: Any, path: str = gcr.PATH) -> tuple[int, dict[str, object]]:
        bodies.append(body if path == gcr.PATH else {"path": path, **body})
        return 200, {"message": "ok"}

    monkeypatch.setattr(gcr, "report", fake_report)
    return bodies


ENV = {"REASONINGBANK_TOKEN": "rb_test", "REASONINGBANK_URL": "http://service.invalid"}


def test_the_post_commit_hook_ties_head_to_the_agents_session(repo: Path, sent: list[dict[str, str]]) -> None:
    sha = change(repo, "a.txt", 0)
    assert gcr.committed({**ENV, "REASONINGBANK_SESSION_ID": "claude-7"}, None) == 0
    assert sent == [{"session_id": "claude-7", "commit": sha, "status": "committed"}]


def test_a_commit_outside_an_agent_session_is_not_tied(repo: Path, sent: list[dict[str, str]], capsys: Any) -> None:
    change(repo, "a.txt", 0)
    assert gcr.committed(ENV, None) == 0
    assert sent == []  # and without an origin remote, what it changed cannot be reported: it says so
    assert "REASONINGBANK_REPOSITORY" in capsys.readouterr().err


PARSER = "class Parser:\n    def parse(self, text):\n        return text\n\n    def render(self):\n        return ''\n"


def test_the_post_commit_hook_reports_what_the_commit_changed_then_ties_it(
    repo: Path, sent: list[dict[str, Any]]
) -> None:
    git(repo, "remote", "add", "origin", "https://alice:ghp_secret@github.com/acme/api.git")
    (repo / "parser.py").write_text(PARSER)
    git(repo, "add", "parser.py")
    change(repo, "a.txt", 1)  # commits parser.py with it
    (repo / "parser.py").write_text(PARSER.replace("return text", "return text.strip()"))
    git(repo, "add", "parser.py")
    git(repo, "commit", "-q", "-m", "strip")
    sha = git(repo, "rev-parse", "HEAD").strip()

    assert gcr.committed({**ENV, "REASONINGBANK_SESSION_ID": "claude-7"}, None) == 0

    changes, tie = sent
    assert changes["path"] == gcr.CHANGES_PATH and changes["commit"] == sha
    assert changes["repository"] == "https://github.com/acme/api.git"  # the credentials never leave the machine
    assert changes["files"] == [
        {"status": "modified", "path": "parser.py", "hunks": [{"start": 3, "lines": 1}], "symbols": ["Parser.parse"]}
    ]
    assert tie == {"session_id": "claude-7", "commit": sha, "status": "committed"}
    sent.clear()
    assert gcr.committed(ENV, None) == 0  # outside a session: what it changed still counts
    assert [body["path"] for body in sent] == [gcr.CHANGES_PATH]


def test_ci_reports_what_each_commit_of_a_range_changed_oldest_first(repo: Path, sent: list[dict[str, Any]]) -> None:
    first = change(repo, "a.txt", 3)
    second, third = change(repo, "b.txt", 2), change(repo, "c.txt", 1)
    env = {**ENV, "REASONINGBANK_REPOSITORY": "git@github.com:acme/api.git"}

    assert gcr.main(["changes", f"{first}..HEAD"]) == 1  # no token in this process's environment
    assert gcr.changes(env, [f"{first}..HEAD"]) == 0

    assert [(body["commit"], body["files"][0]["path"]) for body in sent] == [(second, "b.txt"), (third, "c.txt")]
    assert {body["repository"] for body in sent} == {"git@github.com:acme/api.git"}


def test_the_hook_never_fails_the_commit(repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    change(repo, "a.txt", 0)
    monkeypatch.setattr(gcr, "report", lambda body, env: (0, {"detail": "could not reach the service"}))
    assert gcr.committed({**ENV, "REASONINGBANK_SESSION_ID": "claude-7"}, None) == 0
    assert "could not reach the service" in capsys.readouterr().err
    assert gcr.committed({"REASONINGBANK_SESSION_ID": "claude-7"}, None) == 0  # no token: says so, exit 0
    assert "REASONINGBANK_TOKEN" in capsys.readouterr().err


def test_verdicts_reports_old_commits_kept_and_reverted_ones_reverted(repo: Path, sent: list[dict[str, str]]) -> None:
    kept = change(repo, "a.txt", 8)
    reverted = change(repo, "b.txt", 8)
    change(repo, "c.txt", 2)  # too young
    git(repo, "revert", "--no-edit", reverted)

    assert gcr.verdicts(ENV, ref="HEAD", kept_after_days=7, window_days=10, dry_run=False) == 0

    assert sent == [{"commit": reverted, "status": "reverted"}, {"commit": kept, "status": "kept"}]


def test_verdicts_skips_commits_of_no_session_and_fails_on_other_errors(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    change(repo, "a.txt", 8)
    monkeypatch.setattr(gcr, "report", lambda body, env: (404, {"detail": "commit not found"}))
    assert gcr.verdicts(ENV, ref="HEAD", kept_after_days=7, window_days=10, dry_run=False) == 0
    assert "skipped" in capsys.readouterr().out
    monkeypatch.setattr(gcr, "report", lambda body, env: (503, {"detail": "database unavailable"}))
    assert gcr.verdicts(ENV, ref="HEAD", kept_after_days=7, window_days=10, dry_run=False) == 1
    assert "database unavailable" in capsys.readouterr().err


def test_a_dry_run_prints_the_verdicts_and_reports_nothing(repo: Path, sent: list[dict[str, str]], capsys: Any) -> None:
    sha = change(repo, "a.txt", 8)
    assert gcr.verdicts({}, ref="HEAD", kept_after_days=7, window_days=10, dry_run=True) == 0
    assert capsys.readouterr().out == f"kept {sha}\n" and sent == []


def test_the_session_start_hook_persists_the_session_id_for_the_agents_shells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "claude-env"
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"session_id": "abc123", "hook_event_name": "SessionStart"}'))
    assert gcr.session_env({"CLAUDE_ENV_FILE": str(env_file)}) == 0
    assert env_file.read_text() == "export REASONINGBANK_SESSION_ID=abc123\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO("not json"))
    assert gcr.session_env({"CLAUDE_ENV_FILE": str(env_file)}) == 0  # never blocks the session
    assert env_file.read_text() == "export REASONINGBANK_SESSION_ID=abc123\n"


def test_the_window_must_be_longer_than_the_kept_delay() -> None:
    with pytest.raises(SystemExit) as exit_:
        gcr.main(["verdicts", "--days", "7", "--window", "7"])
    assert exit_.value.code == 2
