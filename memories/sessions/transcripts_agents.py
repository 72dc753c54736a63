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
- ``gemini-cli-json``: a Gemini CLI chat recording (``~/.gemini/tmp/<project>/chats/session-….jsonl``),
  in either of the CLI's two formats. Since 0.39 it is JSON Lines, appended as the session goes: a first
  line of metadata (``sessionId``, ``projectHash``, ``startTime``, ``kind``), then each message as a line
  of its own, written again whole each time it changes (its tool calls done, its token counts in), so
  the last line with an ``id`` is the message as it ended; ``{"$set": {…}}`` lines update the metadata,
  and one holding ``messages`` is a checkpoint the CLI writes at start, on resume, on a cancelled turn
  and on compression; ``{"$rewindTo": id}`` drops that message and every later one (``/rewind``).
  Before 0.39 it was one JSON object (``sessionId``, ``messages``). A message has ``type``
  ``user``/``gemini``/``info``/``error``/``warning`` and ``content`` (a string or Gemini API parts, a
  part with ``thought`` being the model's reasoning); a ``gemini`` message has ``toolCalls`` with
  ``name``, ``args``, ``status`` and ``result`` parts holding the ``functionResponse``. Since 0.61 a
  tool's output also comes back as a ``user`` message of ``functionResponse`` parts, the CLI records its
  own environment as a ``user`` message opening ``<session_context>``, and a hook's
  ``additionalContext`` is recorded inside the user's turn as ``<hook_context>…</hook_context>``: none of
  them is the user's words (the memories a hook injected are the bank's, not the session's).
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
# Gemini CLI's own text in a recording: a hook's context (added to the user's turn, escaped), the
# environment it sends first, a compression's summary and the model's answer to it
GEMINI_HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.DOTALL)
GEMINI_OWN_OPENINGS = ("<session_context>",)
GEMINI_SNAPSHOT = "<state_snapshot>"
GEMINI_ACKNOWLEDGEMENT = "Got it. Thanks for the additional context!"
GEMINI_UNTRUSTED = re.compile(r"</?untrusted_context>")  # the CLI's framing of a tool's output (0.61)


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
    reading.calls[call_id or f"call-{index}"] = ToolCall(name, command, index, tool_input=tool_input)
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
        if line.get("type") in ("session_meta", "turn_context") and not reading.cwd:
            reading.cwd = str(payload.get("cwd") or "")  # where its paths are relative to
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
    """A Gemini CLI chat recording, in either format, as a compact trace."""
    reading = Reading()
    for message in gemini_messages(text):
        if message.get("type") == "user":
            words = _gemini_user_words(message)
            if GEMINI_SNAPSHOT in words:
                _summary(reading, words)  # a compression's summary: the CLI's, in a user turn
            else:
                _prompt(reading, words)
        elif message.get("type") == "gemini":
            words = _gemini_text(message.get("content"))
            _assistant(reading, "" if words.strip() == GEMINI_ACKNOWLEDGEMENT else words)
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


def gemini_messages(text: str) -> list[dict[str, Any]]:
    """The messages of a recording as the session ended, in order: the old single object read whole,
    the JSON Lines replayed as the CLI loads them — with one difference. A checkpoint (``$set`` of
    ``messages``) replaces the CLI's list, so after a compression or a resume the CLI forgets the turns
    it no longer sends the model; here they stay, the checkpoint updating the messages it still holds
    and adding the ones it brings, except its copies of the turns it dropped. No turn is lost to
    distillation because the model's context was cut."""
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    records = [whole] if isinstance(whole, dict) else list(json_lines(text))
    messages: dict[str, dict[str, Any]] = {}
    for record in records:
        if isinstance(record.get("$rewindTo"), str):
            _gemini_rewind(messages, record["$rewindTo"])
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = record  # a message, or its later state: it keeps its place
        elif isinstance(record.get("$set"), dict) and isinstance(record["$set"].get("messages"), list):
            _gemini_checkpoint(messages, record["$set"]["messages"])
        elif isinstance(record.get("messages"), list):  # the old format, or a migrated one's first line
            for message in record["messages"]:
                if isinstance(message, dict):
                    messages[str(message.get("id") or f"m-{len(messages)}")] = message
    return list(messages.values())


def _gemini_rewind(messages: dict[str, dict[str, Any]], message_id: str) -> None:
    ids = list(messages)
    drop = ids[ids.index(message_id) :] if message_id in messages else ids  # unknown: the CLI clears all
    for key in drop:
        del messages[key]


def _gemini_checkpoint(messages: dict[str, dict[str, Any]], listed: list[Any]) -> None:
    held = {str(message.get("id")) for message in listed if isinstance(message, dict)}
    dropped = {_gemini_key(message) for key, message in messages.items() if key not in held}
    for message in listed:
        if not isinstance(message, dict) or not isinstance(message.get("id"), str):
            continue
        if message["id"] in messages:  # what the checkpoint has of it (its parts) over what we read
            messages[message["id"]] = {**messages[message["id"]], **message}
        elif _gemini_key(message) not in dropped:
            messages[message["id"]] = message


def _gemini_key(message: dict[str, Any]) -> tuple[str, str]:
    """A turn as the reader sees it: a compression's copy of a turn has a new id and the same words."""
    words = _gemini_text(message.get("content")).strip()
    return (str(message.get("type")), words or f"(no words) {message.get('id')}")


def _gemini_user_words(message: dict[str, Any]) -> str:
    """The user's own words in a user message: what they typed (``displayContent``) when the CLI kept it
    apart from what it sent, without what hooks added and without the CLI's environment message."""
    words = _gemini_text(message.get("displayContent")) or _gemini_text(message.get("content"))
    words = GEMINI_HOOK_CONTEXT.sub("", words).strip()
    return "" if words.startswith(GEMINI_OWN_OPENINGS) else words


def _gemini_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):  # Gemini API parts; a thought part is the model's reasoning
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("text") and not p.get("thought")
        )
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
    output = GEMINI_UNTRUSTED.sub("", "\n".join(outputs)).strip()
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
