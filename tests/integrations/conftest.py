"""A stand-in for the service that the hooks under integrations/ talk to: it records what each hook sent
and answers as the service does (or with ``status``, when a test sets another one)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

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
        self.requests: list[tuple[str, dict[str, Any], str]] = []
        self.injection_block = PROMPT_BLOCK


@pytest.fixture
def stand() -> Iterator[tuple[Stand, str]]:
    state = Stand()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append((self.path, body, self.headers.get("Authorization", "")))
            if state.status != 200:
                answer: dict[str, Any] = {"detail": "Invalid token."}
            elif self.path.endswith("/memories/search"):
                answer = {"memories": [MEMORY], "tokens_used": 12, "total_found": 1}
                if body.get("inject"):
                    answer["injection_block"] = state.injection_block
            elif self.path.endswith("/memories/context"):
                answer = {"context_block": START_BLOCK}
            else:
                answer = {"session_id": body.get("session_id"), "status": "queued"}
            data = json.dumps(answer).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
