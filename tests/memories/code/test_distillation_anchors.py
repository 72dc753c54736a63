"""Distillation anchors its memories (docs/code-memory.md#distillation): a Claude Code transcript with tool
calls handed in, distilled by a scripted LLM; each memory is anchored to the files of the transcript it is
about — the LLM's **Files** kept only where the transcript shows them touched — and to the error it met,
relative to the repository, in the project's repository; a transcript handed in again keeps its places."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Project
from memories.models import AgentSession, Memory, MemoryAnchor
from memories.sessions import services as services_sessions
from memories.sessions.services import session_process, session_submit
from tests.claude_code_transcript import transcript_text
from tests.fakes import ScriptedLLM

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda sid, delay_seconds=0: None)


def block(n: int, title: str, content: str, *, files: str | None = None, outcome: str = "success") -> str:
    named = f"**Files**: {files}\n" if files is not None else ""
    return (
        f"## Memory {n}\n**Title**: {title}\n**Description**: When checkout tests fail one run in three\n"
        f"**Content**: {content}\n**Tags**: testing\n{named}**Outcome**: {outcome}\n"
    )


REPLY = block(
    1,
    "Copy shared fixtures per test",
    "A module-level cart fixture mutated by three tests makes the totals flaky: return a deep copy from it.",
    files="tests/conftest.py, src/payments/secret_keys.py, /etc/passwd",
) + block(
    2,
    "Read the AssertionError's totals first",
    "An AssertionError comparing cart totals points at state shared between tests, not at the maths.",
    files="none",
)


def distilled(agent: Any, reply: str = REPLY) -> dict[str, list[tuple[str, str]]]:
    session = session_submit(
        principal=agent, session_id="cc-1", outcome=None, trace_format="claude-code-jsonl",
        trace=transcript_text(session_id="cc-1", readme="# Shop"),
    ).session  # fmt: skip
    session = session_process(session.id, llm=ScriptedLLM([reply]))
    assert session.status == "done", session.error
    found: dict[str, list[tuple[str, str]]] = {}
    for memory in Memory.objects.filter(source_session=session):
        anchors = MemoryAnchor.objects.filter(memory=memory).order_by("path", "error_text")
        found[memory.title] = [(a.path, a.error_text.split(":")[0]) for a in anchors]
    return found


def test_each_distilled_memory_is_anchored_to_what_it_is_about(agent: Any, queued: None) -> None:
    found = distilled(agent)
    # the LLM's files: conftest.py was edited; the other two names the transcript never shows are dropped
    assert found["Copy shared fixtures per test"] == [("tests/conftest.py", "")]
    # names the error's type: anchored to its signature; no file named and one edit: that edit
    assert found["Read the AssertionError's totals first"] == [("", "AssertionError"), ("tests/conftest.py", "")]


def test_the_anchors_name_the_projects_repository_and_are_current(cast: Any, agent: Any, queued: None) -> None:
    Project.objects.filter(pk=cast.project_a.pk).update(repository="github.com/acme/shop")
    distilled(agent)
    anchors = list(MemoryAnchor.objects.all())
    assert anchors and {a.repository for a in anchors} == {"github.com/acme/shop"}
    assert {a.state for a in anchors} == {"current"}
    assert {a.organization_id for a in anchors} == {agent.organization.id}


def test_the_session_keeps_its_places_and_a_resubmission_adds_to_them(agent: Any, queued: None) -> None:
    session_submit(principal=agent, session_id="cc-2", outcome=None, trace_format="claude-code-jsonl",
                   trace=transcript_text(session_id="cc-2"))  # fmt: skip
    places = AgentSession.objects.get(external_id="cc-2").places
    assert {p.get("path") for p in places if p["kind"] != "error"} == {"tests/test_checkout.py", "tests/conftest.py"}
    session_submit(principal=agent, session_id="cc-2", outcome=None, trace_format="claude-code-jsonl",
                   trace=transcript_text(session_id="cc-2", readme="# Shop"))  # fmt: skip
    again = AgentSession.objects.get(external_id="cc-2").places
    assert {p.get("path") for p in again if p["kind"] != "error"} == {
        "tests/test_checkout.py", "tests/conftest.py", "README.md"
    }  # fmt: skip


def test_a_plain_trace_has_no_places_and_its_memories_no_anchors(agent: Any, queued: None) -> None:
    session = session_submit(
        principal=agent, session_id="p-1", outcome="success", trace="user: hi\nagent: fixed it"
    ).session
    assert session.places == []
    session = session_process(
        session.id, llm=ScriptedLLM([block(1, "Pin the seed", "Seed the RNG in the test setup always.")])
    )
    assert session.status == "done"
    assert not MemoryAnchor.objects.exists()
