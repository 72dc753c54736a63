"""Deep search's question rewrite (docs/search.md#deep-search-rewriting-the-question) through
``POST /api/v1/memories/search`` with ``mode: deep``: the real ``anthropic`` and ``openai`` SDKs answer
through respx-mocked HTTP (no network). Rewritten, metered, cached per organization; skipped — and
saying why — without the setting, without an LLM, over budget, with the LLM down or unreadable."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from django.core.cache import caches

from accounts.models import Organization
from memories.search.rewrite import REWRITE_SYSTEM_PROMPT
from reasoningbank.models import LlmCall
from tests.factories import MemoryFactory
from tests.memories.ask.test_api_ask import MockedLLM, mocked_llm
from tests.reasoningbank.test_llm import anthropic_error

SEARCH = "/api/v1/memories/search"
QUESTION = "What did Melanie do after the wedding?"
POTTERY_QUERY = "pottery class bowl"
REWRITE = json.dumps({"queries": ["Melanie sister wedding", POTTERY_QUERY]})


@pytest.fixture(autouse=True)
def rewrite_on(settings):
    settings.SEARCH_DEEP_REWRITE = True
    caches["local"].clear()  # a pause after a failed call in an earlier test must not carry over


@pytest.fixture(params=["anthropic", "openai"])
def llm(request: Any, settings: Any):
    with mocked_llm(settings, request.param) as mocked:
        yield mocked


@pytest.fixture
def claude(settings: Any):
    with mocked_llm(settings, "anthropic") as mocked:
        yield mocked


@pytest.fixture
def alice(cast, token_client):
    return token_client(cast.org_a)


@pytest.fixture
def bank(agent) -> dict[str, str]:
    """The wedding memory shares words with the question; the pottery one shares none (the question
    alone never finds it), only the LLM's second query does."""
    wedding = MemoryFactory(
        principal=agent,
        title="Melanie's sister's wedding",
        description="Family news from Melanie",
        content="Melanie flew to Lisbon for her sister's wedding in June.",
    )
    pottery = MemoryFactory(
        principal=agent,
        title="Pottery class",
        description="A new hobby",
        content="She signed up for a pottery class and made a blue bowl.",
    )
    return {"wedding": wedding.id, "pottery": pottery.id}


