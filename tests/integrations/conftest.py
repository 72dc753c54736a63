"""A stand-in for the service that the hooks under integrations/ talk to: it records what each hook (or the
detached sender a capture hook starts) sent and answers as the service does — or with ``status``, or
with the statuses of ``script`` one after the other, or not until ``gate`` is opened, when a test sets
them. And the hooks' state directory (the queue, the sender's lock), one per test, with any sender
still running at its end stopped."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.hook_state import DELIVERY_WAIT, state_dir_for_test
from tests.http_thread import serving

START_BLOCK = "<memory_consolidated_summaries>\nBuild carts per test.\n</memory_consolidated_summaries>"
MEMORY = {
    "id": "mem_1",
    "title": "Build the cart per test",
    "description": "a shared fixture leaks",
    "content": "Use make_cart().",
    "confidence": 0.7,
}
# what the service frames for an injection (memories/trust/framing.py): the hooks hand it on as it is
PROMPT_BLOCK = (
    "<reasoningbank_memories>\nNotes from your team's memory bank (ReasoningBank).\n"
    '<memory id="mem_1" confidence="0.70" source="recorded by alice@acme.test · 2026-11-30">\n'
    "## Build the cart per test\na shared fixture leaks\nUse make_cart().\n</memory>\n</reasoningbank_memories>"
)


class Stand:
    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.script: list[int] = []  # statuses for the next requests, first to last (0: none); then ``status``
        self.retry_after: str | None = None  # sent with a 429 or 503
        self.gate: threading.Event | None = None  # when set: no answer before it is opened
        self.requests: list[tuple[str, dict[str, Any], str]] = []  # as they arrive
        self.user_agents: list[str] = []  # the User-Agent of each, in the same order
        self.injection_block = PROMPT_BLOCK
        self.arrived: list[float] = []  # time.monotonic() of each arrival
        self.answered = 0
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()

    def wait_for(self, count: int, what: str = "requests") -> list[tuple[str, dict[str, Any], str]]:
        """The requests once ``count`` have arrived (or been answered, ``what="answered"``); fails the
        test after DELIVERY_WAIT seconds."""
        deadline = time.monotonic() + DELIVERY_WAIT
        while (len(self.requests) if what == "requests" else self.answered) < count:
            assert time.monotonic() < deadline, f"{len(self.requests)} request(s), {self.answered} answered"
            time.sleep(0.05)
        return list(self.requests)


@pytest.fixture
def stand() -> Iterator[tuple[Stand, str]]:
    state = Stand()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.requests.append((self.path, body, self.headers.get("Authorization", "")))
                state.user_agents.append(self.headers.get("User-Agent", ""))
                state.arrived.append(time.monotonic())
                status = state.script.pop(0) if state.script else state.status
                state.in_flight += 1
                state.most_in_flight = max(state.most_in_flight, state.in_flight)
            if state.gate is not None:
                state.gate.wait(DELIVERY_WAIT * 2)
            # out of flight before the answer is written: once the client reads it, its next request may
            # arrive before this thread runs again, and must not count as a second one at the same time
            with state.lock:
                state.in_flight -= 1
            try:
                self.answer(status, body)
            finally:
                with state.lock:
                    state.answered += 1

        def answer(self, status: int, body: dict[str, Any]) -> None:
            if status == 0:  # no answer at all: the connection is closed on the request
                self.close_connection = True
                return
            if status != 200:
                answer: dict[str, Any] = {"detail": "Invalid token." if status in (401, 403) else f"status {status}"}
            elif self.path.endswith("/memories/search"):
                answer = {"memories": [MEMORY], "tokens_used": 12, "total_found": 1}
                if body.get("inject"):
                    answer["injection_block"] = state.injection_block
            elif self.path.endswith("/memories/context"):
                answer = {"context_block": START_BLOCK}
            elif self.path.endswith("/memories/recall"):  # tool-time recall: the same framing
                answer = {"memories": [MEMORY], "injection_block": state.injection_block, "tokens_used": 60}
            else:
                answer = {"session_id": body.get("session_id"), "status": "queued"}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if state.retry_after is not None and status in (429, 503):
                self.send_header("Retry-After", state.retry_after)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the hook gave up waiting (its budget): what a slow service does to it

        def log_message(self, *args: Any) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
        if state.gate is not None:
            state.gate.set()


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The hooks' state directory for each test here (tests/hook_state.py)."""
    yield from state_dir_for_test(tmp_path, monkeypatch)
