"""Bounded input (docs/security/hooks.md): what a hook reads — the event on stdin, the transcript it names —
is bounded in bytes and in time, and only a regular file is read at all. Every agent's hook reads through
here."""

from __future__ import annotations

import json
import os
import queue
import stat
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .budget import budget, deadline_check, seconds_left
from .errors import HookError

# What a hook reads of a transcript: at most its first HEAD_BYTES (for the first prompt, the task) and its
# last TAIL_FACTOR x REASONINGBANK_TRACE_MAX_BYTES, the margin for the bulk each client writes beside the
# conversation (tool results' copies, encrypted reasoning, token counts) that the hook drops before sending
HEAD_BYTES = 256 * 1024
TAIL_FACTOR = 4
EVENT_MAX_BYTES = 8 * 1024 * 1024  # the hook event on stdin: a prompt pasted whole fits
READ_CHUNK = 64 * 1024  # the deadline is checked between reads of this size
FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


# --- the event on stdin ----------------------------------------------------------------------------------


def event_read() -> dict[str, Any]:
    """The client's hook event: a JSON object on stdin (every client these hooks serve sends one)."""
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    raw = stream_read_bounded(sys.stdin.fileno(), EVENT_MAX_BYTES, "hook event on stdin")
    try:
        event = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise HookError(f"the hook event on stdin is not JSON ({exc})") from None
    if not isinstance(event, dict):
        raise HookError("the hook event on stdin is not a JSON object")
    return event


def stream_read_bounded(fd: int, limit: int, what: str) -> bytes:
    """What arrives on ``fd`` (stdin: a pipe, a file, a device) until it ends, within ``limit`` bytes and
    the hook's deadline. A writer that sends a whole JSON object and keeps the pipe open is not waited
    for: the bytes are complete as soon as they parse. The reads run in a daemon thread because a read
    from a pipe cannot be given a timeout on every platform; past the deadline the hook goes on
    without it, and exits."""
    arrived: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        total = 0
        while total <= limit:  # the thread stops at the limit too: it never reads a device for ever
            try:
                chunk = os.read(fd, READ_CHUNK)
            except BlockingIOError:  # a non-blocking descriptor inherited from the client
                time.sleep(0.01)
                continue
            except OSError:
                chunk = b""
            arrived.put(chunk)
            if not chunk:
                return
            total += len(chunk)

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    data = bytearray()
    while True:
        try:
            chunk = arrived.get(timeout=seconds_left())
        except queue.Empty:
            raise HookError(f"the {what} did not end within the {budget():g} s budget: not read") from None
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > limit:
            raise HookError(f"the {what} is larger than {limit // (1024 * 1024)} MiB: not read")
        if data.rstrip().endswith(b"}") and json_object_complete(bytes(data)):
            return bytes(data)


def json_object_complete(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data), dict)
    except (ValueError, RecursionError):
        return False


# --- files -------------------------------------------------------------------------------------------------


def file_kind(mode: int) -> str:
    return next((name for is_kind, name in FILE_KINDS if is_kind(mode)), "not a regular file")


def file_open_regular(path: str, what: str) -> int:
    """A read-only descriptor of ``path`` when it is a regular file, else a HookError naming what it is.
    A device never ends (``/dev/zero``), a FIFO blocks until its writer closes, a directory is no
    transcript: none of them is read. The type is checked before the open, so that such a file is not
    even opened, and again on the opened descriptor, so that one swapped in between cannot pass; and the
    open does not block, so that not even a FIFO swapped in without a writer can hang it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        mode = os.stat(path).st_mode
        if stat.S_ISREG(mode):
            fd = os.open(path, flags)
            try:
                mode = os.fstat(fd).st_mode
            except OSError:
                os.close(fd)
                raise
            if stat.S_ISREG(mode):
                return fd
            os.close(fd)
    except OSError as exc:
        raise HookError(f"cannot read the {what}: {exc.strerror or exc}") from None
    raise HookError(f"the {what} is {file_kind(mode)}, not a regular file: not read")


def file_read_bounded(path: str, *, tail: int, what: str) -> tuple[bytes, bytes]:
    """A regular file's bytes, at most ``HEAD_BYTES + tail`` of them, read before the hook's deadline:
    ``(b"", whole)`` when the file is no longer than that, else its first ``HEAD_BYTES`` and its last
    ``tail`` bytes. The size is the one the file had when it was opened: a transcript that grows
    meanwhile (the session goes on) is not followed, and a sparse file of any size costs two ends."""
    fd = file_open_regular(path, what)
    try:
        size = os.fstat(fd).st_size
        if size <= HEAD_BYTES + tail:
            return b"", fd_read(fd, 0, size, what)
        return fd_read(fd, 0, HEAD_BYTES, what), fd_read(fd, size - tail, tail, what)
    except OSError as exc:
        raise HookError(f"cannot read the {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def fd_read(fd: int, offset: int, count: int, what: str) -> bytes:
    """``count`` bytes from ``offset`` (fewer from a file that shrank), the deadline checked between
    chunks."""
    os.lseek(fd, offset, os.SEEK_SET)
    chunks: list[bytes] = []
    while count > 0:
        deadline_check(what)
        chunk = os.read(fd, min(count, READ_CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def transcript_ends(path: str, limit: int, what: str = "transcript") -> tuple[bytes, bytes]:
    """A transcript's two ends as a capture reads them for a trace of ``limit`` bytes: ``(b"", whole)``
    or ``(first HEAD_BYTES, last TAIL_FACTOR × limit)``."""
    return file_read_bounded(path, tail=TAIL_FACTOR * limit, what=what)


def jsonl_lines(path: str, limit: int, conversation: Callable[[list[str]], list[str]]) -> tuple[list[str], int]:
    """A JSON Lines transcript's conversation lines within ``limit`` bytes — the first one (the task) and
    as much of the end as fits — and how many conversation lines were read. ``conversation`` picks them
    out of raw lines (the agent's own format) and re-serialises them without the bulk the service never
    reads."""
    opening_part, ending_part = transcript_ends(path, limit)
    ending = ending_part.decode("utf-8", "replace").splitlines()
    if opening_part:  # both parts were cut mid-line: their broken ends go
        opening = conversation(opening_part.decode("utf-8", "replace").splitlines()[:-1])[:1]
        body = conversation(ending[1:])
    else:
        whole = conversation(ending)
        opening, body = whole[:1], whole[1:]
    room = limit - sum(len(line.encode()) + 1 for line in opening)
    kept: list[str] = []
    for line in reversed(body):  # the end first: how the session went
        cost = len(line.encode()) + 1
        if cost <= room:
            kept.append(line)
            room -= cost
    return opening + kept[::-1], len(opening) + len(body)


def compact(record: Any) -> str:
    """A JSON value on one line, as the hooks send it."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))
