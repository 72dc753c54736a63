"""Every text that enters the bank is scrubbed of secrets
(docs/security/secret-scrubbing.md#what-is-scrubbed): recorded and updated memories (service, REST, MCP),
distilled memories, consolidation syntheses and extracted patterns, feedback comments. A memory is served
to every token of its org, so a key in one is a leak.

The secrets are assembled from pieces so that secret scanners do not flag this file.
"""

from __future__ import annotations

import base64
import json

import pytest
from django.db import connection
from django.test import Client

from accounts.models import AuditEvent
from accounts.tokens.services import token_authenticate, token_create
from memories.confidence.services import memory_feedback
from memories.core.services import memory_record, memory_update
from memories.models import AgentSession, Memory, MemorySignal
from memories.sessions import services as services_sessions
from memories.sessions.services import session_process, session_submit
from memories.validation import COMMENT_MAX, TITLE_MAX
from tests.accounts.tokens.test_services_leaks import connected_app_tokens
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke, synthesis_reply, vec
from tests.fakes import ScriptedLLM, memory_block
from tests.mcp_harness import MODES, dump, in_thread, mcp_client
from tests.reasoningbank.secret_table import RED_TEAM, red_team_chunks, red_team_left, red_team_text

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
ROTATE = "Rotate keys each month"
OPENAI_KEY = "sk-proj-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789aBcD"
GITHUB_TOKEN = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
SECRETS = (AWS_KEY, OPENAI_KEY, GITHUB_TOKEN)


def assert_clean(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def test_a_recorded_memory_is_stored_scrubbed_in_every_field(agent):
    memory = memory_record(
        principal=agent,
        title=f"Deploy with key {AWS_KEY}",
        description=f"When the OpenAI key {OPENAI_KEY} is rotated",
        content=f"git push https://{GITHUB_TOKEN}@github.com/acme/app.git",
        outcome="success",
    )
    stored = Memory.objects.get(pk=memory.pk)
    assert stored.title == "Deploy with key [REDACTED:aws_access_key_id]"
    assert stored.description == "When the OpenAI key [REDACTED:openai_key] is rotated"
    assert stored.content == "git push https://[REDACTED:github_token]@github.com/acme/app.git"


def test_an_update_is_scrubbed_too(agent):
    memory = memory_record(
        principal=agent, title="Rotate keys", description="d", content="Rotate the keys every month", outcome="success"
    )
    memory_update(principal=agent, memory=memory, changes={"content": f"rotated: the new key is {OPENAI_KEY}"})
    assert Memory.objects.get(pk=memory.pk).content == "rotated: the new key is [REDACTED:openai_key]"


def test_a_title_that_grows_by_its_redaction_is_cut_to_the_column_size(agent):
    title = "t" * (TITLE_MAX - 30) + " password=x1"
    memory = memory_record(principal=agent, title=title, description="d", content=ROTATE, outcome="success")
    stored = Memory.objects.get(pk=memory.pk).title
    assert stored == ("t" * (TITLE_MAX - 30) + " password=[REDACTED:secret_assignment]")[:TITLE_MAX]


def test_a_feedback_comment_is_scrubbed(agent):
    memory = memory_record(principal=agent, title="t", description="d", content=ROTATE, outcome="success")
    memory_feedback(principal=agent, memory=memory, helpful=True, comment=f"worked with {AWS_KEY}")
    assert MemorySignal.objects.get(memory=memory).comment == "worked with [REDACTED:aws_access_key_id]"


def test_over_rest_the_response_and_every_later_read_show_the_redaction(cast, token_client):
    client = token_client(cast.org_a, projects=[cast.project_a])
    body = {"title": "Keys", "description": "d", "content": f"export AWS_ACCESS_KEY_ID={AWS_KEY}", "outcome": "success"}
    created = client.post("/api/v1/memories", body, format="json")
    assert created.status_code == 201, created.content
    reader = token_client(cast.org_a)  # any token of the org
    detail = reader.get(f"/api/v1/memories/{created.json()['id']}").json()
    assert detail["content"] == "export AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key_id]"
    assert_clean(created.content.decode(), reader.get("/api/v1/memories").content.decode())


def test_a_distilled_memory_is_scrubbed_even_when_the_llm_writes_a_secret(agent, settings, monkeypatch):

    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)
    session = session_submit(principal=agent, session_id="s-1", outcome="success", trace="agent: fixed it").session
    reply = memory_block(1, "Authenticate the CLI", "When gh asks for a token", f"Run: export GH_TOKEN={GITHUB_TOKEN}")
    session_process(session.id, llm=ScriptedLLM([reply]))
    (memory,) = Memory.objects.filter(source_session=session)
    assert memory.content == "Run: export GH_TOKEN=[REDACTED:github_token]"


