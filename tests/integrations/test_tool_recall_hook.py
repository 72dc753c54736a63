"""The ``tool`` hook: recall at the moment of action (docs/code-memory.md#recall-at-the-moment-of-action),
run as each client runs it — a process given the client's real hook event on stdin — against a stand-in
for the service: before Claude Code's Read/Edit/Write (PreToolUse) the file's path, the working tree's top
and its remote are sent and the block comes back as the event's additionalContext; after a failing Bash
(PostToolUseFailure, or PostToolUse with an error in its output) the output's tail is sent. Nothing is sent
for a command that succeeded or a file outside any tree; every failure is quiet. Against the live service:
tests/e2e/test_tool_recall_hook.py."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent_hook_events import claude_code_event, codex_event, gemini_event
from tests.hook_state import hook_env
from tests.integrations.conftest import PROMPT_BLOCK

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = {
    "claude-code": REPO / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py",
    "codex": REPO / "integrations" / "codex" / "reasoningbank_codex.py",
    "gemini": REPO / "integrations" / "gemini-cli" / "reasoningbank_gemini.py",
}
REMOTE = "git@github.com:acme/shop.git"
FAILED_TESTS = """============================= test session starts ==============================
tests/test_cart.py F
=================================== FAILURES ===================================
tests/test_cart.py:14: in test_checkout
    assert cart.total() == 3
shop/cart.py:9: in total
    return self.sum / self.count
E   ZeroDivisionError: division by zero
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_checkout - ZeroDivisionError: division by zero
"""


def run(client: str, event: dict[str, Any], url: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPTS[client]), "tool"],
        input=json.dumps(event),
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_test", **env),
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A git working tree with an origin remote and a file in a module, as ``git`` makes them."""
    root = tmp_path / "shop"
    (root / "shop" / "payments").mkdir(parents=True)
    (root / "shop" / "payments" / "refunds.py").write_text("def refund(): ...\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", REMOTE], check=True)
    return root


def read_event(tree: Path, tool: str = "Read", **extra: Any) -> dict[str, Any]:
    """Claude Code's PreToolUse input for a file tool (hooks reference: tool_name, tool_input with an
    absolute file_path, tool_use_id)."""
    return claude_code_event(
        "PreToolUse",
        cwd=str(tree),
        tool_name=tool,
        tool_input={"file_path": str(tree / "shop" / "payments" / "refunds.py"), **extra},
        tool_use_id="toolu_01ABCDEF",
    )


def test_before_a_read_the_files_path_tree_and_remote_are_sent_and_the_block_comes_back_as_context(stand, tree):
    state, url = stand

    done = run("claude-code", read_event(tree), url)

    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": PROMPT_BLOCK}
    }
    ((path, body, auth),) = state.requests
    assert path == "/api/v1/memories/recall" and auth == "Bearer rb_test"
    assert body == {
        "path": str(tree / "shop" / "payments" / "refunds.py"),
        "root": str(tree),
        "repository": REMOTE,
        "session_id": "9f3c2a1e-claude",
        "limit": 2,
        "token_budget": 500,
    }


@pytest.mark.parametrize("tool", ["Edit", "Write", "MultiEdit"])
def test_before_an_edit_or_a_write_the_file_is_looked_up_the_same_way(stand, tree, tool):
    state, url = stand

    done = run("claude-code", read_event(tree, tool, old_string="a", new_string="b"), url)

    assert json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] == PROMPT_BLOCK
    assert state.requests[0][1]["path"].endswith("shop/payments/refunds.py")


def test_a_notebook_edit_sends_its_notebook_path(stand, tree):
    state, url = stand
    notebook = tree / "analysis.ipynb"
    event = claude_code_event(
        "PreToolUse", cwd=str(tree), tool_name="NotebookEdit", tool_use_id="toolu_02",
        tool_input={"notebook_path": str(notebook), "new_source": "print(1)", "cell_id": "c1"},
    )  # fmt: skip

    run("claude-code", event, url)

    assert state.requests[0][1]["path"] == str(notebook)


def test_the_caps_come_from_the_environment(stand, tree):
    state, url = stand

    run("claude-code", read_event(tree), url, REASONINGBANK_RECALL_MEMORIES="4", REASONINGBANK_RECALL_TOKENS="900")

    assert (state.requests[0][1]["limit"], state.requests[0][1]["token_budget"]) == (4, 900)


def test_a_file_outside_any_working_tree_and_the_sessions_directory_sends_nothing(stand, tree, tmp_path):
    state, url = stand
    elsewhere = tmp_path / "notes.txt"
    elsewhere.write_text("x")
    event = claude_code_event(
        "PreToolUse", cwd=str(tree), tool_name="Read", tool_input={"file_path": str(elsewhere)}, tool_use_id="t"
    )

    done = run("claude-code", event, url)

    assert (done.returncode, done.stdout, done.stderr, state.requests) == (0, "", "", [])


