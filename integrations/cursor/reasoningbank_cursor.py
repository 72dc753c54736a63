#!/usr/bin/env python3
"""ReasoningBank's hooks for Cursor's agent (docs/cursor.md), one script for every event:

    reasoningbank_cursor.py session-start   sessionStart: the project's memory block (memory_context),
                                            as ``additional_context``
    reasoningbank_cursor.py capture         stop, sessionEnd: the agent transcript at ``transcript_path``
                                            handed in for distillation (session_submit, ``cursor-jsonl``)

Cursor gives the event as JSON on stdin: ``conversation_id``, ``generation_id``, ``hook_event_name``,
``workspace_roots``, ``transcript_path`` (null where Cursor keeps none), and per event ``session_id``
(sessionStart, sessionEnd), ``status`` and ``loop_count`` (stop), ``reason`` (sessionEnd). Cursor's
``beforeSubmitPrompt`` can only let a prompt through or block it — it cannot add context — so there is
no per-prompt recall here: the rule in integrations/cursor/reasoningbank.mdc asks the agent to call
``memory_search`` itself. The conversation id is the session's id throughout, so the start block and
the capture meet in one ledger.

The shared client is the Claude Code plugin's hook (integrations/claude-code/hooks/reasoningbank_hook.py).
Python's standard library only; on any error one line on stderr, nothing on stdout, exit 0.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

NAME = "reasoningbank-cursor"
SHARED = Path(__file__).resolve().parents[1] / "claude-code" / "hooks"


def conversation(raw_lines: list[str]) -> list[str]:
    """The transcript's ``user`` and ``assistant`` lines."""
    out = []
    for raw in raw_lines:
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("role") in ("user", "assistant"):
            out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    return out


def session_event(event: dict[str, Any]) -> dict[str, Any]:
    """The event with Cursor's conversation id as the session id the shared hook reads."""
    key = event.get("conversation_id") or event.get("session_id")
    return {**event, "session_id": key} if isinstance(key, str) else event


def capture(hook: Any, event: dict[str, Any]) -> None:
    """stop: the conversation goes on (``partial``); sessionEnd: it is over."""
    key = hook.session_key(event)
    path = event.get("transcript_path")
    if not key:
        raise hook.HookError("the event has no conversation_id")
    if not isinstance(path, str) or not path:
        raise hook.HookError("Cursor gave no transcript_path (it keeps none for this session): not captured")
    limit = int(hook.env_number("REASONINGBANK_TRACE_MAX_BYTES", 500_000, low=4096, high=50_000_000))
    lines, messages = hook.transcript_lines(os.path.expanduser(path), limit, conversation)
    if messages < hook.env_number("REASONINGBANK_CAPTURE_MIN_MESSAGES", 4, low=1, high=1000):
        return
    partial = event.get("hook_event_name") != "sessionEnd"
    body = {"session_id": key, "trace": "\n".join(lines) + "\n", "trace_format": "cursor-jsonl", "partial": partial}
    hook.hand_off(body)  # queued; the detached sender posts it


def main(argv: list[str]) -> int:
    action = argv[1] if len(argv) > 1 else ""
    try:
        sys.path.insert(0, str(SHARED))
        import reasoningbank_hook as hook  # the Claude Code plugin's hook: the shared client

        event = session_event(hook.event_read())
        if action == "session-start":
            block = hook.session_start(event)
            if block:
                json.dump({"additional_context": block}, sys.stdout)
                sys.stdout.write("\n")
        elif action == "capture":
            capture(hook, event)
        else:
            raise hook.HookError(f"unknown action {action!r}: session-start or capture")
    except Exception as exc:  # a hook must never fail the session, whatever broke
        print(f"{NAME} {action}: {exc or type(exc).__name__}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
