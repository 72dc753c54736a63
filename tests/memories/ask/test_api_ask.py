"""POST /api/v1/memories/ask and the MCP tool memory_ask (docs/search.md#asking-the-bank-memory_ask): the
real ``anthropic`` and ``openai`` SDKs answer through respx-mocked HTTP (no network)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import respx

from accounts.models import AuditEvent, Organization
from accounts.tokens.services import token_authenticate, token_create
from memories.ask.contracts import NOTHING_FOUND
from memories.ask.reasoning import REASONING_SYSTEM_PROMPT
from memories.models import SessionMemoryUse
from reasoningbank.models import LlmCall
from tests.factories import MemoryFactory
from tests.mcp_harness import in_thread, mcp_client
from tests.reasoningbank.test_llm import anthropic_error, anthropic_reply, anthropic_system, openai_reply
from tests.respx_httpx2 import serve_httpx2_from

ASK = "/api/v1/memories/ask"
RECORDED = datetime(2023, 5, 8, 14, 30, tzinfo=UTC)  # a Monday afternoon
QUESTION = "When did Caroline go to the support group?"
# secrets pasted into a question, assembled from pieces so that secret scanners do not flag this file
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo"
PEM = f"-----BEGIN RSA {'PRIVATE'} KEY-----\n{PEM_BODY}\n-----END RSA {'PRIVATE'} KEY-----"


def question_with_secrets(raw_token: str) -> str:
    return f"{QUESTION} I deployed with {AWS_KEY} and {GITHUB_TOKEN} as token {raw_token}, signed with\n{PEM}"


def assert_sent_scrubbed(system: str, prompt: str, raw_token: str) -> None:
    for secret in (AWS_KEY, GITHUB_TOKEN, PEM_BODY, raw_token):
        assert secret not in system and secret not in prompt
    for kind in ("aws_access_key_id", "github_token", "reasoningbank_token", "private_key"):
        assert f"[REDACTED:{kind}]" in prompt


@dataclass
class MockedLLM:
    """The configured provider's HTTP endpoint, mocked: what it was sent, and what it answers."""

    provider: str
    route: respx.Route
    make_reply: Callable[..., httpx.Response]

    def answers(self, text: str, input_tokens: int = 321, output_tokens: int = 54) -> None:
        self.route.mock(return_value=self.make_reply(text, input_tokens=input_tokens, output_tokens=output_tokens))

    def sent(self) -> tuple[str, str]:
        """(system prompt, user prompt) of the last request, read from the HTTP body."""
        body = json.loads(self.route.calls.last.request.content)
        if self.provider == "anthropic":
            return anthropic_system(body), body["messages"][0]["content"]
        system, user = body["messages"]
        assert system["role"] == "system" and user["role"] == "user"
        return system["content"], user["content"]


@contextmanager
def mocked_llm(settings: Any, provider: str) -> Iterator[MockedLLM]:
    settings.LLM_PROVIDER, settings.LLM_API_KEY = provider, "sk-test"
    settings.LLM_MODEL, settings.LLM_BASE_URL = "", None
    settings.LLM_MAX_RETRIES = 0  # a failure is reported at once (no backoff sleeps in tests)
    base_url, path = {
        "anthropic": ("https://api.anthropic.com", "/v1/messages"),
        "openai": ("https://api.openai.com/v1", "/chat/completions"),
    }[provider]
    with respx.mock(base_url=base_url, assert_all_called=False) as router, serve_httpx2_from(router):
        yield MockedLLM(provider, router.post(path), anthropic_reply if provider == "anthropic" else openai_reply)


@pytest.fixture(params=["anthropic", "openai"])
def llm(request: Any, settings: Any) -> Iterator[MockedLLM]:
    with mocked_llm(settings, request.param) as mocked:
        yield mocked


@pytest.fixture
def claude(settings: Any) -> Iterator[MockedLLM]:
    with mocked_llm(settings, "anthropic") as mocked:
        yield mocked


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