def test_a_consolidation_synthesis_is_scrubbed(cast, agent):
    for n, title in enumerate(["Set DB timeouts", "Always time out DB calls", "DB timeout practice"], 1):
        remember(agent, title, spoke(0, n, 0.87))
    reply = synthesis_reply(f"DB timeouts ({AWS_KEY})", f"Use the key {OPENAI_KEY} and a timeout.")
    run = run_cycle(agent, cast.project_a, cycle_llm(synthesis=reply))
    (merged,) = Memory.objects.filter(origin=Memory.ORIGIN_CONSOLIDATED)
    assert run.status == "completed", run.errors
    assert merged.title == "DB timeouts ([REDACTED:aws_access_key_id])"
    assert merged.content == "Use the key [REDACTED:openai_key] and a timeout."


def test_an_extracted_pattern_is_scrubbed(cast, agent):
    for n in range(10):
        remember(agent, f"Ran the tests before commit {n}", vec({100 + n: 1.0}), kind=Memory.KIND_EPISODIC)
    run_cycle(agent, cast.project_a, cycle_llm(patterns=f'["User authenticates with {GITHUB_TOKEN}"]'))
    pattern = Memory.objects.get(origin=Memory.ORIGIN_EXTRACTED)
    assert pattern.content == "User authenticates with [REDACTED:github_token]"


# --- the red-team run's survivors, on every entry path (docs/security/secret-scrubbing.md) ----------------


def record_body(**fields: object) -> dict[str, object]:
    """A memory whose every text field holds red-team formats: the title a Telegram bot token, the
    description and a tag a Google OAuth client secret, the content all of them."""
    telegram = next(row for row in RED_TEAM if row.name == "telegram bot token")
    google = next(row for row in RED_TEAM if row.name == "google oauth client secret")
    return {
        "title": f"Deploy notes: {telegram.text}",
        "description": f"When deploying with the {google.text}",
        "content": "Deploy steps and the credentials they use:\n" + red_team_text(),
        "tags": ["deploy", google.secret],
        "outcome": "success",
    } | fields


def test_every_red_team_format_is_kept_out_of_each_field_and_every_read_over_rest(cast, token_client):
    writer = token_client(cast.org_a, projects=[cast.project_a])
    created = writer.post("/api/v1/memories", record_body(), format="json")
    assert created.status_code == 201, created.content
    memory = Memory.objects.get()
    reader = token_client(cast.org_a, scopes=["memories:read"])
    served = [
        created.content.decode(),
        reader.get(f"/api/v1/memories/{memory.id}").content.decode(),
        reader.get("/api/v1/memories").content.decode(),
        reader.post("/api/v1/memories/search", {"query": "deploy credentials"}, format="json").content.decode(),
        b"".join(token_client(cast.org_a, scopes=["admin"]).get("/api/v1/export").streaming_content).decode(),
    ]
    stored = " ".join([memory.title, memory.description, memory.content, *memory.tags])
    assert red_team_left(stored) == []
    assert [red_team_left(text) for text in served] == [[]] * len(served)
    assert memory.title.startswith("Deploy notes: bot [REDACTED:telegram_bot_token]")
    assert memory.tags == ["deploy", "[redacted:google_oauth_secret]"]


