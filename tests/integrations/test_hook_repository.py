"""The hooks send the working directory's git remote as ``repository`` (docs/code-memory.md#projects-by-repository):
the Claude Code hook run as Claude Code runs it, in a real repository the test makes with git, against the
stand-in service. Without credentials, never with REASONINGBANK_PROJECT set, nothing outside a repository or
without git, and git asked once per working directory for a few minutes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.claude_code_transcript import transcript_text
from tests.hook_modules import repository
from tests.hook_state import hook_env

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git_repository(folder: Path, remote: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, capture_output=True)
    if remote is not None:
        subprocess.run(["git", "-C", str(folder), "remote", "add", "origin", remote], check=True, capture_output=True)
    return folder


def run(action: str, event: dict[str, Any], url: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HOOK), action],
        input=json.dumps(event),
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_x", **env),
        capture_output=True,
        text=True,
        timeout=30,
    )


def prompt(cwd: Path | str) -> dict[str, Any]:
    return {"session_id": "s-1", "hook_event_name": "UserPromptSubmit", "prompt": "why is it flaky?", "cwd": str(cwd)}


def test_the_prompt_and_start_hooks_send_the_working_directorys_remote(stand: Any, tmp_path: Path) -> None:
    state, url = stand
    clone = git_repository(tmp_path / "shop", "git@github.com:acme/shop.git")
    assert run("prompt", prompt(clone / "."), url).stderr == ""
    start = {"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(clone)}
    assert run("session-start", start, url).stderr == ""
    assert [(path, body.get("repository")) for path, body, _ in state.requests] == [
        ("/api/v1/memories/search", "git@github.com:acme/shop.git"),
        ("/api/v1/memories/context", "git@github.com:acme/shop.git"),
    ]
    assert all("project" not in body for _, body, _ in state.requests)


def test_a_capture_hands_in_the_remote_with_the_transcript(stand: Any, tmp_path: Path) -> None:
    state, url = stand
    clone = git_repository(tmp_path / "shop", "https://github.com/acme/shop.git")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(transcript_text(session_id="s-9"))
    event = {"session_id": "s-9", "hook_event_name": "SessionEnd", "transcript_path": str(transcript)}
    event["cwd"] = str(clone)
    assert run("capture", event, url).stderr == ""
    ((path, body, _),) = state.wait_for(1)
    assert path == "/api/v1/sessions" and body["repository"] == "https://github.com/acme/shop.git"


def test_credentials_in_a_remote_never_leave_the_machine(stand: Any, tmp_path: Path) -> None:
    state, url = stand
    clone = git_repository(tmp_path / "shop", "https://alice:ghp_secret123@github.com/acme/shop.git")
    run("prompt", prompt(clone), url)
    ((_, body, _),) = state.requests
    assert body["repository"] == "https://github.com/acme/shop.git"
    assert "ghp_secret123" not in json.dumps(body)


def test_a_named_project_wins_and_no_remote_is_sent(stand: Any, tmp_path: Path) -> None:
    state, url = stand
    clone = git_repository(tmp_path / "shop", "git@github.com:acme/shop.git")
    run("prompt", prompt(clone), url, REASONINGBANK_PROJECT="shop")
    ((_, body, _),) = state.requests
    assert body["project"] == "shop" and "repository" not in body


@pytest.mark.parametrize("where", ["no-repository", "no-remote", "missing"])
def test_without_a_remote_the_call_goes_out_as_before(stand: Any, tmp_path: Path, where: str) -> None:
    state, url = stand
    folder = {
        "no-repository": tmp_path,
        "no-remote": git_repository(tmp_path / "local", None),
        "missing": tmp_path / "gone",
    }[where]
    done = run("prompt", prompt(folder), url)
    assert done.stderr == "" and json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    ((_, body, _),) = state.requests
    assert "repository" not in body


def test_without_git_on_the_path_the_hook_still_sends_the_remote(stand: Any, tmp_path: Path) -> None:
    state, url = stand
    clone = git_repository(tmp_path / "shop", "git@github.com:acme/shop.git")
    python_only = tmp_path / "bin"
    python_only.mkdir()
    done = subprocess.run(
        [sys.executable, str(HOOK), "prompt"],
        input=json.dumps(prompt(clone)),
        env={**hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_x"), "PATH": str(python_only)},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0 and done.stderr == ""
    ((_, body, _),) = state.requests
    assert body["repository"] == "git@github.com:acme/shop.git"  # read from git's own files


def test_the_remote_is_read_from_gits_files_so_a_changed_remote_counts_at_once(tmp_path: Path) -> None:
    clone = git_repository(tmp_path / "shop", "git@github.com:acme/shop.git")
    (clone / "pkg").mkdir()
    assert repository.remote_of(str(clone / "pkg")) == "git@github.com:acme/shop.git"  # from a subdirectory
    subprocess.run(["git", "-C", str(clone), "remote", "set-url", "origin", "git@github.com:acme/new.git"], check=True)
    assert repository.remote_of(str(clone)) == "git@github.com:acme/new.git"


def test_cursor_events_use_their_first_workspace_root() -> None:
    assert repository.working_directory({"workspace_roots": ["/w/shop", "/w/lib"]}) == "/w/shop"
    assert repository.working_directory({"cwd": "/w/api", "workspace_roots": ["/w/shop"]}) == "/w/api"
    assert repository.working_directory({"cwd": 3}) == ""
