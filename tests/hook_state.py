"""The state directory of the hooks under integrations/ (their queue, the sender's lock, what a session was
told: integrations/claude-code/hooks/reasoningbank_hooks/spool.py) as the tests that run the hooks use it: one
per test, never the user's own, with any sender still running at its end stopped. Plain helpers, no
Django: the integration tests and the end-to-end tests both use them."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

DELIVERY_WAIT = 30.0  # seconds a test waits for the detached sender: generous, a busy two-core machine


def state_dir_for_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The body of a fixture: ``REASONINGBANK_STATE_DIR`` (which ``hook_env`` passes on) set to a folder
    of the test's, and the senders started in it stopped at the end (one retrying a service that is not
    there runs for minutes)."""
    folder = tmp_path / "state"
    monkeypatch.setenv("REASONINGBANK_STATE_DIR", str(folder))
    yield folder
    senders_stop(folder)


def hook_env(**extra: str) -> dict[str, str]:
    """The environment a hook runs in under test: the PATH, the test's state directory, and ``extra``."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "REASONINGBANK_STATE_DIR": os.environ["REASONINGBANK_STATE_DIR"],
        **extra,
    }


def senders_stop(folder: Path) -> None:
    """Stop the senders the test's hooks started: the processes running the sender in ``folder`` (a hook
    starts its sender there, and has exited by now, so each one it started exists, whether or not it has
    taken its lock yet). By process id, these alone."""
    senders = senders_in(folder)
    for pid in senders:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + DELIVERY_WAIT
    while senders_in(folder):
        assert time.monotonic() < deadline, f"senders still running: {senders_in(folder)}"
        time.sleep(0.05)


def senders_in(folder: Path) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.readlink(proc / "cwd") != str(folder):
                continue
            command = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # another user's, or ended meanwhile
        if any(part.endswith(b"reasoningbank_spool.py") for part in command) and b"send" in command:
            found.append(int(proc.name))
    return found


def queue_files(state_dir: Path) -> list[Path]:
    """The submissions waiting in the queue, oldest first."""
    return sorted((state_dir / "spool").glob("*.json"))


def queue_empty_wait(state_dir: Path) -> None:
    deadline = time.monotonic() + DELIVERY_WAIT
    while queue_files(state_dir):
        assert time.monotonic() < deadline, f"still queued: {queue_files(state_dir)}"
        time.sleep(0.05)
