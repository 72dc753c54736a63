"""Gemini CLI (docs/gemini-cli.md), tried with 0.61.0. The event on stdin: ``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, ``timestamp``, and per event ``source``
(SessionStart), ``prompt`` (BeforeAgent), ``prompt``, ``prompt_response`` and ``stop_hook_active``
(AfterAgent), ``reason`` (SessionEnd), ``tool_name``, ``tool_input`` and ``tool_response`` (AfterTool:
``llmContent``, ``returnDisplay``, ``error``). Context goes back as ``hookSpecificOutput.additionalContext``
from SessionStart, BeforeAgent and AfterTool; stdout is parsed as JSON, so nothing else may be printed there. Gemini CLI
does not wait for a SessionEnd hook, so every turn is handed in as it ends (AfterAgent, ``partial``) and
the last one stands if SessionEnd is cut short.

The recording is JSON Lines since Gemini CLI 0.39 (``session-….jsonl``: a metadata line, each message
written again whole each time it changes, ``$set`` and ``$rewindTo`` records) and one JSON object before
(``session-….json``); both are read, and replayed into the messages as the session ended the way the
service reads them (memories/sessions/transcripts_agents.py, which says what each record means). What is
sent is the old single object — ``sessionId`` and the conversation's messages, without their thoughts
and token counts, the CLI's own environment message and the parts a hook added — which every release of
the service reads (``gemini-cli-json``). A long one is cut to its first message (the task) and as many
of its last messages as fit; of a recording longer than the read bound only the two ends are read
(docs/security/hooks.md)."""

from __future__ import annotations

import json
import re
from typing import Any

from ..budget import deadline_check
from ..errors import HookError
from ..reading import transcript_ends
from .base import CAPTURE, PROMPT, SESSION_START, TOOL, Adapter

CONVERSATION = ("user", "gemini")  # info, error and warning messages are the CLI's, not the session's
MESSAGE_TYPES = (*CONVERSATION, "info", "error", "warning")  # every message a recording holds
SESSION_ID = re.compile(r'"sessionId"\s*:\s*("(?:[^"\\]|\\.)*")')
DROPPED_KEYS = ("thoughts", "tokens")  # bulk the service never reads
HOOK_CONTEXT = re.compile(r"<hook_context>.*?</hook_context>", re.DOTALL)  # what a hook added (ours too)
OWN_OPENINGS = ("<session_context>",)  # the environment the CLI sends first: not the user's words


