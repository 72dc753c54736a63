"""An OpenAI-compatible local server (Ollama, llama.cpp server, vLLM) as the provider, through the real
``openai`` SDK against a stub with their quirks (tests/local_llm_stub.py): missing or partial usage is
metered with estimated token counts, flagged as estimates; requests carry no ``response_format`` so a
server that rejects it still answers; a busy server's 503s are retried with backoff; the concurrency
limit keeps requests within the server's slots; reasoning models' thinking is not parsed as the answer;
their error bodies reach the message (docs/llm.md#local-models)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from consolidation.prompts.synthesis import parse_synthesis
from reasoningbank.ai.llm import (
    CHARS_PER_TOKEN,
    LLMPermanentError,
    LLMTransientError,
    OpenAILLM,
    llm_from_settings,
    tokens_estimate,
)
from reasoningbank.ai.metered import llm_complete
from reasoningbank.models import LlmCall
from tests.local_llm_stub import BASE_URL, LocalServerStub
from tests.respx_httpx2 import serve_httpx2_from

SYSTEM = "You extract strategies."
PROMPT = "Session trace: the agent bounded every database call with a timeout. " * 4
REPLY = "NO_EXTRACTIONS because nothing new was learned here."
WAIT_LIMIT = 30.0  # seconds a test waits for threads to reach a state; it fails rather than hangs


@pytest.fixture
def server() -> Iterator[tuple[LocalServerStub, respx.Route]]:
    stub = LocalServerStub(reply=lambda system, prompt: REPLY)
    with respx.mock(base_url=BASE_URL) as router, serve_httpx2_from(router):
        route = router.post("/chat/completions").mock(side_effect=stub)
        yield stub, route


def local_llm(**kwargs: Any) -> OpenAILLM:
    kwargs.setdefault("sleep", lambda seconds: None)
    return OpenAILLM("llama3.2", api_key=None, base_url=BASE_URL, **kwargs)


def wait_until(condition: Any) -> None:
    done = threading.Event()
    for _ in range(int(WAIT_LIMIT * 100)):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("the threads never reached the expected state")


# ------------------------------------------------------------------ usage the server did not count


def test_the_estimate_is_one_token_per_four_characters_rounded_up():
    assert CHARS_PER_TOKEN == 4
    assert [tokens_estimate(text) for text in ("", "a", "abcd", "abcde")] == [0, 1, 1, 2]


@pytest.mark.parametrize("usage", ["missing", "null", "zeros"])
def test_a_reply_without_token_counts_is_metered_with_estimates_flagged_as_such(server, cast, usage):
    stub, _ = server
    stub.usage = usage

    result = llm_complete(organization=cast.org_a, purpose="distill", system=SYSTEM, prompt=PROMPT, llm=local_llm())

    assert result.tokens_estimated
    assert (result.input_tokens, result.output_tokens) == (tokens_estimate(SYSTEM + PROMPT), tokens_estimate(REPLY))
    call = LlmCall.objects.get()
    assert (call.input_tokens, call.output_tokens, call.tokens_estimated) == (
        result.input_tokens,
        result.output_tokens,
        True,
    )
    assert call.outcome == LlmCall.OUTCOME_OK


def test_a_reply_with_only_the_prompt_counted_keeps_that_count_and_estimates_the_rest(server, cast):
    stub, _ = server
    stub.usage = "partial"

    result = llm_complete(organization=cast.org_a, purpose="distill", system=SYSTEM, prompt=PROMPT, llm=local_llm())

    assert (result.input_tokens, result.output_tokens, result.tokens_estimated) == (40, tokens_estimate(REPLY), True)
    assert LlmCall.objects.get().output_tokens == tokens_estimate(REPLY)


def test_a_reply_with_usage_is_metered_as_counted(server, cast):
    result = llm_complete(organization=cast.org_a, purpose="distill", system=SYSTEM, prompt=PROMPT, llm=local_llm())

    assert (result.input_tokens, result.output_tokens, result.tokens_estimated) == (40, 9, False)
    assert LlmCall.objects.get().tokens_estimated is False


def test_estimated_tokens_count_against_the_organisations_budget(server, cast, settings):
    """A server that counts nothing must not spend past a cap: the estimates are what the budget sees."""
    stub, _ = server
    stub.usage = "missing"
    llm_complete(organization=cast.org_a, purpose="distill", system=SYSTEM, prompt=PROMPT, llm=local_llm())

    from reasoningbank.ai.metered import llm_usage_this_month

    assert llm_usage_this_month(cast.org_a).total_tokens == tokens_estimate(SYSTEM + PROMPT) + tokens_estimate(REPLY)


# ------------------------------------------------------------------ JSON mode, errors, thinking


def test_no_request_carries_response_format_so_a_server_that_rejects_it_still_answers(server):
    stub, _ = server
    stub.response_format = "reject"

    assert local_llm().complete(system=SYSTEM, prompt=PROMPT).text == REPLY
    assert all("response_format" not in body for body in stub.requests)


def test_a_busy_servers_503_is_retried_with_backoff_and_gives_up_as_transient(server):
    stub, _ = server
    stub.slots = 0  # every request finds the server busy
    sleeps: list[float] = []

    with pytest.raises(LLMTransientError, match="server busy") as caught:
        local_llm(max_retries=2, sleep=sleeps.append).complete(system=SYSTEM, prompt=PROMPT)

    assert caught.value.attempts == 3
    assert sleeps == [1.0, 2.0]
    assert stub.busy_replies == 3


def test_a_call_that_outlasts_the_busy_spell_is_one_usage_row_with_its_attempts(server, cast):
    stub, _ = server
    stub.busy_first = 2

    llm_complete(organization=cast.org_a, purpose="distill", system=SYSTEM, prompt=PROMPT, llm=local_llm())

    call = LlmCall.objects.get()
    assert (call.outcome, call.attempts, call.input_tokens, call.output_tokens) == (LlmCall.OUTCOME_OK, 3, 40, 9)


def test_a_call_that_never_gets_through_is_one_error_row_with_its_attempts_and_no_tokens(server, cast):
    stub, _ = server
    stub.slots = 0

    with pytest.raises(LLMTransientError):
        llm_complete(
            organization=cast.org_a, purpose="distill", system=SYSTEM, prompt=PROMPT, llm=local_llm(max_retries=2)
        )

    call = LlmCall.objects.get()
    assert (call.outcome, call.attempts, call.input_tokens, call.output_tokens) == (LlmCall.OUTCOME_ERROR, 3, 0, 0)
    assert "server busy" in call.error


def test_an_ollama_model_not_found_is_permanent_and_says_what_the_server_said(server):
    _, route = server
    route.side_effect = None
    route.mock(return_value=httpx.Response(404, json={"error": 'model "llama3.2" not found, try pulling it first'}))

    with pytest.raises(LLMPermanentError, match="try pulling it first") as caught:
        local_llm().complete(system=SYSTEM, prompt=PROMPT)
    assert caught.value.attempts == 1


def test_a_reasoning_models_thinking_is_dropped_so_its_draft_is_not_parsed_as_the_answer(server):
    stub, _ = server
    draft = "TITLE: a first guess\nCONTENT: not this\nTAGS: x\nOUTCOME: failure"
    final = "TITLE: Bound every database call\nCONTENT: Use a timeout.\nTAGS: db\nOUTCOME: success"
    stub.reply = lambda system, prompt: f"<think>\nLet me draft it.\n{draft}\n</think>\n\n{final}"

    text = local_llm().complete(system=SYSTEM, prompt=PROMPT).text

    assert text == final
    assert parse_synthesis(text).title == "Bound every database call"


def test_a_reply_that_only_thinks_out_loud_without_the_closing_tag_is_kept_whole(server):
    stub, _ = server
    stub.reply = lambda system, prompt: "<think>ran out of tokens while thinking"

    assert local_llm().complete(system=SYSTEM, prompt=PROMPT).text == "<think>ran out of tokens while thinking"


# ------------------------------------------------------------------ concurrency and timeouts


def test_the_concurrency_limit_keeps_requests_within_the_servers_slots(server):
    """Three calls at once to a server with one slot: with ``max_concurrency=1`` two wait their turn in
    this process instead of drawing 503s, and all three are answered."""
    stub, _ = server
    stub.slots = 1
    stub.hold = threading.Event()
    llm = local_llm(max_concurrency=1, max_retries=0)
    results: list[Any] = []

    def call() -> None:
        try:
            results.append(llm.complete(system=SYSTEM, prompt=PROMPT).text)
        except Exception as exc:  # reported by the assertion below
            results.append(exc)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    wait_until(lambda: stub.in_flight == 1 and llm.slots_waiting == 2)
    stub.hold.set()
    for thread in threads:
        thread.join(WAIT_LIMIT)

    assert results == [REPLY, REPLY, REPLY]
    assert (stub.most_in_flight, stub.busy_replies) == (1, 0)


def test_a_call_that_finds_no_free_slot_within_the_timeout_is_transient(server):
    stub, _ = server
    stub.hold = threading.Event()
    llm = local_llm(max_concurrency=1, timeout=0.05)
    first = threading.Thread(target=lambda: llm.complete(system=SYSTEM, prompt=PROMPT))
    first.start()
    try:
        wait_until(lambda: stub.in_flight == 1)
        with pytest.raises(LLMTransientError, match="1 concurrent"):
            llm.complete(system=SYSTEM, prompt=PROMPT)
    finally:
        stub.hold.set()
        first.join(WAIT_LIMIT)
    assert len(stub.requests) == 1  # the second never reached the server


def test_no_limit_is_the_default():
    assert local_llm().max_concurrency == 0


def test_the_timeout_and_concurrency_settings_reach_the_provider(settings):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = BASE_URL
    settings.LLM_MODEL = "llama3.2"
    settings.LLM_TIMEOUT_SECONDS = 300.0
    settings.LLM_MAX_CONCURRENCY = 2

    llm = llm_from_settings()

    assert isinstance(llm, OpenAILLM)
    assert (llm.timeout, llm.max_concurrency, llm.base_url) == (300.0, 2, BASE_URL)
