"""Prompt caching through the real ``anthropic`` and ``openai`` SDKs against respx-mocked HTTP
(docs/llm.md#prompt-caching): the stable system prompt carries Anthropic's ``cache_control`` marker, the
cached tokens both providers report reach the result, the metered row and the Prometheus counter, and
the input tokens still count every prompt token (a budget sees cached tokens too)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from prometheus_client import REGISTRY

from reasoningbank.ai.llm import AnthropicLLM, OpenAILLM, _build_llm
from reasoningbank.ai.metered import llm_complete
from reasoningbank.models import LlmCall
from tests.respx_httpx2 import serve_httpx2_from

SYSTEM, PROMPT = "You extract strategies from an agent's session.", "Session trace: ..."


def anthropic_body(usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "NO_EXTRACTIONS"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


def openai_body(usage: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


@pytest.fixture
def anthropic_route() -> Iterator[respx.Route]:
    with respx.mock(base_url="https://api.anthropic.com") as router, serve_httpx2_from(router):
        yield router.post("/v1/messages")


@pytest.fixture
def openai_route() -> Iterator[respx.Route]:
    with respx.mock(base_url="https://api.openai.com/v1") as router, serve_httpx2_from(router):
        yield router.post("/chat/completions")


def anthropic_llm(**kwargs: Any) -> AnthropicLLM:
    return AnthropicLLM("claude-haiku-4-5", api_key="sk-ant-test", **kwargs)


def openai_llm() -> OpenAILLM:
    return OpenAILLM("gpt-4o-mini", api_key="sk-test")


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


# ------------------------------------------------------------------ the marker


def test_anthropic_gets_the_system_prompt_as_one_block_marked_for_the_prompt_cache(anthropic_route):
    anthropic_route.mock(return_value=httpx.Response(200, json=anthropic_body({"input_tokens": 9, "output_tokens": 2})))

    anthropic_llm().complete(system=SYSTEM, prompt=PROMPT, max_tokens=300)

    body = json.loads(anthropic_route.calls.last.request.content)
    assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    # the variable part comes after the marker, so it never breaks the cached prefix
    assert body["messages"] == [{"role": "user", "content": PROMPT}]


def test_anthropic_without_the_prompt_cache_gets_the_system_prompt_as_plain_text(anthropic_route):
    anthropic_route.mock(return_value=httpx.Response(200, json=anthropic_body({"input_tokens": 9, "output_tokens": 2})))

    anthropic_llm(prompt_cache=False).complete(system=SYSTEM, prompt=PROMPT, max_tokens=300)

    assert json.loads(anthropic_route.calls.last.request.content)["system"] == SYSTEM


def test_the_prompt_cache_setting_reaches_the_provider(settings):
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "anthropic", "sk-ant-test"
    settings.LLM_PROMPT_CACHE = False
    _build_llm.cache_clear()
    try:
        from reasoningbank.ai.llm import llm_from_settings

        assert llm_from_settings().prompt_cache is False  # type: ignore[attr-defined]
        settings.LLM_PROMPT_CACHE = True
        assert llm_from_settings().prompt_cache is True  # type: ignore[attr-defined]
    finally:
        _build_llm.cache_clear()


def test_openai_gets_the_stable_system_prompt_first_and_no_marker(openai_route):
    openai_route.mock(return_value=httpx.Response(200, json=openai_body({"prompt_tokens": 9, "completion_tokens": 1})))

    openai_llm().complete(system=SYSTEM, prompt=PROMPT, max_tokens=300)

    # OpenAI caches a prompt's prefix by itself: the stable system message must lead, the variable one follow
    messages = json.loads(openai_route.calls.last.request.content)["messages"]
    assert messages == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": PROMPT}]


# ------------------------------------------------------------------ the cached tokens


def test_anthropic_cache_reads_and_writes_are_counted_in_the_input_and_reported_apart(anthropic_route):
    usage = {"input_tokens": 40, "cache_read_input_tokens": 4_100, "cache_creation_input_tokens": 0, "output_tokens": 7}
    anthropic_route.mock(return_value=httpx.Response(200, json=anthropic_body(usage)))

    result = anthropic_llm().complete(system=SYSTEM, prompt=PROMPT)

    # Anthropic's input_tokens leave the cached ones out: the prompt was 4,140 tokens
    assert (result.input_tokens, result.cached_input_tokens, result.cache_write_tokens) == (4_140, 4_100, 0)
    assert (result.output_tokens, result.tokens_estimated) == (7, False)


def test_anthropic_a_first_call_writes_the_cache(anthropic_route):
    usage = {"input_tokens": 40, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 4_100, "output_tokens": 7}
    anthropic_route.mock(return_value=httpx.Response(200, json=anthropic_body(usage)))

    result = anthropic_llm().complete(system=SYSTEM, prompt=PROMPT)

    assert (result.input_tokens, result.cached_input_tokens, result.cache_write_tokens) == (4_140, 0, 4_100)


def test_anthropic_usage_without_cache_fields_reports_nothing_cached(anthropic_route):
    usage = {"input_tokens": 40, "cache_read_input_tokens": None, "output_tokens": 7}
    anthropic_route.mock(return_value=httpx.Response(200, json=anthropic_body(usage)))

    result = anthropic_llm().complete(system=SYSTEM, prompt=PROMPT)

    assert (result.input_tokens, result.cached_input_tokens, result.cache_write_tokens) == (40, 0, 0)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        # OpenAI: cached_tokens are part of prompt_tokens
        ({"prompt_tokens": 2_000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1_536}}, 1_536),
        # local servers: no details, or nulls
        ({"prompt_tokens": 2_000, "completion_tokens": 5}, 0),
        ({"prompt_tokens": 2_000, "completion_tokens": 5, "prompt_tokens_details": None}, 0),
        ({"prompt_tokens": 2_000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": None}}, 0),
        # a server claiming more cached than it counted: never more than the prompt
        ({"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 900}}, 100),
    ],
    ids=["openai", "absent", "null-details", "null-count", "more-than-the-prompt"],
)
def test_openai_cached_tokens_come_from_the_prompt_token_details(openai_route, usage, expected):
    openai_route.mock(return_value=httpx.Response(200, json=openai_body(usage)))

    result = openai_llm().complete(system=SYSTEM, prompt=PROMPT)

    assert result.input_tokens == usage["prompt_tokens"]
    assert (result.cached_input_tokens, result.cache_write_tokens) == (expected, 0)


def test_openai_without_usage_estimates_the_input_and_reports_nothing_cached(openai_route):
    openai_route.mock(return_value=httpx.Response(200, json=openai_body(None)))

    result = openai_llm().complete(system=SYSTEM, prompt=PROMPT)

    assert result.tokens_estimated and (result.cached_input_tokens, result.cache_write_tokens) == (0, 0)


# ------------------------------------------------------------------ metered


def test_cached_tokens_of_a_reply_land_in_the_metered_row_and_the_prometheus_counter(anthropic_route, cast):
    usage = {
        "input_tokens": 60,
        "cache_read_input_tokens": 3_000,
        "cache_creation_input_tokens": 500,
        "output_tokens": 9,
    }
    anthropic_route.mock(return_value=httpx.Response(200, json=anthropic_body(usage)))
    labels = {"provider": "anthropic", "model": "claude-haiku-4-5", "purpose": "distill"}
    read_before = sample("reasoningbank_llm_cached_tokens_total", **labels, kind="read")
    write_before = sample("reasoningbank_llm_cached_tokens_total", **labels, kind="write")
    input_before = sample("reasoningbank_llm_tokens_total", **labels, direction="input")

    llm_complete(organization=cast.org_a, purpose="distill", system=SYSTEM, prompt=PROMPT, llm=anthropic_llm())

    row = LlmCall.objects.get(organization=cast.org_a)
    assert (row.input_tokens, row.cached_input_tokens, row.cache_write_tokens, row.output_tokens) == (
        3_560,
        3_000,
        500,
        9,
    )
    assert sample("reasoningbank_llm_cached_tokens_total", **labels, kind="read") - read_before == pytest.approx(3_000)
    assert sample("reasoningbank_llm_cached_tokens_total", **labels, kind="write") - write_before == pytest.approx(500)
    # the input counter counts every prompt token, cached ones included, as the budget does
    assert sample("reasoningbank_llm_tokens_total", **labels, direction="input") - input_before == pytest.approx(3_560)