def deep(client: Any, query: str = QUESTION, **body: Any) -> dict[str, Any]:
    response = client.post(SEARCH, {"query": query, "mode": "deep", "min_confidence": 0, **body}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def ids(body: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in body["memories"]]


# --- rewritten -------------------------------------------------------------------------------------


def test_the_question_alone_does_not_find_the_memory_only_the_llms_query_does(settings, alice, bank):
    settings.SEARCH_DEEP_REWRITE = False
    body = deep(alice)
    assert bank["wedding"] in ids(body) and bank["pottery"] not in ids(body)
    assert body["query_rewrite"]["reason"] == "off"


def test_a_deep_search_searches_the_llms_queries_too_and_fuses_what_each_finds(alice, bank, llm: MockedLLM):
    llm.answers(REWRITE)
    body = deep(alice, explain=True)

    system, prompt = llm.sent()
    assert system == REWRITE_SYSTEM_PROMPT and QUESTION in prompt
    assert body["query_rewrite"] == {
        "status": "rewritten",
        "queries": [QUESTION, "Melanie sister wedding", POTTERY_QUERY],
        "cached": False,
        "reason": None,
        "detail": None,
    }
    assert bank["wedding"] in ids(body) and bank["pottery"] in ids(body)
    hits = {hit["id"]: hit["explain"] for hit in body["memories"]}
    assert hits[bank["pottery"]]["query"] == POTTERY_QUERY
    assert hits[bank["pottery"]]["found_by"] == [POTTERY_QUERY]
    assert hits[bank["wedding"]]["query"] in (QUESTION, "Melanie sister wedding")
    assert set(hits[bank["wedding"]]["found_by"]) >= {QUESTION, "Melanie sister wedding"}


def test_the_rewrite_call_is_metered_as_a_search_rewrite_of_the_searching_org(cast, alice, bank, llm: MockedLLM):
    llm.answers(REWRITE, input_tokens=120, output_tokens=18)
    deep(alice)
    call = LlmCall.objects.get()
    assert (call.organization, call.purpose, call.provider, call.outcome) == (
        cast.org_a,
        "search_rewrite",
        llm.provider,
        LlmCall.OUTCOME_OK,
    )
    assert (call.input_tokens, call.output_tokens) == (120, 18)


def test_the_same_question_again_reads_the_cache_and_calls_no_llm(alice, bank, claude: MockedLLM):
    claude.answers(REWRITE)
    first = deep(alice)
    again = deep(alice, query=f"  {QUESTION.lower()} ")
    assert claude.route.call_count == 1 and LlmCall.objects.count() == 1
    assert (again["query_rewrite"]["status"], again["query_rewrite"]["cached"]) == ("rewritten", True)
    assert again["query_rewrite"]["queries"][1:] == first["query_rewrite"]["queries"][1:]
    assert bank["pottery"] in ids(again)


def test_an_llm_that_finds_the_question_focused_leaves_the_plain_search(alice, bank, claude: MockedLLM):
    claude.answers('{"queries": []}')
    body = deep(alice, explain=True)
    assert body["query_rewrite"]["status"] == "rewritten" and body["query_rewrite"]["queries"] == [QUESTION]
    assert bank["pottery"] not in ids(body)
    assert "query" not in body["memories"][0]["explain"]


def test_a_secret_in_the_question_never_reaches_the_provider(alice, bank, claude: MockedLLM):
    claude.answers(REWRITE)
    deep(alice, query="why does ghp_0123456789abcdefghijABCDEFGHIJ0123456789 fail after the wedding?")
    _, prompt = claude.sent()
    assert "ghp_0123456789" not in prompt and "REDACTED" in prompt


def test_other_modes_never_call_the_llm_and_carry_no_rewrite(alice, bank, claude: MockedLLM):
    claude.answers(REWRITE)
    for mode in ("reflexive", "standard", "exhaustive"):
        response = alice.post(SEARCH, {"query": QUESTION, "mode": mode, "min_confidence": 0}, format="json")
        assert response.status_code == 200 and "query_rewrite" not in response.json()
    assert claude.route.call_count == 0


# --- skipped, and why --------------------------------------------------------------------------------


def test_without_an_llm_the_rewrite_is_skipped_and_the_answer_says_so(settings, alice, bank):
    settings.LLM_PROVIDER = "none"
    body = deep(alice)
    assert body["query_rewrite"]["status"] == "skipped" and body["query_rewrite"]["reason"] == "no_llm"
    assert "LLM_PROVIDER=none" in body["query_rewrite"]["detail"]
    assert body["query_rewrite"]["queries"] == [QUESTION]
    assert bank["wedding"] in ids(body) and not LlmCall.objects.exists()


def test_a_provider_without_its_key_is_skipped_as_no_llm(settings, alice, bank, claude: MockedLLM):
    settings.LLM_API_KEY = settings.ANTHROPIC_API_KEY = None
    body = deep(alice)
    assert body["query_rewrite"]["reason"] == "no_llm" and "LLM_API_KEY" in body["query_rewrite"]["detail"]
    assert claude.route.call_count == 0


@pytest.mark.parametrize("failure", [anthropic_error(529), httpx.ConnectTimeout("timed out")])
def test_an_llm_down_or_too_slow_falls_back_to_the_plain_search_and_says_why(alice, bank, claude, failure):
    if isinstance(failure, Exception):
        claude.route.mock(side_effect=failure)
    else:
        claude.route.mock(return_value=failure)
    body = deep(alice)
    assert body["query_rewrite"]["status"] == "skipped" and body["query_rewrite"]["reason"] == "llm_unavailable"
    assert bank["wedding"] in ids(body) and bank["pottery"] not in ids(body)
    assert LlmCall.objects.get().outcome == LlmCall.OUTCOME_ERROR  # a failed call is metered too


def test_after_an_llm_failure_the_next_deep_searches_do_not_wait_for_it_again(settings, alice, bank, claude):
    claude.route.mock(side_effect=httpx.ConnectTimeout("timed out"))
    assert deep(alice)["query_rewrite"]["reason"] == "llm_unavailable"
    second = deep(alice, query="And where did the wedding happen?")
    assert (
        second["query_rewrite"]["reason"] == "llm_unavailable"
        and "not asked again" in second["query_rewrite"]["detail"]
    )
    assert claude.route.call_count == 1 and LlmCall.objects.count() == 1


def test_with_no_pause_every_deep_search_asks_the_llm_again(settings, alice, bank, claude):
    settings.SEARCH_DEEP_REWRITE_PAUSE = 0
    claude.route.mock(side_effect=httpx.ConnectTimeout("timed out"))
    deep(alice)
    deep(alice, query="And where did the wedding happen?")
    assert claude.route.call_count == 2


def test_the_rewrite_makes_one_attempt_whatever_the_llms_retry_setting(settings, alice, bank, claude):
    settings.LLM_MAX_RETRIES = 3  # background work backs off and retries; a search does not wait for that
    claude.route.mock(return_value=anthropic_error(529))
    assert deep(alice)["query_rewrite"]["reason"] == "llm_unavailable"
    assert claude.route.call_count == 1


def test_a_refusing_provider_is_an_llm_error_and_a_plain_search(alice, bank, claude):
    claude.route.mock(return_value=anthropic_error(401))
    body = deep(alice)
    assert body["query_rewrite"]["reason"] == "llm_error" and bank["wedding"] in ids(body)


def test_an_unreadable_reply_is_a_plain_search_metered_and_never_cached(alice, bank, claude):
    claude.answers("Melanie took up pottery, I believe.")
    body = deep(alice)
    assert body["query_rewrite"]["reason"] == "reply_unreadable" and bank["pottery"] not in ids(body)
    claude.answers(REWRITE)
    assert deep(alice)["query_rewrite"]["status"] == "rewritten"
    assert claude.route.call_count == 2 and LlmCall.objects.count() == 2


def test_an_org_over_its_llm_budget_searches_plainly_and_asks_nothing(cast, alice, bank, claude, monkeypatch):
    monkeypatch.setattr(Organization, "limit", lambda self, name: 100 if name == "llm_tokens_per_month" else None)
    LlmCall.objects.create(organization=cast.org_a, provider="openai", model="m", purpose="distill", input_tokens=150)
    body = deep(alice)
    assert body["query_rewrite"]["reason"] == "over_budget" and "monthly LLM budget" in body["query_rewrite"]["detail"]
    assert claude.route.call_count == 0 and bank["wedding"] in ids(body)


# --- the cache is per organization -----------------------------------------------------------------------


@pytest.mark.cross_tenant("api-memory-search")
def test_another_org_asking_the_same_question_gets_its_own_rewrite_never_the_cached_one(
    cast, alice, bank, claude: MockedLLM, token_client
):
    claude.answers(REWRITE)
    deep(alice)
    charlie = token_client(cast.org_b)
    claude.answers(json.dumps({"queries": ["globex quarterly report"]}))
    foreign = deep(charlie)
    assert claude.route.call_count == 2  # org A's cached rewrite was not served to org B
    assert foreign["query_rewrite"]["cached"] is False
    assert foreign["query_rewrite"]["queries"] == [QUESTION, "globex quarterly report"]
    assert foreign["memories"] == [] and bank["pottery"] not in json.dumps(foreign)
    assert LlmCall.objects.filter(organization=cast.org_b, purpose="search_rewrite").count() == 1
    mine = deep(alice)
    assert mine["query_rewrite"]["cached"] is True and POTTERY_QUERY in mine["query_rewrite"]["queries"]
    assert claude.route.call_count == 2


# --- MCP -------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_the_mcp_tool_rewrites_a_deep_search_the_same_way(app, cast, make_token, monkeypatch, settings):
    from django.db import connection

    from tests.mcp_harness import in_thread, mcp_client

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    raw, principal = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    pottery = await in_thread(
        lambda: MemoryFactory(principal=principal, title="Pottery class", content="She made a blue bowl in class.")
    )
    with mocked_llm(settings, "openai") as gpt:
        gpt.answers(json.dumps({"queries": [POTTERY_QUERY]}))
        async with mcp_client(app, raw, "2026-07-28") as client:
            result = await client.call_tool(
                "memory_search", {"query": QUESTION, "mode": "deep", "min_confidence": 0, "explain": True}
            )
    assert not result.is_error, result.content[0].text
    body = result.structured_content
    assert body["query_rewrite"]["queries"] == [QUESTION, POTTERY_QUERY]
    (hit,) = body["memories"]
    assert (hit["id"], hit["explain"]["query"]) == (pottery.id, POTTERY_QUERY)
