"""The OpenAI Codex CLI (docs/codex.md), tried with 0.171.0. Its hooks take Claude Code's shape: the event
on stdin (``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``, ``model``,
``permission_mode``, ``turn_id``, and ``prompt`` for UserPromptSubmit; ``tool_name``, ``tool_input``,
``tool_use_id`` and, after the tool, ``tool_response`` for PreToolUse and PostToolUse: a shell command is
``Bash`` with ``{"command": …}``, an edit ``apply_patch`` with the patch as ``command``), context given back as
``hookSpecificOutput.additionalContext``. SessionEnd (fired when the main thread ends) is smaller:
``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and ``reason``, and gets at most 3 s. The
transcript is the session's rollout file, sent as ``codex-rollout-jsonl``; a Codex without SessionEnd
leaves the final word to the service, which distils a session once no Stop has come for
``SESSION_IDLE_SECONDS``."""

from __future__ import annotations

import json

from ..reading import compact, jsonl_lines
from .base import CAPTURE, PROMPT, SESSION_START, TOOL, Adapter

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
        out.append(compact(record))
    return out


def transcript(path: str, limit: int) -> tuple[str, int]:
    """The rollout's lines; its messages (not its tool calls and outputs) are what counts as conversation."""
    lines, _ = jsonl_lines(path, limit, conversation)
    return "\n".join(lines) + "\n", sum(1 for line in lines if '"type":"message"' in line)


ADAPTER = Adapter(
    name="codex",
    label="reasoningbank-codex",
    user_agent="reasoningbank-codex-hook",
    events={
        "SessionStart": SESSION_START,
        "UserPromptSubmit": PROMPT,
        "Stop": CAPTURE,  # after each turn: the session goes on
        "SessionEnd": CAPTURE,
        "PreToolUse": TOOL,  # before apply_patch (its input's `command` is the patch, naming the files)
        "PostToolUse": TOOL,  # after Bash: its `tool_response` is the command's output
    },
    final_events=frozenset({"SessionEnd"}),
    trace_format="codex-rollout-jsonl",
    transcript=transcript,
    file_tools={"apply_patch": ("command", "patch")},
    shell_tools=frozenset({"Bash"}),
)