def test_a_memory_holding_a_live_oauth_token_revokes_it_so_no_reader_can_write_with_it(cast, token_client):
    """The red-team's escalation: a read-only token read a memory holding a live ``rbo_`` token of
    an app with write access, and wrote with it."""
    flow, tokens = connected_app_tokens(cast.alice, "acme")
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {tokens['access_token']}"}
    assert Client().get("/api/v1/me", **bearer).status_code == 200
    writer = token_client(cast.org_a, projects=[cast.project_a])
    content = (
        f"Call the API with: curl -H 'Authorization: Bearer {tokens['access_token']}' "
        f"and refresh with {tokens['refresh_token']}"
    )

    created = writer.post("/api/v1/memories", record_body(content=content), format="json")

    assert created.status_code == 201, created.content
    read = token_client(cast.org_a, scopes=["memories:read"]).get(f"/api/v1/memories/{created.json()['id']}").json()
    assert read["content"] == (
        "Call the API with: curl -H 'Authorization: Bearer [REDACTED:reasoningbank_oauth_token]' and refresh with "
        "[REDACTED:reasoningbank_oauth_token]"
    )
    assert Client().get("/api/v1/me", **bearer).status_code == 401
    assert (
        Client().post("/api/v1/memories", record_body(), content_type="application/json", **bearer).status_code == 401
    )
    assert flow.refresh(Client(), tokens["refresh_token"]).status_code == 400
    (row,) = AuditEvent.objects.filter(organization=cast.org_a, verb="oauth.token_revoke")
    assert row.data["reason"] == "leaked" and row.data["seen_in"] == "memory"


def test_an_api_token_in_a_feedback_comment_is_scrubbed_and_revoked(cast, agent):
    _, raw = token_create(organization=cast.org_a, label="laptop")
    memory = memory_record(principal=agent, title="t", description="d", content=ROTATE, outcome="success")

    memory_feedback(principal=agent, memory=memory, helpful=True, comment=f"worked with {raw}")
    for chunk in red_team_chunks(COMMENT_MAX):
        memory_feedback(principal=agent, memory=memory, helpful=True, comment=chunk)

    comments = list(MemorySignal.objects.filter(memory=memory).order_by("id").values_list("comment", flat=True))
    assert comments[0] == "worked with [REDACTED:reasoningbank_token]"
    assert red_team_left(" ".join(comments)) == []
    audited = AuditEvent.objects.filter(verb="memory.feedback").values_list("data", flat=True)
    assert red_team_left(str(list(audited))) == [] and raw not in str(list(audited))
    assert token_authenticate(raw) is None
    assert AuditEvent.objects.filter(
        organization=cast.org_a, verb="token.revoke", data__seen_in="memory.feedback"
    ).exists()


def test_a_session_trace_is_scrubbed_before_it_is_stored_and_before_the_llm_reads_it(
    cast, agent, settings, monkeypatch
):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)
    flow, tokens = connected_app_tokens(cast.alice, "acme")
    trace = (
        f"user: deploy it\nagent: $ cat ~/.config/app.json\n{red_team_text()}\nrefresh_token={tokens['refresh_token']}"
    )

    session = session_submit(principal=agent, session_id="s-9", outcome="success", trace=trace).session
    llm = ScriptedLLM([memory_block(1, "Deploy with the CLI", "When deploying", "Run the deploy script.")])
    session_process(session.id, llm=llm)

    stored = AgentSession.objects.get(pk=session.id).trace
    assert red_team_left(stored) == [] and tokens["refresh_token"] not in stored
    ((_, prompt),) = llm.calls
    assert red_team_left(prompt) == [] and tokens["refresh_token"] not in prompt
    assert flow.refresh(Client(), tokens["refresh_token"]).status_code == 400
    assert AuditEvent.objects.filter(verb="oauth.token_revoke", data__seen_in="session.submit").exists()


def test_an_imported_bank_is_scrubbed_and_a_token_in_it_revoked(cast, token_client):
    _, raw = token_create(organization=cast.org_a, label="old laptop")
    lines = [
        {"type": "header", "format": "reasoningbank-export", "version": 1},
        {"type": "memory", "id": "m1", "project": "web-app", "title": "Deploy credentials",
         "content": f"Deploy with {raw}\n{red_team_text()}", "promotion_reason": red_team_text()[:500]},
        {"type": "signal", "memory": "m1", "signal": "explicit", "positive": True, "comment": red_team_text()[:2000]},
        {"type": "end"},
    ]  # fmt: skip
    text = "\n".join(json.dumps(line) for line in lines)

    response = token_client(cast.org_a, scopes=["admin"]).post("/api/v1/import", {"text": text}, format="json")

    assert response.status_code == 200, response.json()
    memory = Memory.objects.get()
    stored = " ".join([memory.content, memory.promotion_reason, MemorySignal.objects.get().comment])
    assert red_team_left(stored) == [] and raw not in stored
    assert token_authenticate(raw) is None
    assert AuditEvent.objects.filter(verb="token.revoke", data__seen_in="bank.import").exists()


