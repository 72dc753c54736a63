"""Cursor's agent (docs/cursor.md). The event on stdin: ``conversation_id``, ``generation_id``,
``hook_event_name``, ``workspace_roots``, ``transcript_path`` (null where Cursor keeps none), and per
event ``session_id`` (sessionStart, sessionEnd), ``status`` and ``loop_count`` (stop), ``reason``
(sessionEnd). The conversation id is the session's id throughout, so the start block and the capture meet
in one ledger. sessionStart reads added context as ``additional_context`` and has no field for a message
to the user. ``beforeSubmitPrompt`` can only let a prompt through or block it, so there is no per-prompt
recall: the rule in integrations/cursor/reasoningbank.mdc asks the agent to call ``memory_search``. The
transcript is sent as ``cursor-jsonl``."""

from __future__ import annotations

import json
from typing import Any

from ..reading import compact, jsonl_lines
from .base import CAPTURE, SESSION_START, Adapter


def conversation(raw_lines: list[str]) -> list[str]:
    """The transcript's ``user`` and ``assistant`` lines."""
    out = []
    for raw in raw_lines:
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("role") in ("user", "assistant"):
            out.append(compact(record))
    return out


def transcript(path: str, limit: int) -> tuple[str, int]:
    lines, messages = jsonl_lines(path, limit, conversation)
    return "\n".join(lines) + "\n", messages


def additional_context(event_name: str, text: str) -> dict[str, Any]:
    return {"additional_context": text}


ADAPTER = Adapter(
    name="cursor",
    label="reasoningbank-cursor",
    user_agent="reasoningbank-cursor-hook",
    events={"sessionStart": SESSION_START, "stop": CAPTURE, "sessionEnd": CAPTURE},
    final_events=frozenset({"sessionEnd"}),
    trace_format="cursor-jsonl",
    transcript=transcript,
    answer_context=additional_context,
    shows_notices=False,
    session_fields=("conversation_id", "session_id"),
    no_transcript_hint=" (Cursor keeps none for this session): not captured",
)