@pytest.fixture
def caroline(agent):
    return MemoryFactory(
        principal=agent,
        title="Caroline's support group",
        description="What Caroline told us at standup",
        content="Caroline said she went to the support group yesterday",
        created_at=RECORDED,
    )


def answer_json(**fields: Any) -> str:
    body = {
        "answer": "Caroline went to the support group on 2023-05-07.",
        "confidence": 0.9,
        "reasoning": "Memory 1 was recorded on 2023-05-08 and says 'yesterday', which is 2023-05-07.",
        "temporal_resolutions": [
            {
                "original_text": "yesterday",
                "memory_timestamp": "2023-05-08 14:30:00",
                "resolved_date": "2023-05-07",
                "confidence": 0.95,
            }
        ],
        "source_memory_indices": [1],
        "requires_inference": True,
    }
    return json.dumps({**body, **fields})


def ask(client: Any, status: int = 200, **body: Any) -> dict[str, Any]:
    response = client.post(ASK, {"question": QUESTION, **body}, format="json")
    assert response.status_code == status, response.json()
    return response.json()


# --- the answer ------------------------------------------------------------------------------------


def test_the_llm_gets_the_fixed_prompt_and_timestamped_memories_and_its_answer_comes_back(alice, caroline, llm):
    llm.answers("```json\n" + answer_json() + "\n```")  # fenced, as models often do
    body = ask(alice)

    system, prompt = llm.sent()
    assert system == REASONING_SYSTEM_PROMPT
    assert prompt.startswith(f"Question: {QUESTION}\nAsked at: ")
    assert (
        "[1] recorded 2023-05-08 14:30:00 UTC\nTitle: Caroline's support group\n"
        "Description: What Caroline told us at standup\nContent: Caroline said she went to the support group yesterday"
    ) in prompt
    assert body["answer"] == "Caroline went to the support group on 2023-05-07."
    assert (body["confidence"], body["requires_inference"], body["llm_called"]) == (0.9, True, True)
    assert body["reasoning"].startswith("Memory 1 was recorded")
    assert body["source_memory_ids"] == [caroline.id]
    (shown,) = body["memories"]
    assert {key: shown[key] for key in ("id", "title", "recorded_at", "cited")} == {
        "id": caroline.id, "title": "Caroline's support group", "recorded_at": "2023-05-08T14:30:00+00:00",
        "cited": True,
    }
    assert (shown["source"]["how"], shown["source"]["trust"]) == ("recorded", "trusted")  # who wrote it, with it
    assert body["temporal_resolutions"] == [
        {
            "original_text": "yesterday",
            "memory_timestamp": "2023-05-08T14:30:00+00:00",
            "resolved_date": "2023-05-07",
            "confidence": 0.95,
            "source": "llm",
            "agrees": True,
            "corrected_from": None,
            "memory_id": caroline.id,
        }
    ]
    assert body["warnings"] == []


def test_a_secret_in_the_question_never_reaches_the_provider_and_a_token_of_ours_in_it_is_revoked(
    cast, alice, caroline, llm
):
    _, raw = token_create(organization=cast.org_a, label="laptop")
    llm.answers(answer_json())

    body = ask(alice, question=question_with_secrets(raw))

    system, prompt = llm.sent()
    assert_sent_scrubbed(system, prompt, raw)
    assert prompt.startswith(f"Question: {QUESTION} I deployed with [REDACTED:aws_access_key_id] and ")
    assert body["source_memory_ids"] == [caroline.id]  # the scrubbed question still finds the memory
    assert token_authenticate(raw) is None
    (row,) = AuditEvent.objects.filter(organization=cast.org_a, verb="token.revoke")
    assert row.data["seen_in"] == "memory.ask" and raw not in str(row.data)


def test_a_token_of_ours_in_a_question_is_revoked_even_when_nothing_is_found_to_ask_about(cast, alice, claude):
    _, raw = token_create(organization=cast.org_a, label="laptop")

    body = ask(alice, question=question_with_secrets(raw))

    assert body["llm_called"] is False and claude.route.call_count == 0
    assert token_authenticate(raw) is None


