"""Every hook under integrations/ reads bounded input (docs/security/hooks.md). Each client's capture hook,
run as its client runs it (a process given the client's documented event on stdin), is pointed at a
``transcript_path`` that is no transcript — a device that never ends, a FIFO without a writer or with one
that never closes, a directory, a sparse file of a terabyte — and exits 0 within the timeout its client's
hook file sets: nothing on stdout, one line on stderr naming the reason, nothing sent. A stdin that never
ends is not waited for past the hook's budget. The bytes a hook takes from a file are counted: never past
its bound. And a real transcript, short or too long to read whole, is still handed in.

The hooks run under a 1 GiB address-space limit, so that a hook reading without bound fails here in
seconds instead of filling the machine's memory."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests import hook_modules, hook_state
from tests.agent_hook_events import claude_code_event, codex_event, cursor_event, gemini_event
from tests.agent_transcripts import codex_rollout_text, cursor_transcript_text, gemini_session_text
from tests.claude_code_transcript import transcript_text
from tests.hook_state import queue_files

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {
    "claude-code": REPO / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py",
    "codex": REPO / "integrations" / "codex" / "reasoningbank_codex.py",
    "gemini": REPO / "integrations" / "gemini-cli" / "reasoningbank_gemini.py",
    "cursor": REPO / "integrations" / "cursor" / "reasoningbank_cursor.py",
}
CLIENTS = list(SCRIPTS)
AGENTS = {"claude-code": "claude-code", "codex": "codex", "gemini": "gemini-cli", "cursor": "cursor"}  # adapters
# the event each client gives its capture hook (the hook that reads the transcript)
CAPTURE_EVENTS = {
    "claude-code": claude_code_event("Stop", stop_hook_active=False),
    "codex": codex_event("Stop", stop_hook_active=False, last_assistant_message="Done."),
    "gemini": gemini_event("AfterAgent", prompt="fix it", prompt_response="Done.", stop_hook_active=False),
    "cursor": cursor_event("stop", status="completed", loop_count=0),
}
TRANSCRIPTS: dict[str, Callable[[], str]] = {
    "claude-code": lambda: transcript_text(session_id=CAPTURE_EVENTS["claude-code"]["session_id"]),
    "codex": lambda: codex_rollout_text(session_id=CAPTURE_EVENTS["codex"]["session_id"]),
    "gemini": lambda: gemini_session_text(session_id=CAPTURE_EVENTS["gemini"]["session_id"]),
    "cursor": cursor_transcript_text,
}
TRACE_FORMATS = {
    "claude-code": "claude-code-jsonl",
    "codex": "codex-rollout-jsonl",
    "gemini": "gemini-cli-json",
    "cursor": "cursor-jsonl",
}
TERABYTE = 1 << 40
MEMORY_LIMIT = 1 << 30


def client_timeout(client: str) -> float:
    """The seconds the client lets the capture hook run before it kills it, from the hook file it is
    installed with (Gemini CLI counts milliseconds, the others seconds)."""
    if client == "claude-code":
        config = json.loads((REPO / "integrations/claude-code/hooks/hooks.json").read_text())["hooks"]
        return float(config["Stop"][0]["hooks"][0]["timeout"])
    if client == "codex":
        config = json.loads((REPO / "integrations/codex/hooks.json").read_text())["hooks"]
        return float(config["Stop"][0]["hooks"][0]["timeout"])
    if client == "gemini":
        config = json.loads((REPO / "integrations/gemini-cli/settings.json").read_text())["hooks"]
        return config["AfterAgent"][0]["hooks"][0]["timeout"] / 1000
    config = json.loads((REPO / "integrations/cursor/hooks.json").read_text())["hooks"]
    return float(config["stop"][0].get("timeout", 0))


def memory_limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def hook_env(url: str, **extra: str) -> dict[str, str]:
    return hook_state.hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_test", **extra)


def capture_run(client: str, path: str, url: str) -> subprocess.CompletedProcess[str]:
    """The client's capture hook on ``path``; TimeoutExpired (a failed test) if it outlives the timeout
    its client would kill it at."""
    timeout = client_timeout(client)
    assert timeout > 0, f"{client}'s hook file sets no timeout"
    return subprocess.run(
        [sys.executable, str(SCRIPTS[client]), "capture"],
        input=json.dumps({**CAPTURE_EVENTS[client], "transcript_path": path}),
        env=hook_env(url),
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=memory_limited,
    )


@contextmanager
def not_a_transcript(kind: str, tmp_path: Path) -> Iterator[str]:
    """A path that is no transcript, of the given kind, for as long as the block runs."""
    if kind in ("/dev/zero", "/dev/urandom"):
        yield kind
        return
    if kind == "directory":
        yield str(tmp_path)
        return
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    if kind == "fifo-without-writer":
        yield str(fifo)
        return
    # a writer that has written a line and never closes: a reader that waits for the end waits for ever
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    os.write(writer, (TRANSCRIPTS["cursor"]().splitlines()[0] + "\n").encode())
    try:
        yield str(fifo)
    finally:
        os.close(writer)


REFUSALS = {
    "/dev/zero": "a character device",
    "/dev/urandom": "a character device",
    "fifo-without-writer": "a FIFO",
    "fifo-never-closed": "a FIFO",
    "directory": "a directory",
}


@pytest.mark.parametrize("kind", list(REFUSALS))
@pytest.mark.parametrize("client", CLIENTS)
def test_a_transcript_path_that_is_no_regular_file_is_refused_in_time_with_one_line_and_nothing_sent(
    client, kind, stand, tmp_path, state_dir
):
    state, url = stand
    with not_a_transcript(kind, tmp_path) as path:
        done = capture_run(client, path, url)
    assert (done.returncode, done.stdout, state.requests, queue_files(state_dir)) == (0, "", [], [])
    (line,) = done.stderr.splitlines()
    assert f"is {REFUSALS[kind]}, not a regular file: not read" in line, line


@pytest.mark.parametrize("client", CLIENTS)
def test_a_terabyte_sparse_file_is_read_in_time_at_its_two_ends_and_sends_nothing(client, stand, tmp_path, state_dir):
    state, url = stand
    huge = tmp_path / "transcript.jsonl"
    with huge.open("wb") as file:
        file.truncate(TERABYTE)  # a terabyte of holes: no conversation in it
    done = capture_run(client, str(huge), url)
    assert (done.returncode, done.stdout, done.stderr, state.requests, queue_files(state_dir)) == (0, "", "", [], [])


# --- the bytes read, counted ------------------------------------------------------------------------------


def transcript_read(client: str, path: str, limit: int) -> int:
    """What the client's capture reads of ``path``: how many messages it found."""
    return hook_modules.transcript_read(AGENTS[client], path, limit)[1]


