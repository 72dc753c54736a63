"""The transcripts of the agents other than Claude Code, turned into the same compact trace and outcome
as Claude Code's (memories/sessions/transcripts.py, docs/connecting-agents.md#other-agents): one reader
per client format, each filling the same ``Reading`` so the outcome is inferred by one rule.

- ``codex-rollout-jsonl``: an OpenAI Codex CLI session ("rollout") file, the JSON Lines Codex writes
  under ``~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`` and names in its hooks' ``transcript_path``.
  Each line is ``{"timestamp", "type", "payload"}``; the conversation is in the ``response_item`` lines
  (``message`` with ``input_text``/``output_text`` parts, ``function_call`` with JSON ``arguments``
  and a ``call_id``, ``function_call_output``, ``custom_tool_call`` such as ``apply_patch`` and its
  ``custom_tool_call_output``, ``local_shell_call``); ``compacted`` carries the summary a compaction
  left; ``session_meta``, ``turn_context`` and ``event_msg`` (the UI's copy of the same messages) are
  bookkeeping. The user messages Codex adds itself (``<environment_context>``, ``<user_instructions>``,
  the AGENTS.md text) are not prompts.
- ``gemini-cli-json``: a Gemini CLI chat recording, one JSON object (``sessionId``, ``messages``: each
  with ``type`` ``user``/``gemini``/``info``/``error``/``warning``, ``content``, and on ``gemini``
  messages ``toolCalls`` with ``name``, ``args``, ``status`` and ``result`` parts holding the
  ``functionResponse``), as ``~/.gemini/tmp/<project hash>/chats/session-….json`` holds it.
- ``cursor-jsonl``: a Cursor agent transcript (``~/.cursor/projects/<project>/agent-transcripts/``),
  JSON Lines of ``{"role", "message": {"content": [blocks]}}`` with ``text`` and ``tool_use`` blocks;
  the user's words are wrapped in ``<user_query>``. Cursor does not write tool results into it, so a
  Cursor session's outcome comes only from the user's last words.

Every format changes between the clients' releases: unknown line and item types are skipped, never an
error. Pure: no Django.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from memories.sessions.transcripts import (
    CODEX_ROLLOUT_JSONL,
    CURSOR_JSONL,
    GEMINI_CLI_JSON,
    OUTPUT_MAX,
    TEXT_MAX,
    Converted,
    Reading,
    ToolCall,
    cut,
    input_text,
    json_lines,
    reading_converted,
    result_text,
)

__pure__ = True  # Django-free (tests/test_import_contracts.py)

SHELL_TOOLS = frozenset(
    {"Bash", "shell", "exec_command", "local_shell", "run_shell_command", "Shell", "run_terminal_cmd"}
)
# the text Codex puts in a user message of its own: instructions and environment, never the user's words
CODEX_OWN_MESSAGE = re.compile(r"^\s*(<[a-z_]+>|# AGENTS\.md instructions|<INSTRUCTIONS>)")
EXIT_CODE = re.compile(r"(?:exit(?:ed with)? code|Exit Code)\W+(-?\d+)", re.IGNORECASE)
USER_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.DOTALL)


def _prompt(reading: Reading, words: str) -> None:
    index = reading.events
    reading.events += 1
    words = words.strip()
    if words:
        reading.lines.append(f"[user] {cut(words, TEXT_MAX)}")
        reading.prompts.append((index, words))


def _assistant(reading: Reading, words: str) -> None:
    reading.events += 1
    if words.strip():
        reading.lines.append(f"[assistant] {cut(words.strip(), TEXT_MAX)}")


def _summary(reading: Reading, words: str) -> None:
    reading.events += 1
    if words.strip():
        reading.lines.append(f"[summary of the conversation before] {cut(words.strip(), TEXT_MAX)}")


def _call(reading: Reading, call_id: str, name: str, tool_input: dict[str, Any]) -> None:
    index = reading.events
    reading.events += 1
    command = _shell_command(tool_input) if name in SHELL_TOOLS else ""
    reading.calls[call_id or f"call-{index}"] = ToolCall(name, command, index)
    reading.lines.append(f"[tool {name}] {input_text(tool_input)}")
    reading.last_tool_call = index


def _result(reading: Reading, call_id: str, output: str, failed: bool) -> None:
    reading.events += 1
    call = reading.calls.get(call_id)
    if call is not None:
        call.output, call.is_error, call.answered = output, failed, True
    name = call.name if call is not None else "tool"
    status = "error" if failed else "ok"
    reading.lines.append(f"[{name} {status}] {cut(output, OUTPUT_MAX) if output else '(no output)'}")


def _shell_command(tool_input: dict[str, Any]) -> str:
    """A shell call's command line: ``["bash", "-lc", "pytest -q"]`` is ``pytest -q``."""
    command = tool_input.get("command", tool_input.get("cmd", ""))
    if isinstance(command, list):
        parts = [str(part) for part in command]
        if len(parts) >= 3 and parts[1] in ("-lc", "-c"):
            return parts[-1]
        return " ".join(parts)
    return str(command or "")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _arguments(raw: Any) -> dict[str, Any]:
    """A function call's arguments: Codex keeps them as a JSON string."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"input": raw}
        return value if isinstance(value, dict) else {"input": value}
    return {}


# --- Codex ---------------------------------------------------------------------------------------------


def codex_convert(text: str) -> Converted:
    """A Codex CLI rollout file as a compact trace."""
    reading = Reading()
    for line in json_lines(text):
        payload = line.get("payload")
        if not isinstance(payload, dict):
            continue
        if line.get("type") == "compacted":
            _summary(reading, str(payload.get("message") or ""))
        elif line.get("type") == "response_item":
            _codex_item(reading, payload)
    return reading_converted(reading)


def _codex_item(reading: Reading, item: dict[str, Any]) -> None:
    kind = item.get("type")
    call_id = str(item.get("call_id") or "")
    if kind == "message":
        parts = _list(item.get("content"))
        words = "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and p.get("text"))
        if item.get("role") == "user" and not CODEX_OWN_MESSAGE.match(words):
            _prompt(reading, words)
        elif item.get("role") == "assistant":
            _assistant(reading, words)
    elif kind == "function_call":
        _call(reading, call_id, str(item.get("name") or "tool"), _arguments(item.get("arguments")))
    elif kind == "local_shell_call":
        action = _dict(item.get("action"))
        _call(reading, call_id, "local_shell", {"command": action.get("command", "")})
    elif kind == "custom_tool_call":
        _call(reading, call_id, str(item.get("name") or "tool"), {"input": str(item.get("input") or "")})
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output, failed = _codex_output(item.get("output"))
        _result(reading, call_id, output, failed)


def _codex_output(raw: Any) -> tuple[str, bool]:
    """A tool's output and whether it failed. Codex has written it as a JSON string
    ``{"output": …, "metadata": {"exit_code": …}}``, as an object with ``content`` and ``success``, and
    as plain text that names the exit code."""
    value = raw
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
    if isinstance(value, dict):
        output = value.get("output", value.get("content", ""))
        output = output if isinstance(output, str) else result_text(output) or json.dumps(output)
        metadata = _dict(value.get("metadata"))
        if "exit_code" in metadata:
            return output.strip(), metadata.get("exit_code") not in (0, None)
        return output.strip(), value.get("success") is False
    output = str(value or "")
    code = EXIT_CODE.search(output)
    return output.strip(), bool(code and int(code.group(1)) != 0)


# --- Gemini CLI ------------------------------------------------------------------------------------------


def gemini_convert(text: str) -> Converted:
    """A Gemini CLI chat recording as a compact trace."""
    reading = Reading()
    try:
        record = json.loads(text)
    except ValueError:
        record = {}
    messages = record.get("messages") if isinstance(record, dict) else None
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        words = _gemini_text(message.get("content"))
        if message.get("type") == "user":
            _prompt(reading, words)
        elif message.get("type") == "gemini":
            _assistant(reading, words)
            calls = message.get("toolCalls")
            for number, call in enumerate(calls if isinstance(calls, list) else []):
                if isinstance(call, dict):
                    call_id = str(call.get("id") or f"{message.get('id')}-{number}")
                    args = _dict(call.get("args"))
                    _call(reading, call_id, str(call.get("name") or "tool"), args)
                    if call.get("status") in ("success", "error", "cancelled") or call.get("result"):
                        output, failed = _gemini_result(call)
                        _result(reading, call_id, output, failed)
    return reading_converted(reading)


def _gemini_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # Gemini API parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("text"))
    return ""


def _gemini_result(call: dict[str, Any]) -> tuple[str, bool]:
    outputs: list[str] = []
    failed = call.get("status") in ("error", "cancelled")
    parts = _list(call.get("result"))
    for part in parts:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            if response.get("error"):
                failed = True
                outputs.append(str(response["error"]))
            if response.get("output") is not None:
                outputs.append(str(response["output"]))
    if not outputs and isinstance(call.get("resultDisplay"), str):
        outputs.append(call["resultDisplay"])
    output = "\n".join(outputs).strip()
    code = EXIT_CODE.search(output)
    return output, failed or bool(code and int(code.group(1)) != 0)


# --- Cursor ----------------------------------------------------------------------------------------------


def cursor_convert(text: str) -> Converted:
    """A Cursor agent transcript as a compact trace."""
    reading = Reading()
    for line in json_lines(text):
        message = line.get("message")
        blocks = message.get("content") if isinstance(message, dict) else None
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        for number, block in enumerate(blocks if isinstance(blocks, list) else []):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and line.get("role") == "user":
                words = str(block.get("text") or "")
                found = USER_QUERY.search(words)
                _prompt(reading, found.group(1) if found else words)
            elif block.get("type") == "text" and line.get("role") == "assistant":
                _assistant(reading, str(block.get("text") or ""))
            elif block.get("type") == "tool_use":
                tool_input = _dict(block.get("input"))
                call_id = str(block.get("id") or f"cursor-{reading.events}-{number}")
                _call(reading, call_id, str(block.get("name") or "tool"), tool_input)
            elif block.get("type") == "tool_result":
                output = result_text(block.get("content"))
                _result(reading, str(block.get("tool_use_id") or ""), output, bool(block.get("is_error")))
    return reading_converted(reading)


CONVERTERS: dict[str, Callable[[str], Converted]] = {
    CODEX_ROLLOUT_JSONL: codex_convert,
    GEMINI_CLI_JSON: gemini_convert,
    CURSOR_JSONL: cursor_convert,
}
