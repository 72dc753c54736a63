"""A slow-loris receiver: a real TCP server on loopback that answers one byte at a time, a byte every
``interval`` seconds, so that no single read of the client ever waits long enough to time out.

``mode`` says where it dribbles:

* ``"headers"`` — plain HTTP: the status line and headers, byte by byte (then, if the client is still
  there after ``max_seconds``, the rest at once);
* ``"body"`` — plain HTTP: the status line and headers at once, then a body that never ends;
* ``"tls"`` — an https URL: the first bytes of a TLS handshake record (a ServerHello that never
  completes), so the client is stuck in its handshake.

It records every connection (when it opened, when the client went away) so that a test can count how
many were open at once. No Django: the unit tests and the end-to-end tests both use it.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["headers", "body", "tls"]

_HTTP_ANSWER = b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_HTTP_HEAD_ENDLESS_BODY = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
# a TLS record header (handshake, TLS 1.2, 16 KiB to follow), then the record's bytes one by one
_TLS_RECORD_START = b"\x16\x03\x03\x40\x00"


@dataclass
class Connection:
    opened: float
    closed: float | None = None
    sent: int = 0


@dataclass
class SlowReceiver:
    mode: Mode = "headers"
    interval: float = 1.0
    max_seconds: float = 60.0  # a client that never hangs up is let go after this long
    connections: list[Connection] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._serve, name="slow-receiver", daemon=True)

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def url(self, path: str = "/hook") -> str:
        scheme = "https" if self.mode == "tls" else "http"
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> SlowReceiver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    # -- what a test reads --

    def opened(self) -> int:
        with self._lock:
            return len(self.connections)

    def open_now(self) -> int:
        with self._lock:
            return sum(1 for c in self.connections if c.closed is None)

    def most_open_at_once(self) -> int:
        """The largest number of connections open at the same moment, over the receiver's life."""
        with self._lock:
            events = sorted(
                [(c.opened, 1) for c in self.connections]
                + [(c.closed if c.closed is not None else float("inf"), -1) for c in self.connections],
                key=lambda e: (e[0], e[1]),  # a close before an open at the same instant
            )
        most = now = 0
        for _, step in events:
            now += step
            most = max(most, now)
        return most

    def durations(self) -> list[float]:
        """How long each finished connection stayed open, in seconds."""
        with self._lock:
            return [c.closed - c.opened for c in self.connections if c.closed is not None]

    # -- the server --

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn = Connection(opened=time.monotonic())
            with self._lock:
                self.connections.append(conn)
            threading.Thread(target=self._dribble, args=(client, conn), daemon=True).start()

    def _dribble(self, client: socket.socket, conn: Connection) -> None:
        first, rest = {
            "headers": (b"", _HTTP_ANSWER),
            "body": (_HTTP_HEAD_ENDLESS_BODY, b"1\r\nx\r\n" * 100_000),
            "tls": (_TLS_RECORD_START, b"\x00" * 16384),
        }[self.mode]
        try:
            client.setblocking(True)
            client.settimeout(2)
            with contextlib.suppress(TimeoutError):
                client.recv(65536)  # the request (or the TLS ClientHello): read, not looked at
            if first:
                client.sendall(first)
                conn.sent += len(first)
            until = time.monotonic() + self.max_seconds
            for i in range(len(rest)):
                if self._stop.is_set() or time.monotonic() > until:
                    break
                # wait one interval, watching for the client hanging up (readable and empty)
                readable, _, _ = select.select([client], [], [], self.interval)
                if readable and not client.recv(65536):
                    return
                client.sendall(rest[i : i + 1])
                conn.sent += 1
            if self.mode == "headers" and not self._stop.is_set():
                client.sendall(rest[conn.sent :])  # a client patient enough gets its answer in the end
                # and then the receiver waits for the client to hang up
                client.settimeout(5)
                with contextlib.suppress(OSError):
                    client.recv(1)
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                client.close()
            with self._lock:
                conn.closed = time.monotonic()
