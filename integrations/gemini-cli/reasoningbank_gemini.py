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
(the task) and as many of its last messages as fit, and sent as a valid object.

Python's standard library only; on any error one line on stderr, nothing on stdout (Gemini CLI parses
stdout as JSON), exit 0.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

NAME = "reasoningbank-gemini"
SHARED = Path(__file__).resolve().parents[1] / "claude-code" / "hooks"
READ_MAX = 64 * 1024 * 1024  # a recording larger than this is not read at all
CONVERSATION = ("user", "gemini")  # info, error and warning messages are the CLI's, not the session's
DROPPED_KEYS = ("thoughts", "tokens")  # bulk the service never reads


def recording(hook: Any, path: str, limit: int) -> tuple[str, int]:
    """The chat recording as JSON within ``limit`` bytes, and how many conversation messages it has."""
    try:
        if os.path.getsize(path) > READ_MAX:
            raise hook.HookError(f"the chat recording is larger than {READ_MAX // 1024 // 1024} MB")
        with open(path, encoding="utf-8", errors="replace") as file:
            record = json.load(file)
    except OSError as exc:
        raise hook.HookError(f"cannot read the chat recording: {exc.strerror or exc}") from None
    except ValueError:
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
    hook.call(
        "/api/v1/sessions", {"session_id": key, "trace": trace, "trace_format": "gemini-cli-json", "partial": partial}
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
