"""Reading a request body at the ASGI layer, and handing it on as if unread.

Two layers read a body before the app does: the guards in front of the whole service
(``reasoningbank/asgi_guards.py``: size, chunked bodies, nesting for the MCP SDK) and the MCP id check
(``reasoningbank/mcp_errors.py``). No Django here: the MCP id check is pure.
"""

from __future__ import annotations

from reasoningbank.request_context import Message, Receive

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract


class BodyTooLarge(Exception):
    """The body grew past the limit given to ``body_read``."""


async def body_read(receive: Receive, limit: int | None = None) -> bytes | None:
    """The whole request body, or None when the client went away; ``BodyTooLarge`` past ``limit``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def body_replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body already read, then whatever comes next (a disconnect)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
