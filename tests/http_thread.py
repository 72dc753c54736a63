"""A test's HTTP server on a thread of its own, stopped in a fiftieth of a second.

``socketserver``'s ``serve_forever`` looks for a stop request every ``poll_interval`` seconds, half a
second by default, so ``shutdown()`` waits up to that long: half a second at the end of every test
with a server of its own, about fifteen seconds of the fast tier's wall time before this module.
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

# often enough that a stop is quick, rarely enough that an idle server costs nothing measurable
POLL_SECONDS = 0.02

Server = TypeVar("Server", bound=socketserver.BaseServer)


class ServerThread:
    """``server`` served on a daemon thread between ``start()`` and ``stop()`` (which also closes it)."""

    def __init__(self, server: socketserver.BaseServer, name: str = "test-http-server") -> None:
        self.server = server
        self.thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, name=name, daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@contextmanager
def serving(server: Server, name: str = "test-http-server") -> Iterator[Server]:
    """Serves ``server`` until the block ends, then stops and closes it."""
    served = ServerThread(server, name)
    served.start()
    try:
        yield server
    finally:
        served.stop()
