#!/usr/bin/env python3
"""The ReasoningBank plugin's Claude Code hooks (docs/claude-code.md), one script for every event:

    reasoningbank_hook.py session-start   SessionStart: the project's memory block (memory_context)
    reasoningbank_hook.py prompt          UserPromptSubmit: the few memories new to this session that fit
                                          the prompt (memory_search), within a token cap
    reasoningbank_hook.py capture         Stop, PreCompact, SessionEnd: the transcript queued for
                                          distillation (session_submit, Claude Code's own format) and
                                          handed to the detached sender (reasoningbank_spool.py)

Claude Code gives the event as JSON on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, and ``prompt`` for UserPromptSubmit). Configuration comes from the environment:
``REASONINGBANK_URL`` (default http://127.0.0.1:8000), ``REASONINGBANK_TOKEN`` (an API token),
``REASONINGBANK_PROJECT`` (when the token reaches several projects) and the knobs below.

Python's standard library only. A hook never blocks or fails the session: every hook finishes within
its budget (``REASONINGBANK_TIMEOUT``, 2 s), a capture makes no HTTP call at all (it queues the
submission and returns), and on any error a hook prints one line on stderr and exits 0. When the token
is refused or the service cannot be reached, the session's first start or prompt hook also tells the
user, once, as a ``systemMessage``; otherwise nothing but the hook's answer goes to stdout. What a hook
reads is bounded (docs/security/hooks.md): the event on stdin and the transcript it names, in bytes and
in time, and only a regular file is read at all.
"""

from __future__ import annotations

import json
import math
import os
import queue
import stat
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling module, however this one is loaded
import reasoningbank_spool as spool  # the queue and its sender

STARTED = time.monotonic()
NAME = "reasoningbank"
QUERY_MAX = 2000  # the service's query limit (characters)
STRIPPED_KEYS = ("toolUseResult",)  # a tool result's copy beside the message: bulk the service never reads
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


class HookError(Exception):
    """What went wrong, in one line for stderr; ``notice`` when it means memory is off for the session
    (the token refused or missing, the service out of reach): what the user is told, once a session."""

    def __init__(self, message: str, notice: str = "") -> None:
        super().__init__(message)
        self.notice = notice


NOTICE_HEAD = "ReasoningBank memory is off for this session: "
FIX_TOKEN = (
    "Check REASONINGBANK_TOKEN (an API token with the memories:read and memories:write scopes) and, when the "
    "token reaches several projects, REASONINGBANK_PROJECT."
)
FIX_URL = "Check that the service runs and that REASONINGBANK_URL points at it; captured sessions wait on this machine"
GATEWAY_DOWN = (502, 503, 504)  # a proxy in front of a service that is not there


def env_number(name: str, default: float, *, low: float, high: float) -> float:
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw.strip() else default
    except ValueError:
        raise HookError(f"{name} must be a number, not {raw!r}") from None
    return min(max(value, low), high)


def tokens(text: str) -> int:
    """The service's estimate: four characters a token."""
    return math.ceil(len(text) / 4)


def budget() -> float:
    return env_number("REASONINGBANK_TIMEOUT", 2.0, low=0.2, high=30.0)


def budget_left() -> float:
    left = budget() - (time.monotonic() - STARTED)
    if left <= 0.05:
        raise HookError(f"the {budget():g} s budget was spent before the request")
    return left


def deadline_check(what: str) -> None:
    """A HookError once the hook's budget is spent: reading must stop in time for the hook to exit
    quietly before its client gives up on it."""
    if time.monotonic() - STARTED >= budget():
        raise HookError(f"reading the {what} took the whole {budget():g} s budget: not sent")


