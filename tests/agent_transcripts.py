"""Session files of Codex CLI, Gemini CLI and Cursor written for the tests, each in its client's own
format as its hooks find it at ``transcript_path`` (memories/sessions/transcripts_agents.py describes
the formats): the same session as tests/claude_code_transcript.py — the user asks to fix a flaky
checkout test, the agent runs the tests (they fail), edits the test, prints an environment file holding
a secret, runs the tests again (they pass) and the user says thanks. Plain data, no Django."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.claude_code_transcript import SECRET

TASK = "Fix the flaky checkout test ({marker}): test_checkout_total fails one run in three."
FIXED = "The cart fixture was shared between tests; test_checkout_total now builds its own ({marker})."


def _failing(passing: bool) -> str:
    return "3 passed in 0.41s" if passing else "FAILED tests/test_checkout.py::test_checkout_total\n1 failed, 2 passed"


def codex_rollout_text(
    *,
    session_id: str,
    cwd: str = "/home/dev/shop",
    marker: str = "E2E-fixture",
    verdict: str = "Thanks, that works now.",
) -> str:
    """A Codex CLI rollout file (``~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl``)."""
    stamp = "2026-11-27T09:00:00.000Z"

    def line(kind: str, payload: dict[str, Any]) -> str:
        return json.dumps({"timestamp": stamp, "type": kind, "payload": payload})

    def user(text: str) -> list[str]:
        item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        return [
            line("response_item", item),
            line("event_msg", {"type": "user_message", "message": text, "kind": "plain"}),
        ]

    def assistant(text: str) -> list[str]:
        item = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
        return [line("response_item", item), line("event_msg", {"type": "agent_message", "message": text})]

    def shell(call_id: str, command: str, output: str, code: int) -> list[str]:
        arguments = json.dumps({"command": ["bash", "-lc", command], "workdir": cwd, "timeout_ms": 120000})
        result = json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.4}})
        return [
            line(
                "response_item", {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}
            ),
            line("response_item", {"type": "function_call_output", "call_id": call_id, "output": result}),
        ]

    patch = (
        "*** Begin Patch\n*** Update File: tests/test_checkout.py\n@@\n"
        "-cart = SHARED_CART\n+cart = make_cart()\n*** End Patch"
    )
    lines = [
        line(
            "session_meta",
            {"id": session_id, "timestamp": stamp, "cwd": cwd, "originator": "codex_cli_rs", "cli_version": "0.63.0"},
        ),
        line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"}
                ],
            },
        ),
        line("turn_context", {"cwd": cwd, "approval_policy": "on-request", "model": "gpt-5-codex"}),
        *user(TASK.format(marker=marker)),
        line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAB" + "x" * 200}),
        *assistant("Running the checkout tests first."),
        *shell("call_1", "pytest tests/test_checkout.py -q", _failing(False), 1),
        line("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": "call_2"}),
        line(
            "response_item",
            {
                "type": "custom_tool_call_output",
                "call_id": "call_2",
                "output": json.dumps(
                    {
                        "output": "Success. Updated the following files:\nM tests/test_checkout.py\n",
                        "metadata": {"exit_code": 0},
                    }
                ),
            },
        ),
        *shell("call_3", "cat .env", f"STRIPE_KEY=sk_test_placeholder\nANTHROPIC_API_KEY={SECRET}\n", 0),
        *shell("call_4", "pytest tests/test_checkout.py -q", _failing(True), 0),
        *assistant(FIXED.format(marker=marker)),
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 5120}}}),
        *user(verdict),
    ]
    return "\n".join(lines) + "\n"


def gemini_session_text(
    *, session_id: str, marker: str = "E2E-fixture", verdict: str = "Thanks, that works now."
) -> str:
    """A Gemini CLI chat recording in the format before 0.39: one JSON object
    (``~/.gemini/tmp/<project hash>/chats/session-….json``)."""
    stamp = "2026-11-27T09:00:00.000Z"

    def shell_call(call_id: str, command: str, output: str, code: int) -> dict[str, Any]:
        llm = f"Command: {command}\nDirectory: (root)\nOutput: {output}\nError: (none)\nExit Code: {code}"
        return {
            "id": call_id,
            "name": "run_shell_command",
            "args": {"command": command, "description": "Run the checkout tests"},
            "result": [{"functionResponse": {"id": call_id, "name": "run_shell_command", "response": {"output": llm}}}],
            "status": "success",
            "timestamp": stamp,
            "resultDisplay": output,
            "displayName": "Shell",
            "description": "",
            "renderOutputAsMarkdown": False,
        }

    edit = {
        "id": "replace-2",
        "name": "replace",
        "args": {
            "file_path": "/home/dev/shop/tests/test_checkout.py",
            "old_string": "cart = SHARED_CART",
            "new_string": "cart = make_cart()",
        },
        "result": [
            {
                "functionResponse": {
                    "id": "replace-2",
                    "name": "replace",
                    "response": {"output": "Successfully modified file"},
                }
            }
        ],
        "status": "success",
        "timestamp": stamp,
    }
    tokens = {"input": 5120, "output": 210, "cached": 0, "thoughts": 40, "tool": 0, "total": 5370}
    messages = [
        {"id": "m1", "timestamp": stamp, "type": "user", "content": TASK.format(marker=marker)},
        {
            "id": "m2",
            "timestamp": stamp,
            "type": "gemini",
            "content": "Running the checkout tests first.",
            "thoughts": [{"subject": "Plan", "description": "run tests", "timestamp": stamp}],
            "tokens": tokens,
            "model": "gemini-2.5-pro",
            "toolCalls": [shell_call("run_shell_command-1", "pytest tests/test_checkout.py -q", _failing(False), 1)],
        },
        {
            "id": "m3",
            "timestamp": stamp,
            "type": "gemini",
            "content": "",
            "tokens": tokens,
            "model": "gemini-2.5-pro",
            "toolCalls": [edit, shell_call("run_shell_command-3", "cat .env", f"ANTHROPIC_API_KEY={SECRET}", 0)],
        },
        {
            "id": "m4",
            "timestamp": stamp,
            "type": "gemini",
            "content": FIXED.format(marker=marker),
            "tokens": tokens,
            "model": "gemini-2.5-pro",
            "toolCalls": [shell_call("run_shell_command-4", "pytest tests/test_checkout.py -q", _failing(True), 0)],
        },
        {"id": "m5", "timestamp": stamp, "type": "info", "content": "Request cancelled."},
        {"id": "m6", "timestamp": stamp, "type": "user", "content": verdict},
    ]
    return json.dumps(
        {
            "sessionId": session_id,
            "projectHash": "ab" * 32,
            "startTime": stamp,
            "lastUpdated": stamp,
            "messages": messages,
        },
        indent=2,
    )


# A chat recording written by the real Gemini CLI 0.61.0 (npm @google/gemini-cli) run headless against a
# stand-in for the Gemini API on loopback, in a project whose .env holds SECRET, with the hooks of
# integrations/gemini-cli/settings.json's shape answering SessionStart and BeforeAgent with a memory block:
# the same session, then resumed (``--resume latest``) for the verdict. Only its paths were rewritten
# (to /home/dev). It shows the current format as the CLI writes it: the metadata line, the ``$set``
# checkpoints (the environment at start; the whole history again on resume), each model message written
# again once its tool calls are done, the tool outputs as ``functionResponse`` user messages, thoughts,
# token counts, and the hooks' context inside the user's turns.
GEMINI_RECORDING = Path(__file__).resolve().parent / "transcripts" / "gemini-cli-0.61.0-session.jsonl"
GEMINI_RECORDING_SESSION, GEMINI_RECORDING_MARKER = "45731ba3-3159-4299-b046-efb1103ef4b2", "MARKER"


def gemini_recording_text(*, session_id: str = GEMINI_RECORDING_SESSION, marker: str = "E2E-fixture") -> str:
    """The real Gemini CLI 0.61.0 recording (JSON Lines), under ``session_id`` and with ``marker`` in the
    task and the final answer."""
    text = GEMINI_RECORDING.read_text()
    return text.replace(GEMINI_RECORDING_SESSION, session_id).replace(GEMINI_RECORDING_MARKER, marker)


def cursor_transcript_text(*, marker: str = "E2E-fixture", verdict: str = "Thanks, that works now.") -> str:
    """A Cursor agent transcript (``~/.cursor/projects/<project>/agent-transcripts/<id>.jsonl``): text and
    tool calls, no tool results (Cursor does not write them there)."""

    def say(role: str, *blocks: dict[str, Any]) -> str:
        return json.dumps({"role": role, "message": {"content": list(blocks)}})

    def text(words: str) -> dict[str, Any]:
        return {"type": "text", "text": words}

    def tool(name: str, **tool_input: Any) -> dict[str, Any]:
        return {"type": "tool_use", "name": name, "input": tool_input}

    lines = [
        say("user", text(f"<user_query>\n{TASK.format(marker=marker)}\n</user_query>")),
        say(
            "assistant",
            text("Running the checkout tests first."),
            tool("Shell", command="pytest tests/test_checkout.py -q"),
        ),
        say(
            "assistant",
            tool(
                "StrReplace",
                path="tests/test_checkout.py",
                old_string="cart = SHARED_CART",
                new_string="cart = make_cart()",
            ),
        ),
        say(
            "assistant",
            tool("Shell", command="cat .env"),
            text(f"The file holds ANTHROPIC_API_KEY={SECRET}; I left it alone."),
        ),
        say("assistant", tool("Shell", command="pytest tests/test_checkout.py -q"), text(FIXED.format(marker=marker))),
        say("user", text(f"<user_query>\n{verdict}\n</user_query>")),
    ]
    return "\n".join(lines) + "\n"