def transcript(path: str, limit: int) -> tuple[str, int]:
    """The chat recording as one JSON object within ``limit`` bytes, and how many conversation messages
    it has."""
    head, body = transcript_ends(path, limit, "chat recording")
    if lines_format(head or body):
        session, found = replay(head, body)
    else:
        try:
            record = recording_ends(head, body) if head else json.loads(body.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            raise HookError("the chat recording is not JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
            raise HookError("the chat recording has no messages")
        session, found = record.get("sessionId"), record["messages"]
    messages = [message_kept(message) for message in found if isinstance(message, dict)]
    messages = [message for message in messages if message is not None]
    kept = messages[:1]
    room = limit - 200 - len(json.dumps(kept, ensure_ascii=False).encode())
    tail: list[dict[str, Any]] = []
    for message in reversed(messages[1:]):  # the end first: how the session went
        cost = len(json.dumps(message, ensure_ascii=False).encode()) + 2
        if cost > room:
            break
        tail.append(message)
        room -= cost
    sent = {"sessionId": session, "messages": kept + tail[::-1]}
    return json.dumps(sent, ensure_ascii=False), len(messages)


def lines_format(data: bytes) -> bool:
    """Whether a recording is JSON Lines: its first line is a whole JSON object (the old format's
    first line is ``{`` alone, or the whole object)."""
    first = data.split(b"\n", 1)[0].strip()
    try:
        return first.startswith(b"{") and isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):
        return False


def replay(head: bytes, tail: bytes) -> tuple[Any, list[dict[str, Any]]]:
    """The session id and the messages of a JSON Lines recording as the session ended: the head's records
    then the tail's (the whole file when ``head`` is empty), replayed as the service does. A line cut by
    the bounded read does not parse and is skipped. When the middle was not read, a ``$rewindTo`` whose
    message is not known drops what the tail brought (the CLI would drop everything, but the head's
    messages come before any message of the middle)."""
    metadata: dict[str, Any] = {}
    messages: dict[str, dict[str, Any]] = {}
    from_tail: set[str] = set()
    for part, is_tail in ((head, False), (tail, bool(head))):
        for number, line in enumerate(part.split(b"\n")):
            if number % 256 == 0:
                deadline_check("chat recording")
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if not isinstance(record, dict):
                continue
            if isinstance(record.get("$rewindTo"), str):
                ids = list(messages)
                target = record["$rewindTo"]
                gone = ids[ids.index(target) :] if target in messages else ids if not head else list(from_tail)
                for key in gone:
                    messages.pop(key, None)
            elif isinstance(record.get("id"), str):
                if is_tail and record["id"] not in messages:
                    from_tail.add(record["id"])
                messages[record["id"]] = record
            elif isinstance(record.get("$set"), dict):
                listed = record["$set"].get("messages")
                if isinstance(listed, list):
                    checkpoint(messages, listed)
                metadata.update({k: v for k, v in record["$set"].items() if k != "messages"})
            else:
                metadata.update({k: v for k, v in record.items() if k != "messages"})
                for message in record.get("messages") or []:  # a recording migrated from the old format
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        messages[message["id"]] = message
    return metadata.get("sessionId"), list(messages.values())


def checkpoint(messages: dict[str, dict[str, Any]], listed: list[Any]) -> None:
    """A ``$set`` of ``messages`` (start, resume, a cancelled turn, a compression) updates the messages
    it holds and adds the new ones; the turns it no longer holds stay, and its copies of them (a
    compression's, with new ids) are not added twice."""
    held = {message.get("id") for message in listed if isinstance(message, dict)}
    dropped = {turn_key(message) for key, message in messages.items() if key not in held}
    for message in listed:
        if not isinstance(message, dict) or not isinstance(message.get("id"), str):
            continue
        if message["id"] in messages:
            messages[message["id"]] = {**messages[message["id"]], **message}
        elif turn_key(message) not in dropped:
            messages[message["id"]] = message


def turn_key(message: dict[str, Any]) -> tuple[str, str]:
    words = content_words(message.get("content")).strip()
    return (str(message.get("type")), words or f"(no words) {message.get('id')}")


def content_words(content: Any) -> str:
    """The words of a message's content: a string, or Gemini API parts (a thought part is reasoning)."""
    if isinstance(content, str):
        return content
    parts = [content] if isinstance(content, dict) else content if isinstance(content, list) else []
    return "\n".join(str(p["text"]) for p in parts if isinstance(p, dict) and p.get("text") and not p.get("thought"))


def message_kept(message: dict[str, Any]) -> dict[str, Any] | None:
    """A conversation message as sent, or None for one the service would find nothing in: the CLI's
    environment, a turn that holds only what a hook added or a tool's output (the same output is in
    the tool call), a model turn with neither words nor tool calls."""
    if message.get("type") not in CONVERSATION:
        return None
    kept = {key: value for key, value in message.items() if key not in DROPPED_KEYS}
    if message.get("type") == "gemini":
        return kept if content_words(message.get("content")).strip() or message.get("toolCalls") else None
    if isinstance(kept.get("content"), list):  # the parts a hook added whole are the hook's, not the user's
        kept["content"] = [p for p in kept["content"] if not (isinstance(p, dict) and hook_part(p))]
    words = HOOK_CONTEXT.sub(
        "", content_words(kept.get("displayContent")) or content_words(kept.get("content"))
    ).strip()
    return kept if words and not words.startswith(OWN_OPENINGS) else None


def hook_part(part: dict[str, Any]) -> bool:
    words = str(part.get("text") or "").strip()
    return bool(words) and not HOOK_CONTEXT.sub("", words).strip()


def recording_ends(head: bytes, tail: bytes) -> dict[str, Any]:
    """An old-format recording too long to read whole, rebuilt from its two ends: the session id and the
    first message from the head, and every message the tail holds whole."""
    opening = head.decode("utf-8", "replace")
    session = SESSION_ID.search(opening)
    start = opening.find('"messages"')
    first = messages_whole(opening, start, most=1) if start >= 0 else []
    return {
        "sessionId": json.loads(session.group(1)) if session else None,
        "messages": first + messages_whole(tail.decode("utf-8", "replace"), 0),
    }


def messages_whole(text: str, start: int, most: int = 0) -> list[dict[str, Any]]:
    """The messages that parse whole in a cut of the recording, in order (at most ``most`` of them when
    it is not 0): the objects found from each ``{`` on that have a message's ``type`` and ``id``. A ``{``
    inside a string cannot start one (a string's quotes are escaped), and an object that is not a
    message is skipped whole, so a cut mid-message costs only the scan of that message."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    position = text.find("{", start)
    while position >= 0 and not (most and len(found) >= most):
        deadline_check("chat recording")
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            value, end = None, position + 1
        if isinstance(value, dict) and value.get("type") in MESSAGE_TYPES and "id" in value:
            found.append(value)
        position = text.find("{", end)
    return found


ADAPTER = Adapter(
    name="gemini-cli",
    label="reasoningbank-gemini",
    user_agent="reasoningbank-gemini-cli-hook",
    events={
        "SessionStart": SESSION_START,
        "BeforeAgent": PROMPT,
        "AfterAgent": CAPTURE,  # after each turn: the session goes on
        "SessionEnd": CAPTURE,
        # BeforeTool cannot add context; AfterTool appends it to the tool's result, which the model reads next
        "AfterTool": TOOL,
    },
    final_events=frozenset({"SessionEnd"}),
    trace_format="gemini-cli-json",
    transcript=transcript,
    file_tools={
        "read_file": ("file_path", "absolute_path"),
        "replace": ("file_path",),
        "write_file": ("file_path",),
    },
    shell_tools=frozenset({"run_shell_command"}),
)