# --- our own tokens hidden in a text: split or encoded ---------------------------------------------------


def hidden(raw: str, form: str) -> str:
    """``raw`` as a paste or a script hides it: split by a zero-width space or a shell line
    continuation, or base64-encoded."""
    if form == "base64":
        return base64.b64encode(raw.encode()).decode()
    return raw[:20] + ("\u200b" if form == "zero-width space" else "\\\n") + raw[20:]


@pytest.mark.parametrize("form", ["zero-width space", "line continuation", "base64"])
def test_a_token_split_or_base64_encoded_is_found_and_revoked_on_every_way_in(
    cast, agent, token_client, settings, monkeypatch, form
):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)
    raws = {
        way: token_create(organization=cast.org_a, label=way)[1] for way in ("record", "feedback", "trace", "import")
    }

    content = f"Deploy with {hidden(raws['record'], form)} from the release branch"
    memory = memory_record(principal=agent, title="Deploy", description="d", content=content, outcome="success")
    memory_feedback(principal=agent, memory=memory, helpful=True, comment=f"worked: {hidden(raws['feedback'], form)}")
    session_submit(
        principal=agent, session_id="s-2", outcome="success", trace=f"$ env\nT={hidden(raws['trace'], form)}"
    )
    lines = [
        {"type": "header", "format": "reasoningbank-export", "version": 1},
        {"type": "memory", "id": "m1", "project": "web-app", "title": "Deploy credentials",
         "content": f"Deploy with {hidden(raws['import'], form)} from CI"},
        {"type": "end"},
    ]  # fmt: skip
    imported = token_client(cast.org_a, scopes=["admin"]).post(
        "/api/v1/import", {"text": "\n".join(json.dumps(line) for line in lines)}, format="json"
    )

    assert imported.status_code == 200, imported.json()
    stored = " ".join(
        [
            *Memory.objects.values_list("content", flat=True),
            MemorySignal.objects.get().comment,
            AgentSession.objects.get().trace,
        ]
    )
    for raw in raws.values():
        assert raw not in stored and hidden(raw, form) not in stored and raw[20:] not in stored
        assert token_authenticate(raw) is None
    seen = set(AuditEvent.objects.filter(verb="token.revoke").values_list("data__seen_in", flat=True))
    assert seen == {"memory", "memory.feedback", "session.submit", "bank.import"}


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("mode", MODES)
async def test_over_mcp_a_recorded_memory_and_a_feedback_comment_are_scrubbed_and_a_token_revoked(
    app, cast, make_token, monkeypatch, mode
):
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    token = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a])[0])
    _, leaked = await in_thread(lambda: token_create(organization=cast.org_a, label="laptop"))
    body = record_body(content=f"Deploy with {leaked}\n" + red_team_text())
    comment = red_team_chunks(COMMENT_MAX)[0]
    async with mcp_client(app, token, mode) as client:
        recorded = await client.call_tool("memory_record", body)
        assert not recorded.is_error, dump(recorded)
        memory_id = recorded.structured_content["id"]
        feedback = await client.call_tool(
            "memory_feedback", {"memory_id": memory_id, "helpful": True, "comment": comment}
        )
        fetched = await client.call_tool("memory_get", {"memory_id": memory_id})
    assert not feedback.is_error, dump(feedback)
    memory = await in_thread(lambda: Memory.objects.get(pk=memory_id))
    stored_comment = await in_thread(lambda: MemorySignal.objects.get(memory_id=memory_id).comment)
    for text in (dump(recorded), dump(fetched), memory.title, memory.description, memory.content, stored_comment):
        assert red_team_left(text) == [] and leaked not in text
    assert await in_thread(lambda: token_authenticate(leaked)) is None
