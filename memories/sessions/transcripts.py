"""Agent transcripts in a client's own format, turned into the compact trace distillation reads
(docs/claude-code.md#what-the-service-keeps-of-a-transcript), and the session's outcome inferred from
them — conservatively: ``unknown`` unless the transcript says so plainly.

One converter per client format (``TRACE_FORMATS``), shared by every client that sends it, so a hook
never parses a transcript itself. ``claude-code-jsonl`` is Claude Code's session file: one JSON object
per line; ``user`` and ``assistant`` lines carry an Anthropic Messages ``message`` whose ``content`` is
a string or a list of blocks (``text``, ``thinking``, ``tool_use`` with ``id``/``name``/``input``,
``tool_result`` with ``tool_use_id``/``content``/``is_error``); ``isSidechain`` marks a subagent's
lines; every other line type (``summary``, ``system``, ``file-history-snapshot``, …) is bookkeeping.
The format is Claude Code's internal one and changes between releases, so unknown line types and
blocks are skipped, never an error, and a line that is not JSON (the first line of a tail cut
mid-line) is skipped too.

Pure: no Django. Secrets are the caller's business (the service scrubs the raw text before and the
trace after, memories/sessions/services.py), which is why nothing here keeps a value it cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memories.code.transcript_anchors import session_places

__pure__ = True  # Django-free (tests/test_import_contracts.py): listed in pyproject's import-linter contract

PLAIN, CLAUDE_CODE_JSONL = "plain", "claude-code-jsonl"
# the other clients' formats, converted in memories/sessions/transcripts_agents.py
CODEX_ROLLOUT_JSONL, GEMINI_CLI_JSON, CURSOR_JSONL = "codex-rollout-jsonl", "gemini-cli-json", "cursor-jsonl"
# a batch of a repository's commits, converted in memories/code/history_trace.py (docs/code-memory.md)
GIT_LOG = "git-log"
TRACE_FORMATS = (PLAIN, CLAUDE_CODE_JSONL, CODEX_ROLLOUT_JSONL, GEMINI_CLI_JSON, CURSOR_JSONL, GIT_LOG)

TEXT_MAX = 4000  # a user prompt or an assistant message longer than this keeps its head and tail
OUTPUT_MAX = 1500  # a tool's output: the head says what ran, the tail how it ended
INPUT_VALUE_MAX = 400  # one value of a tool's input (a whole file given to Write, say)

# the tools that change files: tests run before the last edit say nothing about the code as it ended
# (Claude Code's and Cursor's, Codex's apply_patch, Gemini CLI's write_file and replace)
EDIT_TOOLS = frozenset(
    {"Edit", "MultiEdit", "Write", "NotebookEdit", "StrReplace", "Delete", "apply_patch", "write_file", "replace"}
)
# a shell command that runs a test suite
TEST_COMMAND = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|"
    r"(npm|pnpm|yarn|bun)\s+(run\s+)?test|go\s+test|cargo\s+(test|nextest)|mvn\s+\S*\s*test|gradle\w*\s+test|"
    r"dotnet\s+test|mix\s+test|make\s+(test|check)|manage\.py\s+test|scripts/test\.sh)\b"
)
# how a test run ended, read from its output: a failure anywhere wins over a pass
TESTS_FAILED = re.compile(
    r"(\b[1-9]\d*\s+(failed|failing|failures?|errors?)\b|\bFAILED\b|\bFAIL\b|\bTests?\s+failed\b|"
    r"test result: FAILED|\bERRORS?\b:|\bnot ok\b)"
)
TESTS_PASSED = re.compile(
    r"(\b\d+\s+passed\b|\bTests?:\s+\d+\s+passed|\bPASS\b|test result: ok|\bOK\b(\s+\(|$)|\ball tests passed\b|"
    r"^ok\s+\S+)",
    re.MULTILINE,
)
# an explicit verdict in the user's last words; anything less plain stays unknown
USER_FAILURE = re.compile(
    r"\b(still\s+(fails|failing|broken|doesn'?t|does not|not working|crash\w*|erroring)|"
    r"(doesn'?t|does not|didn'?t|did not)\s+work|not\s+working|that('?s| is)\s+(wrong|broken)|"
    r"you\s+broke|it\s+broke|revert\s+(it|that|this|everything)|give\s+up)\b",
    re.IGNORECASE,
)
USER_SUCCESS = re.compile(
    r"\b(works( now| great| perfectly)?|it\s+works|that\s+work(s|ed)|fixed( it)?|"
    r"thanks?( you)?|thx|perfect|lgtm|looks\s+good|great\s+job|well\s+done|all\s+good|ship\s+it)\b",
    re.IGNORECASE,
)
VERDICT_MAX_CHARS = 200  # a long message is a new request, not a verdict


@dataclass
class Converted:
    """A transcript as distillation reads it, and what it says about the session."""

    trace: str
    outcome: str  # "success", "failure" or "unknown"
    outcome_reason: str
    prompts: int = 0  # the user's own prompts (tool results are not prompts)
    tool_calls: int = 0
    sidechain_lines: int = 0
    # the files read and edited, tests run and errors met (memories/code/transcript_anchors.py)
    places: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ToolCall:
    name: str
    command: str  # a Bash call's command, else ""
    index: int  # position among the session's events
    output: str = ""
    is_error: bool = False
    answered: bool = False
    tool_input: dict[str, Any] = field(default_factory=dict)  # what the call was given (its file, its patch)


@dataclass
class Reading:
    lines: list[str] = field(default_factory=list)
    prompts: list[tuple[int, str]] = field(default_factory=list)  # (event index, text)
    calls: dict[str, ToolCall] = field(default_factory=dict)
    events: int = 0
    last_tool_call: int = -1
    sidechain: int = 0
    cwd: str = ""  # the session's working directory, when the transcript says it: paths are made relative to it


def trace_convert(text: str, trace_format: str) -> Converted:
    """``text`` in ``trace_format`` as a compact trace with the outcome it shows."""
    if trace_format == PLAIN:
        return Converted(trace=text, outcome="unknown", outcome_reason="a plain trace is not read for an outcome")
    if trace_format == CLAUDE_CODE_JSONL:
        return claude_code_convert(text)
    if trace_format == GIT_LOG:
        from memories.code.history_trace import git_log_convert  # imports this module: loaded on first use

        return git_log_convert(text)
    if trace_format in TRACE_FORMATS:
        from memories.sessions import transcripts_agents  # imports this module: loaded on first use

        return transcripts_agents.CONVERTERS[trace_format](text)
    raise ValueError(f"unknown trace format {trace_format!r}; expected one of {', '.join(TRACE_FORMATS)}")


def claude_code_convert(text: str) -> Converted:
    """A Claude Code session file (JSON Lines) as a compact trace: the user's prompts, the assistant's
    text, each tool call with its input and how it came out, long texts cut in the middle, a
    subagent's lines marked ``[sidechain]``."""
    reading = Reading()
    for record in json_lines(text):
        kind = record.get("type")
        message = record.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict) or record.get("isMeta"):
            continue
        if not reading.cwd and isinstance(record.get("cwd"), str):
            reading.cwd = record["cwd"]
        mark = "[sidechain] " if record.get("isSidechain") else ""
        reading.sidechain += bool(mark)
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            continue
        for block in blocks:
            if isinstance(block, dict):
                _block_read(reading, kind, block, mark, compact=bool(record.get("isCompactSummary")))
    return reading_converted(reading)


