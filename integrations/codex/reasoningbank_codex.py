#!/usr/bin/env python3
"""ReasoningBank's hooks for the OpenAI Codex CLI (docs/codex.md), one script for every event:

    reasoningbank_codex.py session-start   SessionStart: the project's memory block (memory_context)
    reasoningbank_codex.py prompt          UserPromptSubmit: the few memories new to this session that fit
                                           the prompt (memory_search), within a token cap
    reasoningbank_codex.py capture         Stop, SessionEnd: the session's rollout file handed in for
                                           distillation (session_submit, ``codex-rollout-jsonl``)

Codex's hooks take Claude Code's shape — the event as JSON on stdin (``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name``, ``model``, ``turn_id``, and ``prompt`` for UserPromptSubmit), context
given back as ``hookSpecificOutput.additionalContext`` — so recall is the Claude Code plugin's own code,
imported from integrations/claude-code/hooks/reasoningbank_hook.py (same settings, same caps). Every
Stop hands the session in as ``partial``; SessionEnd (Codex 0.171 fires it when the main thread ends:
``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and ``reason``, no turn or model, and
no more than 3 s to run) hands it in as final, so it is distilled at once. A Codex without SessionEnd
leaves it to the service, which distils a session once no Stop has come for ``SESSION_IDLE_SECONDS``.

Python's standard library only; on any error one line on stderr, nothing on stdout, exit 0.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

NAME = "reasoningbank-codex"
SHARED = Path(__file__).resolve().parents[1] / "claude-code" / "hooks"
# the user messages Codex writes itself (environment, instructions, AGENTS.md): not the task
OWN_MESSAGE_OPENINGS = ("<", "# AGENTS.md instructions")


def conversation(raw_lines: list[str]) -> list[str]:
    """A rollout's conversation lines (``response_item`` and ``compacted``), without the encrypted
    reasoning and Codex's own messages, which the service never reads."""
    out = []
    for raw in raw_lines:
        if '"response_item"' not in raw and '"compacted"' not in raw:
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        payload = record.get("payload") if isinstance(record, dict) else None
        if record.get("type") not in ("response_item", "compacted") or not isinstance(payload, dict):
            continue
        if payload.get("type") in ("reasoning", "web_search_call"):
            continue
        if payload.get("type") == "message":
            if payload.get("role") not in ("user", "assistant"):
                continue
            content = payload.get("content")
            parts = content if isinstance(content, list) else []
            text = "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
            if payload.get("role") == "user" and text.lstrip().startswith(OWN_MESSAGE_OPENINGS):
                continue
        out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    return out


def capture(hook: Any, event: dict[str, Any]) -> None:
    """Stop: the session goes on (``partial``); SessionEnd: it is over."""
    if event.get("stop_hook_active"):
        return  # Codex is continuing because of a Stop hook: the next Stop will capture
    key = hook.session_key(event)
    path = event.get("transcript_path")
    if not key or not isinstance(path, str) or not path:
        raise hook.HookError("the event has no session_id or transcript_path")
    limit = int(hook.env_number("REASONINGBANK_TRACE_MAX_BYTES", 500_000, low=4096, high=50_000_000))
    lines, _ = hook.transcript_lines(os.path.expanduser(path), limit, conversation)
    messages = sum(1 for line in lines if '"type":"message"' in line)
    if messages < hook.env_number("REASONINGBANK_CAPTURE_MIN_MESSAGES", 4, low=1, high=1000):
        return
    partial = event.get("hook_event_name") != "SessionEnd"
    body = {
        "session_id": key,
        "trace": "\n".join(lines) + "\n",
        "trace_format": "codex-rollout-jsonl",
        "partial": partial,
    }
    hook.hand_off(body)  # queued; the detached sender posts it


def main(argv: list[str]) -> int:
    action = argv[1] if len(argv) > 1 else ""
    try:
        sys.path.insert(0, str(SHARED))
        import reasoningbank_hook as hook  # the Claude Code plugin's hook: the shared client and recall

        hook.action_run(action, hook.event_read(), capture_run=lambda event: capture(hook, event))
    except Exception as exc:  # a hook must never fail the session, whatever broke
        print(f"{NAME} {action}: {exc or type(exc).__name__}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
