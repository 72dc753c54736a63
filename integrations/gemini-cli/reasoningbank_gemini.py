#!/usr/bin/env python3
"""ReasoningBank's hooks for Gemini CLI (docs/gemini-cli.md), one script for every event:

    reasoningbank_gemini.py session-start   SessionStart: the project's memory block (memory_context)
    reasoningbank_gemini.py prompt          BeforeAgent: the few memories new to this session that fit the
                                            prompt (memory_search), within a token cap
    reasoningbank_gemini.py capture         AfterAgent, SessionEnd: the chat recording at
                                            ``transcript_path`` handed in for distillation
                                            (session_submit, ``gemini-cli-json``)

Gemini CLI gives the event as JSON on stdin (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``timestamp``, and ``prompt`` for BeforeAgent) and reads
``hookSpecificOutput.additionalContext`` back from SessionStart and BeforeAgent: recall is the Claude
Code plugin's code, imported from integrations/claude-code/hooks/reasoningbank_hook.py (same settings,
same caps). The recording is one JSON object, not JSON Lines: a long one is cut to its first message
(the task) and as many of its last messages as fit, and sent as a valid object. Of a recording longer
than the shared hook's read bound only the two ends are read (docs/security/hooks.md).

Python's standard library only; on any error one line on stderr, nothing on stdout (Gemini CLI parses
stdout as JSON), exit 0.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

NAME = "reasoningbank-gemini"
SHARED = Path(__file__).resolve().parents[1] / "claude-code" / "hooks"
CONVERSATION = ("user", "gemini")  # info, error and warning messages are the CLI's, not the session's
MESSAGE_TYPES = (*CONVERSATION, "info", "error", "warning")  # every message a recording holds
SESSION_ID = re.compile(r'"sessionId"\s*:\s*("(?:[^"\\]|\\.)*")')
DROPPED_KEYS = ("thoughts", "tokens")  # bulk the service never reads


def recording(hook: Any, path: str, limit: int) -> tuple[str, int]:
    """The chat recording as JSON within ``limit`` bytes, and how many conversation messages it has."""
    head, body = hook.file_read_bounded(path, tail=hook.TAIL_FACTOR * limit, what="chat recording")
    try:
        record = recording_ends(hook, head, body) if head else json.loads(body.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise hook.HookError("the chat recording is not JSON") from None
    found = record.get("messages") if isinstance(record, dict) else None
    if not isinstance(found, list):
        raise hook.HookError("the chat recording has no messages")
    messages = [
        {key: value for key, value in message.items() if key not in DROPPED_KEYS}
        for message in found
        if isinstance(message, dict) and message.get("type") in CONVERSATION
    ]
    kept = messages[:1]
    room = limit - 200 - len(json.dumps(kept, ensure_ascii=False).encode())
    tail: list[dict[str, Any]] = []
    for message in reversed(messages[1:]):  # the end first: how the session went
        cost = len(json.dumps(message, ensure_ascii=False).encode()) + 2
        if cost > room:
            break
        tail.append(message)
        room -= cost
    body = {"sessionId": record.get("sessionId"), "messages": kept + tail[::-1]}
    return json.dumps(body, ensure_ascii=False), len(messages)


def recording_ends(hook: Any, head: bytes, tail: bytes) -> dict[str, Any]:
    """A recording too long to read whole, rebuilt from its two ends: the session id and the first
    message from the head, and every message the tail holds whole."""
    opening = head.decode("utf-8", "replace")
    session = SESSION_ID.search(opening)
    start = opening.find('"messages"')
    first = messages_whole(hook, opening, start, most=1) if start >= 0 else []
    return {
        "sessionId": json.loads(session.group(1)) if session else None,
        "messages": first + messages_whole(hook, tail.decode("utf-8", "replace"), 0),
    }


def messages_whole(hook: Any, text: str, start: int, most: int = 0) -> list[dict[str, Any]]:
    """The messages that parse whole in a cut of the recording, in order (at most ``most`` of them when
    it is not 0): the objects found from each ``{`` on that have a message's ``type`` and ``id``. A ``{``
    inside a string cannot start one (a string's quotes are escaped), and an object that is not a
    message is skipped whole, so a cut mid-message costs only the scan of that message."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    position = text.find("{", start)
    while position >= 0 and not (most and len(found) >= most):
        hook.deadline_check("chat recording")
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            value, end = None, position + 1
        if isinstance(value, dict) and value.get("type") in MESSAGE_TYPES and "id" in value:
            found.append(value)
        position = text.find("{", end)
    return found


def capture(hook: Any, event: dict[str, Any]) -> None:
    """AfterAgent: the session goes on (``partial``); SessionEnd: it is over. Gemini CLI does not wait
    for a SessionEnd hook, so every turn is handed in as it ends and the last one stands if SessionEnd
    is cut short."""
    if event.get("stop_hook_active"):
        return  # a retry turn a hook asked for: the next AfterAgent will capture
    key = hook.session_key(event)
    path = event.get("transcript_path")
    if not key or not isinstance(path, str) or not path:
        raise hook.HookError("the event has no session_id or transcript_path")
    limit = int(hook.env_number("REASONINGBANK_TRACE_MAX_BYTES", 500_000, low=4096, high=50_000_000))
    trace, messages = recording(hook, os.path.expanduser(path), limit)
    if messages < hook.env_number("REASONINGBANK_CAPTURE_MIN_MESSAGES", 4, low=1, high=1000):
        return
    partial = event.get("hook_event_name") != "SessionEnd"
    hook.hand_off(  # queued; the detached sender posts it
        {"session_id": key, "trace": trace, "trace_format": "gemini-cli-json", "partial": partial}
    )


def main(argv: list[str]) -> int:
    action = argv[1] if len(argv) > 1 else ""
    try:
        sys.path.insert(0, str(SHARED))
        import reasoningbank_hook as hook  # the Claude Code plugin's hook: the shared client and recall

        hook.action_run(
            action, hook.event_read(), capture_run=lambda event: capture(hook, event), prompt_event="BeforeAgent"
        )
    except Exception as exc:  # a hook must never fail the session, whatever broke
        print(f"{NAME} {action}: {exc or type(exc).__name__}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
