"""Recall at the moment of action against the live service (docs/code-memory.md#recall-at-the-moment-of-action):
the Claude Code plugin's ``tool`` hook, run as Claude Code runs it — a process given Claude Code's real
PreToolUse / PostToolUseFailure / PostToolUse input on stdin — in a git working tree whose origin is the
anchors' repository. Before a Read the file's memory comes back as additionalContext, once a session;
after a failing test run the memory anchored to that failure's signature does, whatever directories and
line numbers this run printed; a command that passed asks nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, rest, unique
from tests.hook_state import hook_env

pytestmark = pytest.mark.usefixtures("hook_state_dir")

HOOK = Path(__file__).resolve().parents[2] / "integrations" / "claude-code" / "hooks" / "reasoningbank_hook.py"
REMOTE = "git@github.com:acme/shop.git"
# the failure the memory is about, as it was printed when the memory was written (another machine)
FAILURE_THEN = """Traceback (most recent call last):
  File "/home/alice/shop/tests/test_cart.py", line 14, in test_checkout
    cart.total()
  File "/home/alice/shop/shop/cart.py", line 9, in total
    return self.sum / self.count
ZeroDivisionError: division by zero
"""


def failure_now(root: Path) -> str:
    """The same failure today, in this working tree, after unrelated edits moved its lines."""
    return (
        "Exit code 1\n$ python -m pytest -q\n"
        + FAILURE_THEN.replace("/home/alice/shop", str(root)).replace("line 14", "line 31").replace("line 9", "line 12")
        + "1 failed in 0.22s\n"
    )


def run_hook(event: dict[str, Any], *, url: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HOOK), "tool"],
        input=json.dumps(event),
        env=hook_env(REASONINGBANK_URL=url, REASONINGBANK_TOKEN=token),
        capture_output=True,
        text=True,
        timeout=30,
    )


def context(done: subprocess.CompletedProcess[str], event_name: str) -> str:
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    if not done.stdout:
        return ""
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == event_name
    return str(answer["additionalContext"])


def anchor(service: Service, memory_id: str, **fields: str) -> None:
    """An anchor on a memory, written in the service's database (what memory_record's anchors write)."""
    code = (
        "from memories.models import Memory, MemoryAnchor\n"
        f"m = Memory.objects.get(pk={memory_id!r})\n"
        f"MemoryAnchor.objects.create(organization_id=m.organization_id, memory=m, **{fields!r})\n"
    )
    done = service.manage("shell", "-c", code)
    assert done.returncode == 0, done.stderr


def test_a_files_memory_before_a_read_and_a_failures_after_the_test_run_once_a_session(
    service: Service, acme: Setup, tmp_path: Path
) -> None:
    marker, session = unique(), unique("cc")
    root = tmp_path / "shop"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "cart.py").write_text("class Cart: ...\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", "origin", REMOTE], check=True)
    with rest(service, acme.project_token) as http:
        about_file, about_error = (
            http.post(
                "/api/v1/memories",
                json={
                    "title": f"{marker} {title}",
                    "description": "When working on the cart",
                    "content": content,
                    "outcome": "success",
                },
            ).json()["id"]
            for title, content in (
                ("Cart totals are cached per request", "Clear Cart._total_cache after changing items."),
                ("An empty cart divides by zero", "Return 0 from Cart.total when count is 0; a guard, not a try."),
            )
        )
        signature = http.post("/api/v1/memories/recall", json={"error": FAILURE_THEN}).json()["error_signature"]
    anchor(service, about_file, repository="github.com/acme/shop", path="shop/cart.py", symbol="Cart")
    anchor(service, about_error, error_signature=signature["digest"], error_text=signature["text"])
    read = {
        "session_id": session, "transcript_path": str(tmp_path / f"{session}.jsonl"), "cwd": str(root),
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Read",
        "tool_input": {"file_path": str(root / "shop" / "cart.py")}, "tool_use_id": "toolu_01",
    }  # fmt: skip
    failed = {
        **read, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_use_id": "toolu_02",
        "tool_input": {"command": "python -m pytest -q"}, "error": failure_now(root), "is_interrupt": False,
    }  # fmt: skip
    passed = {
        **read, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_03",
        "tool_input": {"command": "python -m pytest -q"},
        "tool_response": {"stdout": "3 passed in 0.20s", "stderr": "", "interrupted": False, "isImage": False},
    }  # fmt: skip

    before_read = context(run_hook(read, url=service.url, token=acme.project_token), "PreToolUse")
    read_again = context(run_hook(read, url=service.url, token=acme.project_token), "PreToolUse")
    after_failure = context(run_hook(failed, url=service.url, token=acme.project_token), "PostToolUseFailure")
    after_pass = context(run_hook(passed, url=service.url, token=acme.project_token), "PostToolUse")

    assert before_read.startswith("<reasoningbank_memories>") and before_read.endswith("</reasoningbank_memories>")
    assert about_file in before_read and "Clear Cart._total_cache" in before_read
    assert about_error not in before_read and len(before_read) <= 500 * 4  # the default cap
    assert read_again == ""  # never the same memory twice in a session
    assert about_error in after_failure and about_file not in after_failure
    assert after_pass == ""
