"""The capture hooks hand off (docs/claude-code.md#capture-hand-off): each client's capture hook, run as its
client runs it (its documented event on stdin, its transcript at ``transcript_path``, its output read
until the pipes close), queues the submission and exits while the service has not answered; the
detached sender it starts posts the queue — one sender at a time, retrying what the service could not
take now (408, 429, 5xx, no answer) with backoff that honours ``Retry-After``, dropping what it refused
for good, giving up after ``REASONINGBANK_SEND_SECONDS`` and leaving the rest for the next hook. The
queue is the user's alone (0700, files 0600, no token in it) and bounded, the oldest dropped and counted.

No clock is asserted but lower bounds: the order of events proves the hand-off (the hook has exited, the
sender's request has arrived and hangs, and only then is the service let answer)."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.agent_hook_events import claude_code_event, codex_event, cursor_event, gemini_event
from tests.agent_transcripts import codex_rollout_text, cursor_transcript_text, gemini_session_text
from tests.claude_code_transcript import transcript_text
from tests.hook_modules import spool
from tests.hook_state import DELIVERY_WAIT, hook_env, queue_empty_wait, queue_files

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {
    "claude-code": REPO / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py",
    "codex": REPO / "integrations" / "codex" / "reasoningbank_codex.py",
    "gemini": REPO / "integrations" / "gemini-cli" / "reasoningbank_gemini.py",
    "cursor": REPO / "integrations" / "cursor" / "reasoningbank_cursor.py",
}
# each client's last capture of a session: the event its hook file runs the capture hook on
ENDINGS: dict[str, dict[str, Any]] = {
    "claude-code": claude_code_event("SessionEnd", reason="prompt_input_exit"),
    "codex": codex_event("Stop", stop_hook_active=False, last_assistant_message="Done."),
    "gemini": gemini_event("SessionEnd", reason="exit"),
    "cursor": cursor_event("sessionEnd", session_id="c0ffee00-cursor", reason="user_close", duration_ms=61000),
}
TRANSCRIPTS: dict[str, Callable[[str], str]] = {
    "claude-code": lambda key: transcript_text(session_id=key),
    "codex": lambda key: codex_rollout_text(session_id=key),
    "gemini": lambda key: gemini_session_text(session_id=key),
    "cursor": lambda key: cursor_transcript_text(),
}
TRACE_FORMATS = {
    "claude-code": "claude-code-jsonl",
    "codex": "codex-rollout-jsonl",
    "gemini": "gemini-cli-json",
    "cursor": "cursor-jsonl",
}
HOOK_TIMEOUT = 5  # the timeout every client's hook file sets (tests/integrations/test_hook_input_bounds.py)
TOKEN = "rb_handoff_secret_token"


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens there once the socket closes


def capture(
    client: str, tmp_path: Path, url: str, *, session: str = "", event: dict[str, Any] | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """The client's capture hook on a transcript of its own format, as the client runs it: the output
    read until both pipes close (a sender that kept them would hold the hook up past HOOK_TIMEOUT)."""
    event = dict(event or ENDINGS[client])
    key = session or event.get("session_id") or event["conversation_id"]
    if session and client == "cursor":
        event["conversation_id"] = session
    elif session:
        event["session_id"] = session
    transcript = tmp_path / f"{client}-{key}.transcript"
    transcript.write_text(TRANSCRIPTS[client](key))
    return subprocess.run(
        [sys.executable, str(SCRIPTS[client]), "capture"],
        input=json.dumps({**event, "transcript_path": str(transcript)}),
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN=TOKEN, **env),
        capture_output=True,
        text=True,
        timeout=HOOK_TIMEOUT,
    )


def sender_gone_wait(state_dir: Path) -> None:
    """Until no sender holds a lock in ``state_dir``."""
    deadline = time.monotonic() + DELIVERY_WAIT
    for lock in state_dir.glob("sender-*.lock"):
        fd = os.open(lock, os.O_RDWR)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the sender is still running"
                    time.sleep(0.05)
        finally:
            os.close(fd)


# --- the hand-off --------------------------------------------------------------------------------------


@pytest.mark.parametrize("client", list(SCRIPTS))
def test_the_capture_hook_exits_before_a_hanging_service_answers_and_the_sender_delivers_the_submission_later(
    client, stand, tmp_path, state_dir
):
    state, url = stand
    state.gate = threading.Event()  # the service takes the request and does not answer
    done = capture(client, tmp_path, url)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")  # the hook has exited, its pipes closed
    ((path, body, authorization),) = state.wait_for(1)  # the sender's POST has arrived since, and hangs
    assert state.answered == 0 and len(queue_files(state_dir)) == 1  # kept until the service says it has it
    state.gate.set()
    state.wait_for(1, "answered")
    queue_empty_wait(state_dir)
    assert (path, body["trace_format"], authorization) == ("/api/v1/sessions", TRACE_FORMATS[client], f"Bearer {TOKEN}")
    assert body["session_id"] == ENDINGS[client].get("conversation_id", ENDINGS[client]["session_id"])
    assert body["partial"] is (client == "codex") and "Thanks, that works now." in body["trace"]


def test_one_sender_at_a_time_posts_the_queue_oldest_first(stand, tmp_path, state_dir):
    state, url = stand
    state.gate = threading.Event()
    for key in ("s1", "s2", "s3"):
        assert capture("claude-code", tmp_path, url, session=key).returncode == 0
    state.wait_for(1)
    assert len(queue_files(state_dir)) == 3  # the first still being posted, two waiting behind it
    state.gate.set()
    sent = state.wait_for(3, "answered")
    queue_empty_wait(state_dir)
    assert [body["session_id"] for _, body, _ in sent] == ["s1", "s2", "s3"]
    assert state.most_in_flight == 1


def test_a_newer_capture_of_a_session_supersedes_the_one_still_queued(tmp_path, state_dir):
    url = closed_url()
    stop = claude_code_event("Stop", stop_hook_active=False)
    capture("claude-code", tmp_path, url, event=stop, REASONINGBANK_SEND_SECONDS="1")
    capture("claude-code", tmp_path, url, REASONINGBANK_SEND_SECONDS="1")  # the SessionEnd of the same session
    (queued,) = queue_files(state_dir)
    assert json.loads(queued.read_text())["body"]["partial"] is False


# --- retries -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [503, 429, 408, 500, 0], ids=["503", "429", "408", "500", "no-answer"])
def test_a_submission_the_service_cannot_take_now_is_sent_again_until_it_is_accepted(
    status, stand, tmp_path, state_dir
):
    state, url = stand
    state.script = [status]
    state.retry_after = "0"
    capture("claude-code", tmp_path, url)
    first, second = state.wait_for(2, "answered")
    queue_empty_wait(state_dir)
    assert first == second and len(state.requests) == 2  # the same submission, accepted the second time


def test_the_sender_waits_the_retry_after_the_service_asks_for(stand, tmp_path, state_dir):
    state, url = stand
    state.script = [503, 503]
    state.retry_after = "1"
    capture("claude-code", tmp_path, url)
    state.wait_for(3, "answered")
    queue_empty_wait(state_dir)
    gaps = [later - earlier for earlier, later in zip(state.arrived, state.arrived[1:], strict=False)]
    assert min(gaps) >= 0.9  # a lower bound only: no sooner than asked
    log = (state_dir / "sender.log").read_text()
    assert log.count("answered 503") == 2 and log.count("answered 200") == 1


def test_without_retry_after_the_sender_backs_off_exponentially(stand, tmp_path, state_dir):
    state, url = stand
    state.script = [503, 503, 503]
    capture("claude-code", tmp_path, url)
    state.wait_for(4, "answered")
    gaps = [later - earlier for earlier, later in zip(state.arrived, state.arrived[1:], strict=False)]
    # the pauses are 1, 2 and 4 s with up to half taken off at random: lower bounds only
    assert gaps[0] >= 0.45 and gaps[1] >= 0.95 and gaps[2] >= 1.95


@pytest.mark.parametrize("status", [400, 401, 403, 413, 422])
def test_a_submission_refused_for_good_is_dropped_without_a_second_try(status, stand, tmp_path, state_dir):
    state, url = stand
    state.status = status
    capture("claude-code", tmp_path, url)
    state.wait_for(1, "answered")
    queue_empty_wait(state_dir)
    sender_gone_wait(state_dir)
    assert len(state.requests) == 1


def test_a_sender_that_gives_up_leaves_the_submission_for_the_next_hook_which_sends_it(stand, tmp_path, state_dir):
    state, url = stand
    state.status, state.retry_after = 503, "5"  # the next try would come after the sender's time is up
    capture("claude-code", tmp_path, url, REASONINGBANK_SEND_SECONDS="2")
    state.wait_for(1, "answered")
    sender_gone_wait(state_dir)
    assert len(queue_files(state_dir)) == 1 and len(state.requests) == 1
    assert "gave up for now: 1 submission(s) left for the next hook" in (state_dir / "sender.log").read_text()
    state.status = 200
    prompt = claude_code_event("UserPromptSubmit", session_id="next-session", prompt="how do we deploy?")
    asked = subprocess.run(
        [sys.executable, str(SCRIPTS["claude-code"]), "prompt"],
        input=json.dumps(prompt),
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN=TOKEN),
        capture_output=True,
        text=True,
        timeout=HOOK_TIMEOUT,
    )
    assert "mem_1" in asked.stdout
    queue_empty_wait(state_dir)  # the prompt hook found the service up and started the sender again
    assert [path for path, _, _ in state.requests] == [
        "/api/v1/sessions",
        "/api/v1/memories/search",
        "/api/v1/sessions",
    ]


# --- the queue -------------------------------------------------------------------------------------------------


def test_the_queue_is_the_users_alone_and_holds_no_token(tmp_path, state_dir):
    capture("claude-code", tmp_path, closed_url(), REASONINGBANK_SEND_SECONDS="1")
    (queued,) = queue_files(state_dir)
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((state_dir / "spool").stat().st_mode) == 0o700
    assert stat.S_IMODE(queued.stat().st_mode) == 0o600
    assert [path.name for path in (state_dir / "spool").iterdir()] == [queued.name]  # no temporary file left
    sender_gone_wait(state_dir)
    assert not [path for path in state_dir.rglob("*") if path.is_file() and TOKEN.encode() in path.read_bytes()]


def test_a_full_queue_drops_its_oldest_submissions_and_counts_them(tmp_path, state_dir):
    url = closed_url()
    bounds = {"REASONINGBANK_SPOOL_MAX_FILES": "2", "REASONINGBANK_SEND_SECONDS": "1"}
    for key in ("s1", "s2"):
        assert capture("claude-code", tmp_path, url, session=key, **bounds).stderr == ""
    third = capture("claude-code", tmp_path, url, session="s3", **bounds)
    assert third.returncode == 0 and "the local queue was full: dropped the oldest 1 submission(s)" in third.stderr
    assert [json.loads(path.read_text())["body"]["session_id"] for path in queue_files(state_dir)] == ["s2", "s3"]
    assert json.loads((state_dir / "dropped.json").read_text())["dropped"] == 1


def test_without_a_state_directory_to_write_the_hook_posts_the_submission_itself(stand, tmp_path):
    state, url = stand
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # where the state directory should be: nothing can be made under it
    done = capture("claude-code", tmp_path, url, REASONINGBANK_STATE_DIR=str(blocked / "state"))
    assert done.returncode == 0 and "sent directly" in done.stderr and len(done.stderr.splitlines()) == 1
    ((path, body, _),) = state.requests  # posted before the hook exited: no sender, nothing waits
    assert path == "/api/v1/sessions" and body["trace_format"] == "claude-code-jsonl" and state.answered == 1


def test_the_queue_keeps_within_its_megabytes(tmp_path, monkeypatch):
    monkeypatch.setenv("REASONINGBANK_SPOOL_MAX_MB", "1")
    who = spool.Credential("http://127.0.0.1:1", TOKEN)
    for key in ("s1", "s2", "s3"):
        spool.spool_write("/api/v1/sessions", {"session_id": key, "trace": "x" * 400_000}, key, who)
    kept = [json.loads(entry.path.read_text())["body"]["session_id"] for entry in spool.pending(who)]
    assert kept == ["s2", "s3"] and spool.dropped_count() == 1


def test_a_sender_posts_only_what_was_queued_with_its_own_service_and_token(tmp_path):
    mine, other_token, other_service = (
        spool.Credential("http://127.0.0.1:1", TOKEN),
        spool.Credential("http://127.0.0.1:1", "rb_other"),
        spool.Credential("http://127.0.0.1:2", TOKEN),
    )
    for who in (mine, other_token, other_service):
        spool.spool_write("/api/v1/sessions", {"session_id": "s"}, "s", who)
    assert len(spool.pending(mine)) == len(spool.pending(other_token)) == len(spool.pending(other_service)) == 1


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("7", 7.0), ("0", 0.0), (None, None), ("soon", None), ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0)],
)
def test_retry_after_is_read_in_seconds_or_as_an_http_date(header, seconds):
    assert spool.retry_after_seconds(header) == seconds
