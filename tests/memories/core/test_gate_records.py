"""The write gate on the memory paths (docs/memory-model.md#how-a-memory-enters-the-bank): memory_record
over REST and MCP, memory update, session distillation. Junk is a 400 naming the field with the reason
(and an audit row the quality report counts); a near copy of an active memory of the same place is
answered with that memory ("duplicate of …", reason near_copy with the similarity) and nothing is stored;
a gated extraction is skipped with a warning, the session still succeeds."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from accounts.models import AuditEvent
from memories.core.services import REJECTED_VERB, memory_record, memory_record_or_duplicate, memory_update
from memories.models import AgentSession, Memory
from memories.sessions.services import session_process
from reasoningbank.errors import InvalidInput
from tests.factories import AgentSessionFactory
from tests.fakes import ScriptedLLM, memory_block
from tests.mcp_harness import dump, in_thread, mcp_client

MEMORIES = "/api/v1/memories"
GOOD = {
    "title": "Wrap errors with context",
    "description": "When a service call fails deep in a handler",
    "content": "Use fmt.Errorf with %w so callers can unwrap and log the whole chain.",
    "outcome": "success",
}


@pytest.fixture(autouse=True)
def near_copy_threshold(settings):
    """The default follows the embedder's calibrated duplicate threshold; these tests pin it."""
    settings.WRITE_GATE_NEAR_COPY_SIMILARITY = 0.97


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a, projects=[cast.project_a])


def rejections() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(verb=REJECTED_VERB).order_by("id"))


# --- REST --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field", "code"),
    [
        ({"title": "TODO"}, "title", "rejected_placeholder"),
        ({"content": "lorem ipsum dolor sit amet, consectetur"}, "content", "rejected_placeholder"),
        ({"content": "Wrap it."}, "content", "rejected_too_short"),
        ({"content": "Wrap errors with context!"}, "content", "rejected_restates_title"),
        ({"content": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, "content", "rejected_repeated_characters"),
    ],
)
def test_junk_is_a_422_naming_the_field_with_the_reason_and_nothing_is_stored(alice, cast, overrides, field, code):
    response = alice.post(MEMORIES, {**GOOD, **overrides}, format="json")

    assert response.status_code == 422, response.json()
    body = response.json()
    assert body["code"] == code and list(body["errors"]) == [field]
    assert body["errors"][field] == [body["detail"]] and body["detail"].startswith(field)
    assert Memory.objects.count() == 0
    (event,) = rejections()
    assert event.data["project"] == cast.project_a.id and event.data["reason"] == code.removeprefix("rejected_")
    assert event.data["source"] == "record" and event.data["field"] == field


def test_real_knowledge_that_quotes_a_placeholder_is_recorded_and_a_bare_template_is_not(alice):
    quoting = {
        **GOOD,
        "title": "Log the CLI in with a config file",
        "content": "Put token = <your-token-here> in ~/.config/acme.toml, then run acme login; the CLI refuses "
        "the file when it is world-readable, so chmod 600 it first.",
    }
    recorded = alice.post(MEMORIES, quoting, format="json")
    assert recorded.status_code == 201, recorded.json()
    assert Memory.objects.get().content == quoting["content"]

    bare = {**GOOD, "content": "token = <your-token-here>, then <insert the steps>"}
    template = alice.post(MEMORIES, bare, format="json")
    assert template.status_code == 422 and template.json()["code"] == "rejected_placeholder"
    assert Memory.objects.count() == 1


def test_the_minimum_content_length_is_a_setting(alice, settings):
    short = {**GOOD, "content": "Wrap them all."}
    assert alice.post(MEMORIES, short, format="json").status_code == 422
    settings.WRITE_GATE_MIN_CONTENT_CHARS = 10
    assert alice.post(MEMORIES, short, format="json").status_code == 201


def test_secrets_are_scrubbed_before_the_gate_reads_the_text(alice):
    only_a_secret = {**GOOD, "content": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}
    response = alice.post(MEMORIES, only_a_secret, format="json")
    assert response.status_code == 422 and response.json()["code"] == "rejected_empty"
    assert "ghp_" not in str(response.json()) and "ghp_" not in str([e.data for e in rejections()])


# --- near copies -------------------------------------------------------------------------------------------


def test_a_near_copy_is_answered_with_the_existing_memory_and_nothing_is_stored(alice):
    first = alice.post(MEMORIES, GOOD, format="json").json()

    again = alice.post(MEMORIES, {**GOOD, "content": GOOD["content"] + " Really."}, format="json")

    assert again.status_code == 200, again.json()
    body = again.json()
    assert body["id"] == body["duplicate_of"] == first["id"]
    assert body["duplicate_reason"] == "near_copy" and 0.97 <= body["similarity"] <= 1
    assert f"near copy of memory {first['id']}" in body["message"]
    assert Memory.objects.count() == 1
    (event,) = rejections()
    assert event.data["reason"] == "near_copy" and event.data["duplicate_of"] == first["id"]


def test_an_identical_record_still_says_identical(alice):
    alice.post(MEMORIES, GOOD, format="json")
    body = alice.post(MEMORIES, GOOD, format="json").json()
    assert body["duplicate_reason"] == "identical" and "similarity" not in body


