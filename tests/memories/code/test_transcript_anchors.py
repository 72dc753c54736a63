"""The places a transcript shows the agent worked in (memories/code/transcript_anchors.py, pure): files read
and edited, test files run, errors met — from the tool calls of the Claude Code and Codex transcript fixtures,
relative to the session's working directory — and which of them one distilled memory is about."""

from __future__ import annotations

from typing import Any

from memories.code.signatures import error_signature
from memories.code.transcript_anchors import places_for_memory, places_merge, session_places
from memories.sessions.transcripts import ToolCall, claude_code_convert, trace_convert
from tests.agent_transcripts import codex_rollout_text
from tests.claude_code_transcript import transcript_text

FAILING = "E   AssertionError: cart total 30 != 20"


def test_a_claude_code_transcript_shows_its_reads_edits_tests_and_error() -> None:
    places = claude_code_convert(transcript_text(session_id="s", readme="# Shop")).places
    signature = error_signature(FAILING)
    assert signature is not None
    assert places == [
        {"kind": "test", "path": "tests/test_checkout.py", "symbol": ""},
        {"kind": "read", "path": "README.md", "symbol": ""},
        {"kind": "edited", "path": "tests/conftest.py", "symbol": ""},
        {"kind": "error", "error_signature": signature.digest, "error_text": signature.text},
    ]


def test_a_codex_rollout_shows_its_patched_file_relative_to_its_working_directory() -> None:
    places = trace_convert(codex_rollout_text(session_id="s"), "codex-rollout-jsonl").places
    assert {"kind": "edited", "path": "tests/test_checkout.py", "symbol": ""} in places
    assert {"kind": "test", "path": "tests/test_checkout.py", "symbol": ""} in places


def call(
    name: str, tool_input: dict[str, Any] | None = None, *, command: str = "", output: str = "", error: bool = False
) -> ToolCall:
    return ToolCall(name, command, 0, output=output, is_error=error, answered=True, tool_input=tool_input or {})


def test_paths_outside_the_working_directory_or_absolute_without_one_are_left_out() -> None:
    calls = [call("Read", {"file_path": "/etc/passwd"}), call("Read", {"file_path": "/w/app/../../x.py"}),
             call("Edit", {"file_path": "/w/app/models.py"}), call("Read", {"file_path": "rel/x.py"})]  # fmt: skip
    assert [p["path"] for p in session_places(calls, "/w/app")] == ["models.py", "rel/x.py"]
    assert [p["path"] for p in session_places(calls)] == ["rel/x.py"]


def test_a_file_read_then_edited_is_edited_once() -> None:
    calls = [call("Read", {"file_path": "a.py"}), call("Write", {"file_path": "a.py", "content": "x"})]
    assert session_places(calls) == [{"kind": "edited", "path": "a.py", "symbol": ""}]


def test_a_test_node_id_keeps_its_test_as_the_symbol() -> None:
    calls = [call("Bash", command="python -m pytest tests/test_cart.py::TestCart::test_total[eur] -x")]
    assert session_places(calls) == [{"kind": "test", "path": "tests/test_cart.py", "symbol": "TestCart.test_total"}]


def test_only_a_failing_commands_error_is_kept() -> None:
    passing = call("Bash", command="python x.py", output="KeyError: 'user' was handled")
    failing = call(
        "Bash", command="python y.py", output="Traceback (most recent call last):\nKeyError: 'cart'", error=True
    )
    (place,) = session_places([passing, failing])
    assert place["kind"] == "error" and place["error_text"].startswith("KeyError")


def test_the_llms_files_count_only_where_the_transcript_shows_them() -> None:
    places = claude_code_convert(transcript_text(session_id="s", readme="# Shop")).places
    anchors = places_for_memory(
        places, text="Copy the fixture per test", outcome="success",
        named=["conftest.py", "/home/dev/shop/README.md", "src/secrets.py", "/etc/passwd"],
    )  # fmt: skip
    assert anchors == [{"path": "tests/conftest.py", "symbol": ""}, {"path": "README.md", "symbol": ""}]


def test_files_the_memory_names_are_its_anchors() -> None:
    places = claude_code_convert(transcript_text(session_id="s", readme="# Shop")).places
    anchors = places_for_memory(places, text="The cart fixture in conftest.py is shared", outcome="success")
    assert anchors == [{"path": "tests/conftest.py", "symbol": ""}]


def test_without_a_named_file_a_focused_sessions_edits_are_its_anchors() -> None:
    places = claude_code_convert(transcript_text(session_id="s")).places
    assert places_for_memory(places, text="Copy shared fixtures", outcome="success") == [
        {"path": "tests/conftest.py", "symbol": ""}
    ]
    many = [{"kind": "edited", "path": f"f{i}.py", "symbol": ""} for i in range(4)]
    assert places_for_memory(many, text="Copy shared fixtures", outcome="success") == []


def test_an_error_is_kept_when_the_memory_names_its_type_or_is_a_failures_only_error() -> None:
    places = claude_code_convert(transcript_text(session_id="s")).places
    named = places_for_memory(places, text="An AssertionError on the total meant a shared cart", outcome="success")
    assert named[-1]["error_text"].startswith("AssertionError")
    failed = places_for_memory(places, text="Do not share the cart", outcome="failure")
    assert failed[-1]["error_text"].startswith("AssertionError")
    assert all("error_text" not in a for a in places_for_memory(places, text="Copy fixtures", outcome="success"))


def test_a_session_handed_in_again_keeps_its_earlier_places() -> None:
    before = [
        {"kind": "read", "path": "a.py", "symbol": ""},
        {"kind": "error", "error_signature": "d", "error_text": "E"},
    ]
    after = [{"kind": "edited", "path": "a.py", "symbol": ""}, {"kind": "read", "path": "b.py", "symbol": ""}]
    assert places_merge(before, after) == [
        {"kind": "edited", "path": "a.py", "symbol": ""},
        {"kind": "read", "path": "b.py", "symbol": ""},
        {"kind": "error", "error_signature": "d", "error_text": "E"},
    ]