@contextmanager
def bytes_counted() -> Iterator[list[int]]:
    """Every byte ``os.read`` returns while the block runs (the hooks read files with it)."""
    counted: list[int] = []
    real = os.read

    def counting(fd: int, n: int) -> bytes:
        data = real(fd, n)
        counted.append(len(data))
        return data

    os.read = counting
    try:
        yield counted
    finally:
        os.read = real


@pytest.mark.parametrize("client", CLIENTS)
def test_of_a_terabyte_file_a_hook_reads_no_more_than_its_bound(client, tmp_path):
    limit = 500_000
    bound = hook_modules.reading.HEAD_BYTES + hook_modules.reading.TAIL_FACTOR * limit
    huge = tmp_path / "transcript"
    with huge.open("wb") as file:
        file.write(TRANSCRIPTS[client]().encode())
        file.truncate(TERABYTE)
    with bytes_counted() as counted:
        transcript_read(client, str(huge), limit)
    assert 0 < sum(counted) <= bound < TERABYTE / 100_000


@pytest.mark.timeout(60)
@pytest.mark.parametrize("client", CLIENTS)
def test_a_fifo_swapped_in_after_the_check_is_refused_on_the_opened_descriptor_without_blocking(
    client, tmp_path, monkeypatch
):
    regular = tmp_path / "regular.jsonl"
    regular.write_text(TRANSCRIPTS[client]())
    fifo = tmp_path / "swapped.jsonl"
    os.mkfifo(fifo)
    real_stat = os.stat

    def stat_before_the_swap(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return real_stat(regular if str(path) == str(fifo) else path, *args, **kwargs)

    # should an open block on the FIFO, a writer comes and goes after 10 s: the test fails instead of hanging
    rescue = threading.Timer(10, lambda: os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)))
    rescue.start()
    monkeypatch.setattr(os, "stat", stat_before_the_swap)
    started = time.monotonic()
    try:
        with pytest.raises(Exception, match="is a FIFO, not a regular file"):
            transcript_read(client, str(fifo), 500_000)
    finally:
        monkeypatch.undo()
        rescue.cancel()
    assert time.monotonic() - started < 10


# --- stdin ----------------------------------------------------------------------------------------------