def test_each_call_is_metered_with_its_provider_model_and_tokens(cast, alice, caroline, llm):
    llm.answers(answer_json(), input_tokens=321, output_tokens=54)
    ask(alice)
    call = LlmCall.objects.get()
    assert (call.organization, call.purpose, call.provider) == (cast.org_a, "reason", llm.provider)
    assert (call.input_tokens, call.output_tokens, call.outcome) == (321, 54, LlmCall.OUTCOME_OK)
    assert call.model


def test_the_cited_numbers_become_the_ids_of_the_memories_shown_under_them(alice, agent, caroline, claude):
    other = MemoryFactory(
        principal=agent,
        title="Caroline's support group schedule",
        content="The support group meets on Sundays",
        created_at=datetime(2023, 4, 2, 10, 0, tzinfo=UTC),
    )
    claude.answers(answer_json(source_memory_indices=[2], temporal_resolutions=[]))
    body = ask(alice)

    _, prompt = claude.sent()
    second = prompt.split("\n[2] recorded ", 1)[1].split("\nTitle: ", 1)[1].split("\n", 1)[0]
    cited = {caroline.title: caroline.id, other.title: other.id}[second]
    assert body["source_memory_ids"] == [cited]
    assert [m["id"] for m in body["memories"] if m["cited"]] == [cited]
    assert [m["id"] for m in body["memories"]] == [body["memories"][0]["id"], cited]  # prompt order


def test_the_resolver_corrects_a_wrong_llm_date_and_adds_the_references_it_missed(alice, agent, claude):
    memory = MemoryFactory(
        principal=agent,
        title="Caroline's support group",
        content="Caroline said she went to the support group yesterday; she had signed up two days ago",
        created_at=RECORDED,
    )
    wrong = [
        {
            "original_text": "yesterday",
            "memory_timestamp": "2023-05-08 14:30:00",
            "resolved_date": "2023-05-06",
            "confidence": 0.9,
        }
    ]
    claude.answers(answer_json(answer="On 2023-05-06.", temporal_resolutions=wrong))
    body = ask(alice)

    corrected, added = body["temporal_resolutions"]
    assert (corrected["resolved_date"], corrected["agrees"], corrected["corrected_from"]) == (
        "2023-05-07",
        False,
        "2023-05-06",
    )
    assert (added["original_text"], added["resolved_date"], added["source"], added["memory_id"]) == (
        "two days ago",
        "2023-05-06",
        "resolver",
        memory.id,
    )
    (warning,) = body["warnings"]
    assert '"yesterday"' in warning and "2023-05-07, not 2023-05-06" in warning
    assert body["answer"] == "On 2023-05-06."  # the LLM's words are never rewritten; the warning says why to doubt


def test_a_session_id_notes_the_cited_memories_as_given_to_that_session(alice, caroline, claude):
    claude.answers(answer_json())
    ask(alice, session_id="claude-7")
    assert list(SessionMemoryUse.objects.values_list("session_key", "memory_id", "via")) == [
        ("claude-7", caroline.id, "search")
    ]


def test_when_nothing_is_found_the_answer_says_so_without_asking_the_llm(alice, claude):
    body = ask(alice)
    assert (body["answer"], body["confidence"], body["llm_called"]) == (NOTHING_FOUND, 0.0, False)
    assert (body["memories"], body["source_memory_ids"], body["temporal_resolutions"]) == ([], [], [])
    assert "not asked" in body["reasoning"]
    assert claude.route.call_count == 0 and not LlmCall.objects.exists()


# --- no answer: errors -----------------------------------------------------------------------------


def test_an_unreadable_reply_is_a_502_and_no_answer_but_the_call_is_still_metered(alice, caroline, claude):
    claude.answers("Caroline went there yesterday, I believe.")
    body = ask(alice, status=502)
    assert body["code"] == "llm_reply_invalid" and "no answer is given" in body["detail"]
    assert "answer" not in body
    assert LlmCall.objects.get().input_tokens == 321


