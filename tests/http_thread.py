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


@contextmanager
def serving(server: Server, name: str = "test-http-server") -> Iterator[Server]:
    """Serves ``server`` until the block ends, then stops and closes it."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, name=name, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