def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body`` to the service; the answer's JSON, or a HookError saying why not."""
    import urllib.error  # here, not at the top: a capture never posts, and these cost it 20 ms to import
    import urllib.request

    who = credential_checked()
    url, token = who.url, who.token
    if os.environ.get("REASONINGBANK_PROJECT"):
        body["project"] = os.environ["REASONINGBANK_PROJECT"]
    request = urllib.request.Request(
        f"{url}{path}",
        data=json.dumps(body).encode(),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "User-Agent": "reasoningbank-claude-code-plugin",
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=budget_left()) as reply:
            answer = json.load(reply)
    except urllib.error.HTTPError as exc:
        try:
            detail = json.load(exc).get("detail", "")
        except (ValueError, AttributeError, OSError):
            detail = ""
        said = f"{exc.code}: {str(detail)[:300]}"
        notice = ""
        if exc.code in (401, 403):
            notice = f"{NOTICE_HEAD}{url} refused the token ({said.rstrip(': ')}). {FIX_TOKEN}"
        elif exc.code in GATEWAY_DOWN:
            notice = f"{NOTICE_HEAD}{url} answered {exc.code}. {FIX_URL} ({spool_state()})."
        raise HookError(f"{url}{path} answered {said}", notice) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        notice = ""  # a slow answer is not memory off: the next prompt may get one
        if not isinstance(reason, TimeoutError) and not isinstance(exc, TimeoutError):
            notice = f"{NOTICE_HEAD}could not reach {url} ({reason}). {FIX_URL} ({spool_state()})."
        raise HookError(f"could not reach {url}: {reason}", notice) from None
    if not isinstance(answer, dict):
        raise HookError(f"{url}{path} answered something else than a JSON object")
    return answer


def credential_checked() -> spool.Credential:
    """The service's URL and the token, or a HookError (with its notice) when no token is set."""
    who = spool.credential()
    if not who.token:
        notice = (
            f"{NOTICE_HEAD}REASONINGBANK_TOKEN is not set. Set it to an API token (the dashboard's "
            '"Connect an agent" page) in the environment the agent starts from.'
        )
        raise HookError("set REASONINGBANK_TOKEN to an API token (docs/claude-code.md)", notice)
    return who


def spool_state() -> str:
    """Where captured sessions wait and how many do, for a notice."""
    waiting = len(spool.pending(spool.credential()))
    said = f"{waiting} in {spool.state_dir() / 'spool'}, sent once it answers"
    dropped = spool.dropped_count()
    return f"{said}; {dropped} dropped from a full queue so far" if dropped else said


def answer_print(answer: dict[str, Any]) -> None:
    if answer:
        json.dump(answer, sys.stdout)
        sys.stdout.write("\n")