def test_without_an_llm_it_is_a_503_naming_the_setting_and_nothing_is_asked(settings, alice, caroline):
    settings.LLM_PROVIDER = "none"
    with respx.mock(assert_all_called=False) as router, serve_httpx2_from(router):
        body = ask(alice, status=503)
    assert body["code"] == "llm_not_configured" and "LLM_PROVIDER" in body["detail"]
    assert router.calls.call_count == 0 and not LlmCall.objects.exists()


def test_a_provider_without_its_api_key_is_the_same_clear_503(settings, alice, caroline, claude):
    settings.LLM_API_KEY = settings.ANTHROPIC_API_KEY = None
    body = ask(alice, status=503)
    assert body["code"] == "llm_not_configured" and "LLM_API_KEY" in body["detail"]


def test_an_org_over_its_llm_budget_gets_the_budget_error_and_nothing_is_asked(
    cast, alice, caroline, claude, monkeypatch
):
    monkeypatch.setattr(Organization, "limit", lambda self, name: 100 if name == "llm_tokens_per_month" else None)
    LlmCall.objects.create(organization=cast.org_a, provider="openai", model="m", purpose="distill", input_tokens=150)
    body = ask(alice, status=403)
    assert body["code"] == "limit_exceeded" and "monthly LLM budget" in body["detail"]
    assert claude.route.call_count == 0


def test_an_org_at_its_own_daily_cap_gets_limit_exceeded_naming_that_cap(cast, alice, caroline, claude):
    from reasoningbank.models import LlmBudget

    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=1_000, alert_percent=None)
    LlmCall.objects.create(organization=cast.org_a, provider="openai", model="m", purpose="distill", input_tokens=900)
    body = ask(alice, status=403)
    assert body["code"] == "limit_exceeded" and "daily LLM cap of 1,000 tokens" in body["detail"]
    assert claude.route.call_count == 0


@pytest.mark.parametrize(("status", "code", "http_status"), [(529, "llm_unavailable", 503), (401, "llm_error", 502)])
def test_a_provider_failing_or_refusing_is_an_error_never_an_answer(alice, caroline, claude, status, code, http_status):
    claude.route.mock(return_value=anthropic_error(status))
    body = ask(alice, status=http_status)
    assert body["code"] == code and "answer" not in body
    assert LlmCall.objects.get().outcome == LlmCall.OUTCOME_ERROR