def stdin_held_open(client: str, sent: bytes, url: str, **env: str) -> tuple[int, str, str]:
    """The client's capture hook given ``sent`` on a stdin that is never closed."""
    process = subprocess.Popen(
        [sys.executable, str(SCRIPTS[client]), "capture"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hook_env(url, **env),
        preexec_fn=memory_limited,
    )
    assert process.stdin and process.stdout and process.stderr
    try:
        process.stdin.write(sent)
        process.stdin.flush()
        code = process.wait(timeout=client_timeout(client))
        return code, process.stdout.read().decode(), process.stderr.read().decode()
    finally:
        process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()
        process.stderr.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_a_stdin_that_never_ends_is_given_up_at_the_budget_with_one_line(client, stand):
    state, url = stand
    half = json.dumps(CAPTURE_EVENTS[client])[:40].encode()
    code, out, err = stdin_held_open(client, half, url, REASONINGBANK_TIMEOUT="1")
    assert (code, out, state.requests) == (0, "", [])
    (line,) = err.splitlines()
    assert "the hook event on stdin did not end within the 1 s budget: not read" in line


@pytest.mark.parametrize("client", CLIENTS)
def test_a_whole_event_on_a_stdin_left_open_is_handled_without_waiting_for_the_end(client, stand, tmp_path):
    state, url = stand
    transcript = tmp_path / "session"
    transcript.write_text(TRANSCRIPTS[client]())
    event = json.dumps({**CAPTURE_EVENTS[client], "transcript_path": str(transcript)}).encode()
    code, out, err = stdin_held_open(client, event, url)
    assert (code, out, err) == (0, "", "")
    assert [body["trace_format"] for _, body, _ in state.wait_for(1)] == [TRACE_FORMATS[client]]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_stdin_that_is_a_device_is_read_to_its_bound_and_refused(client, stand):
    state, url = stand
    with open("/dev/zero", "rb") as zeros:
        done = subprocess.run(
            [sys.executable, str(SCRIPTS[client]), "capture"],
            stdin=zeros,
            env=hook_env(url),
            capture_output=True,
            text=True,
            timeout=client_timeout(client),
            preexec_fn=memory_limited,
        )
    assert (done.returncode, done.stdout, state.requests) == (0, "", [])
    (line,) = done.stderr.splitlines()
    assert "the hook event on stdin is larger than 8 MiB: not read" in line


# --- real transcripts, still handed in ----------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_a_real_transcript_is_still_handed_in(client, stand, tmp_path):
    state, url = stand
    transcript = tmp_path / "session"
    transcript.write_text(TRANSCRIPTS[client]())
    done = capture_run(client, str(transcript), url)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    ((path, body, _),) = state.wait_for(1)
    assert path == "/api/v1/sessions" and body["trace_format"] == TRACE_FORMATS[client]
    assert "Thanks, that works now." in body["trace"]


def test_a_gemini_recording_too_long_to_read_whole_is_sent_from_its_two_ends(stand, tmp_path):
    state, url = stand
    record = json.loads(gemini_session_text(session_id="g-long", marker="E2E-long"))
    # braces in the text, as code in a tool's output has them: a cut must not take them for messages
    filler = [{"id": f"f{i}", "type": "gemini", "content": "if x { y(); } " * 160} for i in range(300)]
    record["messages"] = record["messages"][:1] + filler + record["messages"][1:]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(record, indent=2))  # Gemini CLI writes its recordings indented
    limit = 20_000  # read bound: 256 KiB + 4 x 20,000 bytes, far less than the 700 KB recording
    assert path.stat().st_size > 256 * 1024 + 4 * limit
    event = {**gemini_event("SessionEnd", reason="exit"), "transcript_path": str(path)}
    done = subprocess.run(
        [sys.executable, str(SCRIPTS["gemini"]), "capture"],
        input=json.dumps(event),
        env=hook_env(url, REASONINGBANK_TRACE_MAX_BYTES=str(limit)),
        capture_output=True,
        text=True,
        timeout=client_timeout("gemini"),
    )
    assert done.stderr == ""
    trace = state.wait_for(1)[0][1]["trace"]
    sent = json.loads(trace)
    assert len(trace.encode()) <= limit and sent["sessionId"] == "g-long"
    assert "E2E-long" in sent["messages"][0]["content"] and sent["messages"][-1]["content"] == "Thanks, that works now."
    ids = [message["id"] for message in sent["messages"]]
    assert ids == [message["id"] for message in record["messages"] if message["id"] in ids]  # in order, whole
    assert 2 < len(ids) < 30


# --- the hook files ------------------------------------------------------------------------------------------


def test_every_clients_hook_file_sets_a_timeout_on_every_hook_above_the_hooks_budget():
    budget = 2  # REASONINGBANK_TIMEOUT's default, in seconds
    files = {
        "integrations/claude-code/hooks/hooks.json": 1,  # Claude Code: seconds
        "integrations/codex/hooks.json": 1,  # Codex: seconds
        "integrations/gemini-cli/settings.json": 1000,  # Gemini CLI: milliseconds
        "integrations/cursor/hooks.json": 1,  # Cursor: seconds
    }
    for name, per_second in files.items():
        for event, groups in json.loads((REPO / name).read_text())["hooks"].items():
            for group in groups:
                for hook in group.get("hooks", [group]):
                    assert hook.get("timeout", 0) / per_second > budget, (name, event)