def test_a_file_in_the_sessions_directory_outside_git_is_sent_relative_to_that_directory(stand, tmp_path):
    state, url = stand
    (tmp_path / "plain").mkdir()
    event = claude_code_event(
        "PreToolUse", cwd=str(tmp_path / "plain"), tool_name="Read", tool_input={"file_path": "notes/a.md"},
        tool_use_id="t",
    )  # fmt: skip

    run("claude-code", event, url)

    ((_, body, _),) = state.requests
    assert body["path"] == str(tmp_path / "plain" / "notes" / "a.md") and body["root"] == str(tmp_path / "plain")
    assert "repository" not in body


def test_a_failing_bash_sends_the_tail_of_its_output_and_gets_the_block_for_its_failure_event(stand, tree):
    state, url = stand
    error = "Exit code 1\n" + "x" * 20_000 + "\n" + FAILED_TESTS
    event = claude_code_event(
        "PostToolUseFailure", cwd=str(tree), tool_name="Bash", tool_input={"command": "pytest -q"},
        tool_use_id="toolu_03", error=error, is_interrupt=False, duration_ms=812,
    )  # fmt: skip

    done = run("claude-code", event, url)

    assert json.loads(done.stdout) == {
        "hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": PROMPT_BLOCK}
    }
    ((path, body, _),) = state.requests
    assert path == "/api/v1/memories/recall"
    assert body["error"] == error[-8000:] and body["error"].endswith(FAILED_TESTS)
    assert body["repository"] == REMOTE and "path" not in body


def test_a_bash_that_exited_0_with_an_error_in_its_output_is_looked_up_too(stand, tree):
    state, url = stand
    event = claude_code_event(
        "PostToolUse", cwd=str(tree), tool_name="Bash", tool_input={"command": "pytest -q 2>&1 | tail -20"},
        tool_use_id="toolu_04",
        tool_response={"stdout": FAILED_TESTS, "stderr": "", "interrupted": False, "isImage": False},
    )  # fmt: skip

    done = run("claude-code", event, url)

    assert json.loads(done.stdout)["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert FAILED_TESTS in state.requests[0][1]["error"]


@pytest.mark.parametrize(
    "event",
    [
        claude_code_event(
            "PostToolUse", tool_name="Bash", tool_input={"command": "pytest -q"}, tool_use_id="t",
            tool_response={"stdout": "12 passed in 0.40s", "stderr": "", "interrupted": False, "isImage": False},
        ),
        claude_code_event(
            "PostToolUseFailure", tool_name="Bash", tool_input={"command": "sleep 100"}, tool_use_id="t",
            error="Command was interrupted", is_interrupt=True,
        ),
        claude_code_event("PreToolUse", tool_name="Glob", tool_input={"pattern": "**/*.py"}, tool_use_id="t"),
        claude_code_event("PreToolUse", tool_name="Read", tool_input={}, tool_use_id="t"),
    ],
    ids=["succeeded", "interrupted", "another-tool", "no-path"],
)  # fmt: skip
def test_nothing_is_sent_for_a_command_that_succeeded_was_interrupted_or_a_tool_without_a_file(stand, event):
    state, url = stand

    done = run("claude-code", event, url)

    assert (done.returncode, done.stdout, done.stderr, state.requests) == (0, "", "", [])


# what a tool hook has no use for: the queue and the git reader (capture's and session start's), urllib's HTTP
# stack (the hooks post on a socket of their own: reasoningbank_hooks/posting.py), and for a command that
# passed, any HTTP client — each module is time the client waits before every tool
NOT_FOR_A_TOOL = {"pathlib", "subprocess", "ast", "dataclasses"}
NOT_FOR_A_TOOL |= {"reasoningbank_hooks.spool", "reasoningbank_hooks.commits", "reasoningbank_hooks.code_changes"}
NOT_FOR_A_TOOL |= {"urllib.request", "http.client", "email.parser", "ssl", "hashlib", "tempfile"}
HTTP_CLIENT = {"reasoningbank_hooks.posting", "socket"}


def imported_by(done: subprocess.CompletedProcess[str]) -> set[str]:
    """The modules a hook run with ``-X importtime`` imported (the interpreter's report on stderr)."""
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def test_a_tool_hook_imports_neither_the_queue_nor_git_nor_urllib_and_one_that_sends_nothing_no_http_client(
    stand, tree
):
    state, url = stand
    passed = claude_code_event(
        "PostToolUse", cwd=str(tree), tool_name="Bash", tool_input={"command": "pytest -q"}, tool_use_id="t",
        tool_response={"stdout": "12 passed in 0.40s", "stderr": "", "interrupted": False, "isImage": False},
    )  # fmt: skip
    runs = {}
    for name, event in (("read", read_event(tree)), ("passed", passed)):
        runs[name] = subprocess.run(
            # -S: what the hook imports, not what this interpreter's site-packages load at its start
            [sys.executable, "-S", "-X", "importtime", str(SCRIPTS["claude-code"]), "tool"],
            input=json.dumps(event),
            env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN="rb_test"),
            capture_output=True,
            text=True,
            timeout=30,
        )

    assert [run.returncode for run in runs.values()] == [0, 0] and len(state.requests) == 1  # the read asked
    assert "reasoningbank_hooks.handlers" in imported_by(runs["passed"])  # the report is read right
    assert imported_by(runs["read"]) & NOT_FOR_A_TOOL == set()
    assert HTTP_CLIENT <= imported_by(runs["read"])
    assert imported_by(runs["passed"]) & (NOT_FOR_A_TOOL | HTTP_CLIENT) == set()