def reading_converted(reading: Reading) -> Converted:
    """What a converter read, as the trace and the outcome it shows."""
    outcome, reason = outcome_infer(reading)
    return Converted(
        trace="\n".join(reading.lines),
        outcome=outcome,
        outcome_reason=reason,
        prompts=len(reading.prompts),
        tool_calls=len(reading.calls),
        sidechain_lines=reading.sidechain,
        places=session_places(reading.calls.values(), reading.cwd),
    )


def json_lines(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a tail cut mid-line, or a line the format will grow into
        if isinstance(record, dict):
            yield record


def _block_read(reading: Reading, kind: str, block: dict[str, Any], mark: str, *, compact: bool) -> None:
    block_type = block.get("type")
    index = reading.events
    reading.events += 1
    if block_type == "text" and isinstance(block.get("text"), str):
        words = block["text"].strip()
        if not words or _is_command_markup(words):
            return
        if kind == "assistant":
            reading.lines.append(f"{mark}[assistant] {cut(words, TEXT_MAX)}")
        elif compact:
            reading.lines.append(f"{mark}[summary of the conversation before] {cut(words, TEXT_MAX)}")
        else:
            reading.lines.append(f"{mark}[user] {cut(words, TEXT_MAX)}")
            if not mark:  # a subagent's prompt is the assistant's words, not the user's
                reading.prompts.append((index, words))
    elif block_type == "tool_use" and kind == "assistant":
        name = str(block.get("name") or "tool")
        given = block.get("input")
        tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
        command = str(tool_input.get("command") or "") if name == "Bash" else ""
        reading.calls[str(block.get("id") or f"call-{index}")] = ToolCall(name, command, index, tool_input=tool_input)
        reading.lines.append(f"{mark}[tool {name}] {input_text(tool_input)}")
        reading.last_tool_call = index
    elif block_type == "tool_result" and kind == "user":
        call = reading.calls.get(str(block.get("tool_use_id") or ""))
        output = result_text(block.get("content"))
        failed = bool(block.get("is_error"))
        if call is not None:
            call.output, call.is_error, call.answered = output, failed, True
        name = call.name if call is not None else "tool"
        status = "error" if failed else "ok"
        reading.lines.append(f"{mark}[{name} {status}] {cut(output, OUTPUT_MAX) if output else '(no output)'}")


def _is_command_markup(text: str) -> bool:
    """Claude Code's own wrapping of a slash command and its caveat: bookkeeping, not a prompt."""
    return text.startswith(("<local-command-caveat>", "<command-name>", "<local-command-stdout>", "<command-message>"))


def input_text(tool_input: dict[str, Any]) -> str:
    """A tool's input as compact JSON, each long value cut (a whole file given to Write)."""
    shown = {key: cut(value, INPUT_VALUE_MAX) if isinstance(value, str) else value for key, value in tool_input.items()}
    return cut(json.dumps(shown, ensure_ascii=False, default=str), INPUT_VALUE_MAX * 3)


def result_text(content: Any) -> str:
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        parts = [str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"]
        images = sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image")
        return "\n".join(parts + [f"({images} image{'s' * (images > 1)})"] * bool(images)).strip()
    return ""


def cut(text: str, limit: int) -> str:
    """``text`` at most about ``limit`` characters: its head and tail, with how much was cut between."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]} … [{len(text) - head - tail:,} characters cut] … {text[-tail:]}"


def outcome_infer(reading: Reading) -> tuple[str, str]:
    """How the session ended, and why we think so. An explicit verdict in the user's last prompt
    (short, and with no tool call after it: a "thanks, now add …" that started more work is no
    verdict) decides; without one, the last test run decides if no file
    was edited after it; anything else is ``unknown``: a wrong success would reinforce what failed."""
    if reading.prompts:
        at, words = reading.prompts[-1]
        if at > reading.last_tool_call and len(words) <= VERDICT_MAX_CHARS:
            if USER_FAILURE.search(words):
                return "failure", "the user's last words say it did not work"
            if USER_SUCCESS.search(words):
                return "success", "the user's last words say it worked"
    runs = [call for call in reading.calls.values() if call.command and TEST_COMMAND.search(call.command)]
    if not runs:
        return "unknown", "no verdict from the user and no test run"
    last = max(runs, key=lambda call: call.index)
    edits = [call for call in reading.calls.values() if call.name in EDIT_TOOLS and call.index > last.index]
    if edits:
        return "unknown", "files were edited after the last test run"
    if not last.answered:
        return "unknown", "the last test run has no result in the transcript"
    if last.is_error or TESTS_FAILED.search(last.output):
        return "failure", "the last test run failed"
    if TESTS_PASSED.search(last.output):
        return "success", "the last test run passed"
    return "unknown", "the last test run's output says neither pass nor fail"