@pytest.mark.parametrize(
    "change",
    [
        {"content": "Use fmt.Errorf with %w so callers can unwrap and log the whole chain, never panic."},
        {"content": "Use fmt.Errorf with %w so callers can unwrap and log the whole chain. Go 1.20+."},
        {"outcome": "failure"},
        {"kind": "semantic"},
    ],
)
def test_a_close_record_with_a_negation_a_number_or_another_outcome_or_kind_is_stored(agent, change):
    first = memory_record_or_duplicate(principal=agent, **GOOD)
    other = memory_record_or_duplicate(principal=agent, **{**GOOD, **change})
    assert not other.duplicate and other.memory.pk != first.memory.pk


def test_an_archived_memory_or_another_project_is_no_original(cast, make_token):
    _, principal = make_token(cast.org_a)
    from tests.factories import ProjectFactory

    ProjectFactory(organization=cast.org_a, slug="mobile")
    first = memory_record(principal=principal, project="web-app", **GOOD)
    near = {**GOOD, "content": GOOD["content"] + " Really."}
    assert memory_record(principal=principal, project="mobile", **near).pk != first.pk
    Memory.objects.filter(pk=first.pk).update(state="archived", archived_reason="manual")
    assert memory_record(principal=principal, project="web-app", **near).pk != first.pk


def test_the_near_copy_threshold_is_a_setting_and_one_turns_it_off(agent, settings):
    settings.WRITE_GATE_NEAR_COPY_SIMILARITY = 1.0
    first = memory_record(principal=agent, **GOOD)
    assert memory_record(principal=agent, **{**GOOD, "content": GOOD["content"] + " Really."}).pk != first.pk


@pytest.mark.cross_tenant("api-memories")
def test_another_orgs_memory_is_never_a_near_copy(cast, token_client):
    theirs = token_client(cast.org_b).post(MEMORIES, GOOD, format="json").json()["id"]
    ours = token_client(cast.org_a, projects=[cast.project_a]).post(
        MEMORIES, {**GOOD, "content": GOOD["content"] + " Really."}, format="json"
    )
    assert ours.status_code == 201 and theirs not in str(ours.json())


# --- update ---------------------------------------------------------------------------------------------


def test_an_update_to_junk_is_refused_and_changes_nothing(agent):
    memory = memory_record(principal=agent, **GOOD)
    with pytest.raises(InvalidInput) as refused:
        memory_update(principal=agent, memory=memory, changes={"content": "TBD"})
    assert refused.value.field == "content" and refused.value.code == "rejected_placeholder"
    assert Memory.objects.get(pk=memory.pk).content == GOOD["content"]
    (event,) = rejections()
    assert event.data["source"] == "update" and event.data["memory"] == memory.id


def test_a_memory_from_before_the_gate_keeps_its_tag_and_kind_edits(agent):
    memory = memory_record(principal=agent, **GOOD)
    Memory.objects.filter(pk=memory.pk).update(content="Short.")  # stored before the gate existed
    updated = memory_update(principal=agent, memory=memory, changes={"tags": ["go"], "kind": "semantic"})
    assert (updated.tags, updated.kind, updated.content) == (["go"], "semantic", "Short.")


# --- distillation --------------------------------------------------------------------------------------------


def test_distillation_skips_a_gated_extraction_with_a_warning_and_stores_the_rest(cast):
    session = AgentSessionFactory(project=cast.project_a, trace="agent: fixed the flaky test")
    reply = memory_block(1, "Seed the RNG", "When tests flake", "Seed the RNG in the test setup.") + memory_block(
        2, "TODO", "When tests flake", "Fill this in later with the steps."
    )

    session = session_process(session.id, llm=ScriptedLLM([reply]))

    assert session.status == AgentSession.STATUS_DONE and session.error == ""
    assert [m.title for m in Memory.objects.filter(source_session=session)] == ["Seed the RNG"]
    (warning,) = session.warnings
    assert "TODO" in warning and "placeholder" in warning
    (event,) = rejections()
    assert (event.data["source"], event.data["session"], event.data["project"]) == (
        "distillation",
        session.id,
        cast.project_a.id,
    )


def test_a_session_whose_every_extraction_is_gated_is_done_with_nothing_stored(cast, client, alice):
    session = AgentSessionFactory(project=cast.project_a, trace="agent: nothing much")
    reply = memory_block(1, "Note", "When anything", "N/A")

    session = session_process(session.id, llm=ScriptedLLM([reply]))

    assert session.status == AgentSession.STATUS_DONE and Memory.objects.count() == 0
    assert len(session.warnings) == 1
    client.force_login(cast.alice)
    page = client.get(f"/sessions/{session.id}/").content.decode()
    assert "Kept out by the write gate" in page and "N/A" in page
    assert alice.get(f"/api/v1/sessions/{session.id}").json()["warnings"] == session.warnings


# --- MCP ----------------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_over_mcp_the_rejection_names_the_field_and_says_why(app: Any, cast: Any, make_token: Any, monkeypatch):
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    raw, _ = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    async with mcp_client(app, raw, "2026-07-28") as client:
        refused = await client.call_tool("memory_record", {**GOOD, "content": "Wrap it."})
        first = await client.call_tool("memory_record", GOOD)
        near = await client.call_tool("memory_record", {**GOOD, "content": GOOD["content"] + " Really."})

    assert refused.is_error
    assert "- content: content is too short to be reusable (8 characters; at least 20)" in refused.content[0].text
    assert not near.is_error, dump(near)
    assert near.structured_content["duplicate_of"] == first.structured_content["id"]
    assert near.structured_content["duplicate_reason"] == "near_copy"
    assert await in_thread(Memory.objects.count) == 1
