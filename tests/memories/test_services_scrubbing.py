"""Every text that enters the bank is scrubbed of secrets (issue 11, item 14): recorded and updated
memories (service, REST, MCP), distilled memories, consolidation syntheses and extracted patterns,
feedback comments. A memory is served to every token of its org, so a key in one is a leak.

The secrets are assembled from pieces so that secret scanners do not flag this file.
"""

from __future__ import annotations

from memories import services_sessions
from memories.models import Memory, MemorySignal
from memories.services import TITLE_MAX, memory_record, memory_update
from memories.services_sessions import session_process, session_submit
from memories.services_signals import memory_feedback
from tests.consolidation.vectors import cycle_llm, remember, run_cycle, spoke, synthesis_reply, vec
from tests.fakes import ScriptedLLM, memory_block

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
