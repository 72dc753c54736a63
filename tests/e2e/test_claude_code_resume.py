"""A resumed Claude Code session against the live service and its worker
(docs/memory-model.md#sessions-that-continue): the plugin's SessionEnd capture hands the session file in
and the worker distils it; the session is resumed (``claude --resume``: the same file, grown at its end)
and SessionEnd hands it in again; the worker distils the new turns only. The stub LLM records what it was
sent."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.claude_code_transcript import RESUMED_PROMPT, records_text, resumed_records, transcript_records
from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, rest, unique
from tests.e2e.llm_stub import LLMStub
from tests.e2e.test_claude_code_plugin import run_hook

ROUND_WITHIN = 60  # seconds from a SessionEnd until the worker has distilled its round


def wait_for_round(service: Service, http: Any, session_id: str, rounds: int) -> dict[str, Any]:
    deadline = time.monotonic() + ROUND_WITHIN
    while True:
        crashed = service.worker_crash_lines()
        assert not crashed, "the worker crashed:\n" + "\n".join(crashed)
        answer = http.get(f"/api/v1/sessions/{session_id}")
        session = answer.json() if answer.status_code == 200 else {}
        if session.get("rounds") == rounds and session.get("status") in ("done", "failed"):
            return session
        assert time.monotonic() < deadline, f"round {rounds} not distilled within {ROUND_WITHIN}s: {session}"
        time.sleep(1)


def trace_of(prompt: str) -> str:
    return prompt.split("<session_trace>", 1)[1].split("</session_trace>", 1)[0]


def test_a_resumed_session_is_distilled_again_for_its_new_turns_only(
    service: Service, acme: Setup, llm_stub: LLMStub, tmp_path: Path
) -> None:
    first_marker, later_marker, key = unique(), unique(), unique("cc")
    transcript = tmp_path / f"{key}.jsonl"
    records = transcript_records(session_id=key, cwd=str(tmp_path), marker=first_marker)
    transcript.write_text(records_text(records))
    end = {"session_id": key, "transcript_path": str(transcript), "cwd": str(tmp_path),
           "permission_mode": "default", "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}  # fmt: skip

    assert run_hook("capture", end, url=service.url, token=acme.project_token).returncode == 0
    with rest(service, acme.project_token) as http:
        first = wait_for_round(service, http, key, 1)
        with transcript.open("a") as file:  # claude --resume: the same file grows
            file.write(records_text(resumed_records(records, marker=later_marker)[len(records) :]))
        assert run_hook("capture", end, url=service.url, token=acme.project_token).returncode == 0
        second = wait_for_round(service, http, key, 2)
        detail = http.get(f"/api/v1/sessions/{key}").json()

    assert first["status"] == second["status"] == "done"
    rounds = [c.prompt for c in llm_stub.calls_of("distill") if first_marker in c.prompt or later_marker in c.prompt]
    assert len(rounds) == 2
    assert first_marker in trace_of(rounds[0]) and later_marker not in trace_of(rounds[0])
    assert RESUMED_PROMPT.format(marker=later_marker) in trace_of(rounds[1])
    assert first_marker not in trace_of(rounds[1])  # turns 1–2 are not distilled again
    assert f"Distilled {first_marker}" in rounds[1].split("</session_trace>", 1)[1]  # listed as in the bank
    titles = {m["title"] for m in second["memories"]}
    assert {f"Distilled {first_marker}", f"Distilled {later_marker}"} <= titles
    assert detail["distilled_upto"] == len(detail["trace"]) and detail["trace"].count(later_marker) == 1