def test_the_same_file_twice_is_left_to_the_services_ledger_and_nothing_new_prints_nothing(stand, tree):
    state, url = stand
    run("claude-code", read_event(tree), url)
    state.injection_block = ""  # the service: the session was given it already

    done = run("claude-code", read_event(tree), url)

    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert [body["session_id"] for _, body, _ in state.requests] == ["9f3c2a1e-claude"] * 2


def test_with_the_service_out_of_reach_the_hook_exits_0_printing_one_line_on_stderr(tree):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    done = run("claude-code", read_event(tree), f"http://127.0.0.1:{port}")

    assert (done.returncode, done.stdout) == (0, "")
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("reasoningbank tool: could not reach")


def test_a_block_over_the_cap_is_not_injected(stand, tree):
    state, url = stand
    state.injection_block = PROMPT_BLOCK + "x" * 4000

    done = run("claude-code", read_event(tree), url, REASONINGBANK_RECALL_TOKENS="300")

    assert (done.returncode, done.stdout) == (0, "")
    assert "over REASONINGBANK_RECALL_TOKENS=300" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_linked_worktrees_remote_is_read_from_its_repository(stand, tree, tmp_path):
    state, url = stand
    subprocess.run(["git", "-C", str(tree), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q",
                    "--allow-empty", "-m", "init"], check=True)  # fmt: skip
    linked = tmp_path / "linked"
    subprocess.run(["git", "-C", str(tree), "worktree", "add", "-q", str(linked)], check=True)
    (linked / "shop" / "payments").mkdir(parents=True, exist_ok=True)
    event = claude_code_event(
        "PreToolUse", cwd=str(linked), tool_name="Read", tool_use_id="t",
        tool_input={"file_path": str(linked / "shop" / "payments" / "refunds.py")},
    )  # fmt: skip

    run("claude-code", event, url)

    assert state.requests[0][1]["root"] == str(linked) and state.requests[0][1]["repository"] == REMOTE


def test_codex_sends_the_file_its_patch_updates_and_gets_the_block_as_pre_tool_use_context(stand, tree):
    state, url = stand
    patch = (
        "*** Begin Patch\n*** Update File: shop/payments/refunds.py\n@@\n-def refund(): ...\n"
        "+def refund(): pass\n*** End Patch\n"
    )
    event = codex_event("PreToolUse", cwd=str(tree), tool_name="apply_patch", tool_input={"command": patch},
                        tool_use_id="call_1")  # fmt: skip

    done = run("codex", event, url)

    assert json.loads(done.stdout) == {
        "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": PROMPT_BLOCK}
    }
    assert state.requests[0][1]["path"] == str(tree / "shop" / "payments" / "refunds.py")


def test_codex_sends_a_failing_commands_output(stand, tree):
    state, url = stand
    event = codex_event("PostToolUse", cwd=str(tree), tool_name="Bash", tool_input={"command": "pytest"},
                        tool_use_id="call_2", tool_response=FAILED_TESTS + "\nExit code: 1")  # fmt: skip

    done = run("codex", event, url)

    assert json.loads(done.stdout)["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert FAILED_TESTS in state.requests[0][1]["error"]


def test_gemini_gets_a_read_files_memories_after_the_read_and_a_failed_commands_after_it(stand, tree):
    state, url = stand
    read = gemini_event(
        "AfterTool", cwd=str(tree), tool_name="read_file",
        tool_input={"file_path": str(tree / "shop" / "payments" / "refunds.py")},
        tool_response={"llmContent": "def refund(): ...", "returnDisplay": ""},
    )  # fmt: skip
    shell = gemini_event(
        "AfterTool", cwd=str(tree), tool_name="run_shell_command", tool_input={"command": "pytest"},
        tool_response={"llmContent": f"Command: pytest\nOutput: {FAILED_TESTS}\nExit Code: 1", "returnDisplay": ""},
    )  # fmt: skip

    after_read, after_shell = run("gemini", read, url), run("gemini", shell, url)

    for done in (after_read, after_shell):
        assert json.loads(done.stdout) == {
            "hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": PROMPT_BLOCK}
        }
    assert "path" in state.requests[0][1] and FAILED_TESTS in state.requests[1][1]["error"]