# --- input and access ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"question": "   "}, "question"),
        ({"limit": 0}, "limit"),
        ({"limit": 21}, "limit"),
        ({"mode": "random"}, "mode"),
        ({"min_confidence": 2}, "min_confidence"),
        ({"session_id": "s" * 201}, "session_id"),
        ({"question": "a\x00b"}, "question"),
        ({"extra": 1}, "extra"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(alice, claude, body, field):
    response = alice.post(ASK, {"question": QUESTION, **body}, format="json")
    assert response.status_code == 400
    assert list(response.json()["errors"]) == [field]
    assert claude.route.call_count == 0


def test_a_token_without_memories_read_is_a_403(cast, token_client, claude):
    writer = token_client(cast.org_a, scopes=["memories:write"])
    response = writer.post(ASK, {"question": QUESTION}, format="json")
    assert response.status_code == 403 and "memories:read" in response.json()["detail"]


@pytest.mark.cross_tenant("api-memory-ask")
def test_another_orgs_token_never_sees_this_orgs_memories_and_its_projects_are_404(
    cast, alice, caroline, claude, token_client
):
    charlie = token_client(cast.org_b)
    body = ask(charlie)
    assert (body["llm_called"], body["memories"], body["source_memory_ids"]) == (False, [], [])
    assert caroline.id not in json.dumps(body) and claude.route.call_count == 0
    assert charlie.post(ASK, {"question": QUESTION, "project": "web-app"}, format="json").status_code == 404
    assert alice.post(ASK, {"question": QUESTION, "project": "billing"}, format="json").status_code == 404


# --- MCP -------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.cross_tenant("memory_ask")
async def test_the_mcp_tool_answers_the_same_and_keeps_to_its_tokens_org(app, cast, make_token, monkeypatch, settings):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    raw_a, principal_a = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    raw_b, _ = await in_thread(lambda: make_token(cast.org_b, projects=[cast.project_b]))
    mine = await in_thread(
        lambda: MemoryFactory(
            principal=principal_a,
            title="Caroline's support group",
            content="Caroline said she went to the support group yesterday",
            created_at=RECORDED,
        )
    )
    with mocked_llm(settings, "anthropic") as claude:
        claude.answers(answer_json())
        async with mcp_client(app, raw_a, "2026-07-28") as client:
            result = await client.call_tool("memory_ask", {"question": QUESTION})
        async with mcp_client(app, raw_b, "2026-07-28") as client:
            foreign = await client.call_tool("memory_ask", {"question": QUESTION})
            named = await client.call_tool("memory_ask", {"question": QUESTION, "project": "web-app"})
        assert claude.route.call_count == 1  # org B's questions never reached the LLM
        assert claude.sent()[0] == REASONING_SYSTEM_PROMPT

    assert not result.is_error, result.content[0].text
    answer = result.structured_content
    assert answer["source_memory_ids"] == [mine.id] and answer["answer"].startswith("Caroline went")
    assert answer["temporal_resolutions"][0]["resolved_date"] == "2023-05-07"
    assert not foreign.is_error and foreign.structured_content["llm_called"] is False
    assert mine.id not in json.dumps(foreign.structured_content)
    assert named.is_error and "not found" in named.content[0].text
    assert await in_thread(lambda: LlmCall.objects.filter(organization=cast.org_b).count()) == 0


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_over_mcp_the_question_reaches_the_provider_scrubbed_and_a_token_in_it_is_revoked(
    app, cast, make_token, monkeypatch, settings
):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    raw, principal = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    _, leaked = await in_thread(lambda: token_create(organization=cast.org_a, label="laptop"))
    await in_thread(
        lambda: MemoryFactory(
            principal=principal,
            title="Caroline's support group",
            content="Caroline said she went to the support group yesterday",
            created_at=RECORDED,
        )
    )
    with mocked_llm(settings, "openai") as gpt:
        gpt.answers(answer_json())
        async with mcp_client(app, raw, "2026-07-28") as client:
            result = await client.call_tool("memory_ask", {"question": question_with_secrets(leaked)})
        system, prompt = gpt.sent()

    assert not result.is_error, result.content[0].text
    assert_sent_scrubbed(system, prompt, leaked)
    assert await in_thread(lambda: token_authenticate(leaked)) is None
    assert await in_thread(lambda: token_authenticate(raw)) is not None  # the asking token is not the leaked one


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_mcp_tool_without_an_llm_is_an_error_naming_the_setting(app, cast, make_token, monkeypatch, settings):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    settings.LLM_PROVIDER = "none"
    raw, principal = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    await in_thread(lambda: MemoryFactory(principal=principal, content="Caroline went yesterday", created_at=RECORDED))
    async with mcp_client(app, raw, "legacy") as client:
        result = await client.call_tool("memory_ask", {"question": QUESTION})
    assert result.is_error
    assert "LLM_PROVIDER" in result.content[0].text and "No answer is given" in result.content[0].text


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_mcp_tool_at_a_cap_is_an_error_naming_the_cap(app, cast, make_token, monkeypatch, settings):
    from django.db import connection

    from reasoningbank.models import LlmBudget

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    raw, principal = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    await in_thread(lambda: MemoryFactory(principal=principal, content="Caroline went yesterday", created_at=RECORDED))
    await in_thread(lambda: LlmBudget.objects.create(organization=cast.org_a, daily_tokens=1_000))
    await in_thread(
        lambda: LlmCall.objects.create(
            organization=cast.org_a, provider="x", model="m", purpose="distill", input_tokens=990
        )
    )
    with mocked_llm(settings, "anthropic") as claude:
        async with mcp_client(app, raw, "legacy") as client:
            result = await client.call_tool("memory_ask", {"question": QUESTION})
        assert claude.route.call_count == 0
    assert result.is_error and "daily LLM cap of 1,000 tokens" in result.content[0].text
