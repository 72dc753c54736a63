"""A real HTTP server on loopback that answers from a script, for the TypeScript client's tests (its default
transport is Node's own http module, which no mock library of ours reaches): each route answers its queued
answers in turn (the last one again when the queue runs out) and every request is recorded with when it
came, so a test counts attempts and sees the waits between them."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.http_thread import ServerThread


@dataclass
class Answer:
    status: int = 200
    body: Any = None  # JSON, or the str / bytes to send as it is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the status line
    chunks: list[bytes] = field(default_factory=list)  # sent one by one (chunked), `gap` apart
    gap: float = 0.0


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    at: float


class ScriptedServer:
    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Answer]] = {}
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.httpd.daemon_threads = True
        self.served = ServerThread(self.httpd)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def answer(self, method: str, path: str, *answers: Answer) -> None:
        with self.lock:
            self.routes[(method, path)] = list(answers)

    def requests(self, method: str, path: str) -> list[Seen]:
        with self.lock:
            return [seen for seen in self.seen if (seen.method, seen.path) == (method, path)]

    def next_answer(self, method: str, path: str) -> Answer:
        with self.lock:
            queue = self.routes.get((method, path))
            if not queue:
                return Answer(404, {"detail": f"nothing scripted for {method} {path}", "code": "not_found"})
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def respond(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                seen = Seen(self.command, parts.path, parse_qs(parts.query), dict(self.headers), body, time.monotonic())
                with server.lock:
                    server.seen.append(seen)
                answer = server.next_answer(self.command, parts.path)
                time.sleep(answer.delay)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                if answer.chunks:
                    self.send_header("Content-Type", answer.headers.get("Content-Type", "application/x-ndjson"))
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for chunk in answer.chunks:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                        time.sleep(answer.gap)
                    self.wfile.write(b"0\r\n\r\n")
                    return
                raw = answer.body if isinstance(answer.body, bytes) else None
                if raw is None:
                    raw = answer.body.encode() if isinstance(answer.body, str) else json.dumps(answer.body).encode()
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = respond

        return Handler

    def __enter__(self) -> ScriptedServer:
        self.served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.served.stop()


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def unanswered_listener() -> Iterator[tuple[str, int]]:
    """A listening socket whose accept queue is full, so that a further connection never opens: Linux drops
    the SYN of a connection a full queue cannot take, and the client waits out its connect timeout."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    address = server.getsockname()
    fillers = []
    for _ in range(8):  # enough to fill the queue of the smallest backlog the kernel rounds 0 up to
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(address)
        fillers.append(filler)
    try:
        yield address[0], int(address[1])
    finally:
        for filler in fillers:
            filler.close()
        server.close()