def context_answer(event_name: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


def notice_due(event: dict[str, Any], notice: str) -> str:
    """``notice`` if this session has not been told that memory is off yet (it is remembered in the
    state directory), else "". A session without an id is never told: it could not be told only once."""
    key = session_key(event)
    if not notice or not key:
        return ""
    try:
        return "" if spool.told_before(key) else notice
    except OSError:
        return ""  # no state directory: better silent than told on every prompt


def refusal_notice() -> str:
    """What the sender last heard when the service refused a capture's token (a token that can read but
    not write still gets its memories at start and per prompt, and never learns its sessions are lost)."""
    who = spool.credential()
    refused = spool.refusal(who)
    if not refused:
        return ""
    return (
        f"ReasoningBank is not saving your sessions: {who.url} refused the last one "
        f"({str(refused.get('reason', ''))[:300].strip()}). {FIX_TOKEN}"
    )


def session_key(event: dict[str, Any]) -> str:
    value = event.get("session_id")
    return value.strip()[:200] if isinstance(value, str) else ""


# --- SessionStart ------------------------------------------------------------------------------------


def session_start(event: dict[str, Any]) -> str | None:
    """The project's memory block; its memories go in the session's ledger."""
    body: dict[str, Any] = {}
    if session_key(event):
        body["session_id"] = session_key(event)
    if os.environ.get("REASONINGBANK_TASK"):
        body["task"] = os.environ["REASONINGBANK_TASK"]
    block = call("/api/v1/memories/context", body).get("context_block") or ""
    return str(block) or None


# --- UserPromptSubmit ----------------------------------------------------------------------------------


def prompt_memories(event: dict[str, Any]) -> str | None:
    """The block of memories that fit the prompt, new to this session, within the token cap; None when
    none qualifies. The service chooses and frames them (a search with ``inject``): only what the org's
    injection policy lets be injected, each memory as a note marked as data with its source, the whole
    block within the cap — the same block for every client's hook (docs/security/memory-poisoning.md)."""
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip() or prompt.lstrip().startswith("/"):
        return None  # nothing to search for, or a slash command (Claude Code's, not a task)
    most = int(env_number("REASONINGBANK_PROMPT_MEMORIES", 3, low=1, high=20))
    cap = int(env_number("REASONINGBANK_PROMPT_TOKENS", 600, low=100, high=20000))
    floor = env_number("REASONINGBANK_PROMPT_MIN_SIMILARITY", 0.35, low=0.0, high=1.0)
    body: dict[str, Any] = {
        "query": prompt.strip()[:QUERY_MAX],
        "limit": most,
        "token_budget": cap,
        "min_similarity": floor,
        "include_summaries": False,
        "mode": "standard",
        "inject": True,
    }
    if session_key(event):
        body.update(session_id=session_key(event), exclude_seen=True)
    block = call("/api/v1/memories/search", body).get("injection_block")
    if not isinstance(block, str) or not block:
        return None
    if tokens(block) > cap:  # the cap holds, whatever the service measured
        raise HookError(f"the service's block is {tokens(block)} tokens, over REASONINGBANK_PROMPT_TOKENS={cap}")
    return block


# --- Stop, PreCompact, SessionEnd --------------------------------------------------------------------------


def capture(event: dict[str, Any]) -> None:
    """Hand the transcript in (Claude Code's JSON Lines, converted by the service). Stop and PreCompact:
    the session goes on (``partial``: the trace replaces the last one, distillation waits until the
    session is idle); SessionEnd: the session is over. A session shorter than
    ``REASONINGBANK_CAPTURE_MIN_MESSAGES`` messages is not sent. The submission is queued, not posted
    (``hand_off``)."""
    if event.get("stop_hook_active"):
        return  # Claude Code is continuing because of a Stop hook: the next Stop will capture
    key = session_key(event)
    path = event.get("transcript_path")
    if not key or not isinstance(path, str) or not path:
        raise HookError("the event has no session_id or transcript_path")
    limit = int(env_number("REASONINGBANK_TRACE_MAX_BYTES", 500_000, low=4096, high=50_000_000))
    lines, messages = transcript_lines(os.path.expanduser(path), limit)
    if messages < env_number("REASONINGBANK_CAPTURE_MIN_MESSAGES", 4, low=1, high=1000):
        return
    hand_off(
        {
            "session_id": key,
            "trace": "\n".join(lines) + "\n",
            "trace_format": "claude-code-jsonl",
            "partial": event.get("hook_event_name") != "SessionEnd",
        }
    )


def hand_off(body: dict[str, Any]) -> None:
    """Queue a ``session_submit`` for the detached sender and start it (reasoningbank_spool.py): the hook
    returns at once, whatever the service's speed, and a submission the service cannot take now is
    posted later. Every client's capture hook ends here."""
    who = credential_checked()
    if os.environ.get("REASONINGBANK_PROJECT"):
        body["project"] = os.environ["REASONINGBANK_PROJECT"]
    try:
        dropped = spool.spool_write("/api/v1/sessions", body, str(body["session_id"]), who)
    except OSError as exc:
        # no queue on this machine (a state directory that cannot be written): posted within the hook's
        # budget instead, as before the hand-off, rather than lost
        call("/api/v1/sessions", body)
        raise HookError(f"cannot queue in {spool.state_dir()} ({exc.strerror or exc}): sent directly") from None
    try:
        spool.sender_start(who)
    except OSError as exc:
        raise HookError(
            f"queued, but the sender did not start ({exc.strerror or exc}): the next hook starts it"
        ) from None
    if dropped:
        raise HookError(f"the local queue was full: dropped the oldest {dropped} submission(s) to queue this one")


def transcript_lines(
    path: str, limit: int, select: Callable[[list[str]], list[str]] | None = None
) -> tuple[list[str], int]:
    """The transcript's conversation lines within ``limit`` bytes — the first one (the task) and as
    much of the end as fits — and how many conversation lines were read. A long session's file is
    many MB: only its first 256 KiB and its last ``4 × limit`` bytes are read, and only if it is a
    regular file (``file_read_bounded``). ``select`` picks the conversation lines of a JSON Lines file
    (Claude Code's by default; the other agents' hooks in integrations/ pass their own)."""
    conversation_of = select or conversation
    opening_part, ending_part = file_read_bounded(path, tail=TAIL_FACTOR * limit, what="transcript")
    ending = ending_part.decode("utf-8", "replace").splitlines()
    if opening_part:  # both parts were cut mid-line: their broken ends go
        opening = conversation_of(opening_part.decode("utf-8", "replace").splitlines()[:-1])[:1]
        body = conversation_of(ending[1:])
    else:
        whole = conversation_of(ending)
        opening, body = whole[:1], whole[1:]
    room = limit - sum(len(line.encode()) + 1 for line in opening)
    kept: list[str] = []
    for line in reversed(body):  # the end first: how the session went
        cost = len(line.encode()) + 1
        if cost <= room:
            kept.append(line)
            room -= cost
    return opening + kept[::-1], len(opening) + len(body)


def conversation(raw_lines: list[str]) -> list[str]:
    """The ``user`` and ``assistant`` lines, re-serialised without the bulk the service never reads."""
    out = []
    for raw in raw_lines:
        if '"user"' not in raw and '"assistant"' not in raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("type") not in ("user", "assistant") or record.get("isMeta"):
            continue
        for key in STRIPPED_KEYS:
            record.pop(key, None)
        out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    return out


# --- bounded input -----------------------------------------------------------------------------------------


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
            chunk = arrived.get(timeout=max(budget() - (time.monotonic() - STARTED), 0.0))
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
    except ValueError:
        return False


# --- the entry point ---------------------------------------------------------------------------------------


def event_read() -> dict[str, Any]:
    """The client's hook event: a JSON object on stdin (every client these hooks serve sends one)."""
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    raw = stream_read_bounded(sys.stdin.fileno(), EVENT_MAX_BYTES, "hook event on stdin")
    event = json.loads(raw) if raw.strip() else {}
    if not isinstance(event, dict):
        raise HookError("the hook event on stdin is not a JSON object")
    return event


def action_run(
    action: str,
    event: dict[str, Any],
    *,
    capture_run: Callable[[dict[str, Any]], None],
    prompt_event: str = "UserPromptSubmit",
) -> None:
    """The three actions of a client whose hooks add context as Claude Code's do (Codex and Gemini CLI
    too): the start block, memories for a prompt (``prompt_event`` names the client's event), capture.
    The start and prompt hooks tell the user once a session, as a ``systemMessage``, when memory is off
    (their own call refused or out of reach, or the sender's last capture refused), and start the sender
    when earlier captures still wait."""
    if action == "capture":
        capture_run(event)
        return
    if action not in ("session-start", "prompt"):
        raise HookError(f"unknown action {action!r}: session-start, prompt or capture")
    answer: dict[str, Any] = {}
    try:
        block = session_start(event) if action == "session-start" else prompt_memories(event)
    except HookError as exc:
        answer_print({"systemMessage": told} if (told := notice_due(event, exc.notice)) else {})
        raise
    if block:
        answer = context_answer("SessionStart" if action == "session-start" else prompt_event, block)
    if told := notice_due(event, refusal_notice()):
        answer["systemMessage"] = told
    answer_print(answer)
    sender_kick()


def sender_kick() -> None:
    """Start the sender if captures of this credential still wait (a sender that gave up, a client that
    quit): the service answered this hook, so it may take them now."""
    try:
        spool.sender_start(spool.credential())
    except OSError:
        pass  # the queue is the capture hook's business; a start or prompt hook still answers


RESUMED = ("resume", "fork")  # Claude Code keeps the context of the session it resumes or forks


def main(argv: list[str]) -> int:
    action = argv[1] if len(argv) > 1 else ""
    try:
        event = event_read()
        if action == "session-start" and event.get("source") in RESUMED:
            return 0  # the start block is already in the context: never twice (hooks.json matches it out too)
        action_run(action, event, capture_run=capture)
    except HookError as exc:
        print(f"{NAME} {action}: {exc}", file=sys.stderr)
    except Exception as exc:  # a hook must never fail the session, whatever broke
        print(f"{NAME} {action}: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
