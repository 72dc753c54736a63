"""Claude Code (docs/claude-code.md), tried with 2.1.332. The event on stdin: ``session_id``,
``transcript_path``, ``cwd``, ``permission_mode``, ``hook_event_name``, and per event ``source``
(SessionStart), ``prompt`` (UserPromptSubmit), ``stop_hook_active`` (Stop), ``trigger`` (PreCompact),
``reason`` (SessionEnd), ``tool_name``, ``tool_input`` and ``tool_use_id`` (PreToolUse; PostToolUse adds
``tool_response``, PostToolUseFailure ``error`` and ``is_interrupt``). Context goes back as
``hookSpecificOutput.additionalContext``, a notice as ``systemMessage``. The transcript is Claude Code's JSON
Lines, sent as ``claude-code-jsonl``."""

from __future__ import annotations

import json

from ..reading import compact, jsonl_lines
from .base import CAPTURE, PROMPT, SESSION_START, TOOL, Adapter

STRIPPED_KEYS = ("toolUseResult",)  # a tool result's copy beside the message: bulk the service never reads


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
        out.append(compact(record))
    return out


def transcript(path: str, limit: int) -> tuple[str, int]:
    lines, messages = jsonl_lines(path, limit, conversation)
    return "\n".join(lines) + "\n", messages


ADAPTER = Adapter(
    name="claude-code",
    label="reasoningbank",
    user_agent="reasoningbank-claude-code-plugin",
    events={
        "SessionStart": SESSION_START,
        "UserPromptSubmit": PROMPT,
        "Stop": CAPTURE,  # after each answer: the session goes on
        "PreCompact": CAPTURE,  # before the conversation is replaced by its summary
        "SessionEnd": CAPTURE,
        "PreToolUse": TOOL,  # before Read, Edit, Write, MultiEdit, NotebookEdit (the plugin's matcher)
        "PostToolUse": TOOL,  # after Bash, when its output shows an error though it exited 0
        "PostToolUseFailure": TOOL,  # after Bash failed (a non-zero exit): the client's `error` holds its output
    },
    final_events=frozenset({"SessionEnd"}),
    trace_format="claude-code-jsonl",
    transcript=transcript,
    # a resumed or forked session keeps the context it had, the start block in it: never twice (the
    # plugin's matcher leaves them out too; this holds for hooks registered by hand without it)
    skipped_start_sources=frozenset({"resume", "fork"}),
    file_tools={
        "Read": ("file_path",),
        "Edit": ("file_path",),
        "Write": ("file_path",),
        "MultiEdit": ("file_path",),
        "NotebookEdit": ("notebook_path",),
    },
    shell_tools=frozenset({"Bash"}),
)
