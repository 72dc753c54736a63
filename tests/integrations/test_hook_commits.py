"""The Claude Code plugin reports the session's commits (reasoningbank_hooks/commits.py,
docs/code-memory.md#staleness): the session-start hook notes the working tree's HEAD, and each capture
queues — before the transcript — what every commit made since changed (files, old-side hunks, symbols)
and its tie to the session, each commit once; the detached sender posts them. Run as Claude Code runs
the hooks, against a real git repository and the stand-in service."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.agent_hook_events import claude_code_event
from tests.claude_code_transcript import transcript_text
from tests.git_repo import REMOTE, Repo
from tests.hook_state import hook_env, queue_empty_wait

HOOK = Path(__file__).resolve().parents[2] / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py"
KEY = "9f3c2a1e-claude"
PARSER = (
    "class Parser:\n    def parse(self, text):\n        return text.strip()\n\n"
    "    def render(self):\n        return 1\n"
)


def run(action: str, event: dict, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HOOK), action],
        input=json.dumps(event),
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_commits_token"),
        capture_output=True,
        text=True,
        timeout=5,
    )


def test_each_capture_reports_the_commits_made_since_the_session_started_once_before_the_transcript(
    stand, tmp_path, state_dir
):
    state, url = stand
    repo = Repo(tmp_path / "api")
    repo.write("app/parser.py", PARSER)
    repo.commit("before the session", at=0)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(transcript_text(session_id=KEY))
    start = claude_code_event("SessionStart", source="startup", cwd=str(repo.root))
    assert run("session-start", start, url).returncode == 0
    repo.write("app/parser.py", PARSER.replace("text.strip()", "text.strip().lower()"))
    fix = repo.commit("lower-case", at=60)
    stop = claude_code_event("Stop", stop_hook_active=False, cwd=str(repo.root), transcript_path=str(transcript))

    assert run("capture", stop, url).returncode == 0
    queue_empty_wait(state_dir)
    assert run("capture", stop, url).returncode == 0  # nothing new: the commit is not reported twice
    queue_empty_wait(state_dir)

    posted = [(path, body) for path, body, _ in state.requests if path != "/api/v1/memories/context"]
    assert [path for path, _ in posted] == [
        "/api/v1/code/changes",
        "/api/v1/sessions/code-report",
        "/api/v1/sessions",
        "/api/v1/sessions",
    ]
    changes, tie = posted[0][1], posted[1][1]
    assert (changes["repository"], changes["commit"]) == (REMOTE, fix)
    assert changes["files"] == [
        {
            "status": "modified",
            "path": "app/parser.py",
            "hunks": [{"start": 3, "lines": 1}],
            "symbols": ["Parser.parse"],
        }
    ]
    assert tie == {"session_id": KEY, "commit": fix, "status": "committed"}


def test_outside_a_git_repository_the_capture_sends_the_transcript_alone(stand, tmp_path, state_dir):
    state, url = stand
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(transcript_text(session_id=KEY))
    assert (
        run("session-start", claude_code_event("SessionStart", source="startup", cwd=str(tmp_path)), url).returncode
        == 0
    )
    stop = claude_code_event("Stop", stop_hook_active=False, cwd=str(tmp_path), transcript_path=str(transcript))

    done = run("capture", stop, url)
    queue_empty_wait(state_dir)

    assert (done.returncode, done.stderr) == (0, "")
    assert [path for path, _, _ in state.requests if path != "/api/v1/memories/context"] == ["/api/v1/sessions"]
