"""LLM providers driven through the real ``anthropic`` and ``openai`` SDKs against
respx-mocked HTTP (no network). The retry policy is shared, so its tests run
against both providers; ``sleep`` is a fake that records delays."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx

from reasoningbank.ai.llm import (
    DEFAULT_MODELS,
    AnthropicLLM,
    LLMPermanentError,
    LLMResult,
    LLMTransientError,
    LLMUnavailable,
    LLMUnreachable,
    NoLLM,
    OpenAILLM,
    _build_llm,
    tokens_estimate,
)
from tests.respx_httpx2 import serve_httpx2_from

# ------------------------------------------------------------------ canned replies


def anthropic_message(text: str, *, input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """A Messages API reply body (also a batch result's ``message``: tests/batch_api_stub.py)."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


def anthropic_reply(
    text: str = "Use context.WithTimeout.", input_tokens: int = 12, output_tokens: int = 5
) -> httpx.Response:
    return httpx.Response(200, json=anthropic_message(text, input_tokens=input_tokens, output_tokens=output_tokens))


def anthropic_system(body: dict[str, Any]) -> str:
    """The system prompt of a Messages API request body: a string, or text blocks (the one marked for the
    prompt cache: tests/reasoningbank/test_llm_prompt_cache.py)."""
    system = body.get("system", "")
    return system if isinstance(system, str) else "".join(block["text"] for block in system)


def anthropic_error(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    kind = {400: "invalid_request_error", 429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
    return httpx.Response(
        status, headers=headers, json={"type": "error", "error": {"type": kind, "message": f"status {status}"}}
    )


def openai_reply(
    text: str = "Use context.WithTimeout.", input_tokens: int = 12, output_tokens: int = 5, usage: bool = True
) -> httpx.Response:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": input_tokens,
            "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
    return httpx.Response(200, json=body)


def openai_error(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(
        status, headers=headers, json={"error": {"message": f"status {status}", "type": "error", "code": None}}
    )


# ------------------------------------------------------------- provider harness


@dataclass
class Api:
    """One provider wired to a mocked endpoint, so retry tests run against both."""

    provider: str
    route: respx.Route
    build: Callable[..., AnthropicLLM | OpenAILLM]
    ok: Callable[[], httpx.Response]
    error: Callable[..., httpx.Response]
    sleeps: list[float]

    def llm(self, **kwargs: Any) -> AnthropicLLM | OpenAILLM:
        return self.build(sleep=self.sleeps.append, **kwargs)


@pytest.fixture
def anthropic_api() -> Iterator[Api]:
    with respx.mock(base_url="https://api.anthropic.com") as router, serve_httpx2_from(router):
        sleeps: list[float] = []
        yield Api(
            provider="anthropic",
            route=router.post("/v1/messages"),
            build=lambda **kw: AnthropicLLM("claude-haiku-4-5", api_key="sk-ant-test", **kw),
            ok=anthropic_reply,
            error=anthropic_error,
            sleeps=sleeps,
        )


@pytest.fixture
def openai_api() -> Iterator[Api]:
    with respx.mock(base_url="https://api.openai.com/v1") as router, serve_httpx2_from(router):
        sleeps: list[float] = []
        yield Api(
            provider="openai",
            route=router.post("/chat/completions"),
            build=lambda **kw: OpenAILLM("gpt-4o-mini", api_key="sk-test", **kw),
            ok=openai_reply,
            error=openai_error,
            sleeps=sleeps,
        )


@pytest.fixture(params=["anthropic", "openai"])
def api(request: pytest.FixtureRequest) -> Api:
    return request.getfixturevalue(f"{request.param}_api")


def complete(llm: AnthropicLLM | OpenAILLM) -> LLMResult:
    return llm.complete(system="You extract strategies.", prompt="Session trace: ...", max_tokens=300)


# ------------------------------------------------------------- request shapes


def test_anthropic_request_carries_model_system_prompt_max_tokens_and_key(anthropic_api: Api) -> None:
    anthropic_api.route.mock(return_value=anthropic_reply())

    complete(anthropic_api.llm())

    request = anthropic_api.route.calls.last.request
    assert str(request.url) == "https://api.anthropic.com/v1/messages"
    body = json.loads(request.content)
    assert body == {
        "model": "claude-haiku-4-5",
        "max_tokens": 300,
        # one block marked for the prompt cache (tests/reasoningbank/test_llm_prompt_cache.py)
        "system": [{"type": "text", "text": "You extract strategies.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "Session trace: ..."}],
    }
    # SDK 2.x sends the key as a bearer token; older ones used x-api-key.
    assert request.headers.get("authorization") == "Bearer sk-ant-test" or (
        request.headers.get("x-api-key") == "sk-ant-test"
    )
    # Our retries replace the SDK's: it must not retry behind our back.
    assert request.headers["x-stainless-retry-count"] == "0"


def test_anthropic_text_is_the_concatenated_text_blocks_with_tokens_counted(anthropic_api: Api) -> None:
    reply = anthropic_reply()
    body = json.loads(reply.content)
    body["content"] = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "## Memory 1\n"},
        {"type": "text", "text": "**Title**: Bound calls"},
    ]
    body["usage"] = {"input_tokens": 321, "output_tokens": 45}
    anthropic_api.route.mock(return_value=httpx.Response(200, json=body))

    result = complete(anthropic_api.llm())

    assert result.text == "## Memory 1\n**Title**: Bound calls"
    assert (result.provider, result.model) == ("anthropic", "claude-haiku-4-5")
    assert (result.input_tokens, result.output_tokens) == (321, 45)
    assert result.attempts == 1
    assert result.latency_ms >= 0.0


def test_openai_request_carries_model_messages_max_tokens_temperature_and_key(openai_api: Api) -> None:
    openai_api.route.mock(return_value=openai_reply())

    openai_api.llm().complete(system="You extract strategies.", prompt="trace", max_tokens=300, temperature=0.2)

    request = openai_api.route.calls.last.request
    assert str(request.url) == "https://api.openai.com/v1/chat/completions"
    assert json.loads(request.content) == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You extract strategies."},
            {"role": "user", "content": "trace"},
        ],
        "max_tokens": 300,
        "temperature": 0.2,
    }
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["x-stainless-retry-count"] == "0"


def test_openai_text_and_tokens_come_from_the_completion(openai_api: Api) -> None:
    openai_api.route.mock(return_value=openai_reply("NO_EXTRACTIONS", input_tokens=99, output_tokens=3))

    result = complete(openai_api.llm())

    assert result == LLMResult(
        text="NO_EXTRACTIONS",
        provider="openai",
        model="gpt-4o-mini",
        input_tokens=99,
        output_tokens=3,
        latency_ms=result.latency_ms,
        attempts=1,
    )


def test_openai_compatible_local_server_works_without_a_key_and_without_usage_its_tokens_estimated() -> None:
    with respx.mock(base_url="http://localhost:11434/v1") as router, serve_httpx2_from(router):
        route = router.post("/chat/completions").mock(return_value=openai_reply("ok", usage=False))
        llm = OpenAILLM("llama3.2", api_key=None, base_url="http://localhost:11434/v1")

        result = complete(llm)

    assert result.text == "ok"
    # not counted by the server: estimated, never 0 (tests/reasoningbank/test_llm_local_servers.py)
    assert (result.input_tokens, result.output_tokens, result.tokens_estimated) == (
        tokens_estimate("You extract strategies." + "Session trace: ..."),
        tokens_estimate("ok"),
        True,
    )
    assert json.loads(route.calls.last.request.content)["model"] == "llama3.2"


def test_custom_anthropic_base_url_is_used() -> None:
    with respx.mock(base_url="https://gateway.example.com") as router, serve_httpx2_from(router):
        route = router.post("/v1/messages").mock(return_value=anthropic_reply("via gateway"))
        llm = AnthropicLLM("claude-haiku-4-5", api_key="sk-ant-test", base_url="https://gateway.example.com")

        assert complete(llm).text == "via gateway"
    assert route.call_count == 1


# ------------------------------------------------------------- retry policy (both providers)


def test_a_rate_limit_is_retried_after_backoff_then_succeeds(api: Api) -> None:
    api.route.side_effect = [api.error(429), api.ok()]

    result = complete(api.llm(backoff_base=0.5))

    assert result.attempts == 2
    assert api.sleeps == [0.5]
    assert api.route.call_count == 2


def test_a_server_error_is_retried_then_succeeds(api: Api) -> None:
    api.route.side_effect = [api.error(500), api.ok()]

    result = complete(api.llm())

    assert result.attempts == 2
    assert api.sleeps == [1.0]


def test_backoff_doubles_per_attempt_and_is_capped(api: Api) -> None:
    api.route.side_effect = [api.error(503), api.error(529), api.error(502), api.error(500), api.ok()]

    result = complete(api.llm(max_retries=4, backoff_base=1.0, backoff_max=5.0))

    assert result.attempts == 5
    assert api.sleeps == [1.0, 2.0, 4.0, 5.0]


def test_retry_after_header_is_honoured(api: Api) -> None:
    api.route.side_effect = [api.error(429, headers={"retry-after": "7"}), api.ok()]

    result = complete(api.llm(backoff_base=1.0))

    assert result.attempts == 2
    assert api.sleeps == [7.0]


def test_retry_after_is_capped_at_backoff_max(api: Api) -> None:
    api.route.side_effect = [api.error(429, headers={"retry-after": "3600"}), api.ok()]

    complete(api.llm(backoff_max=30.0))

    assert api.sleeps == [30.0]


def test_gives_up_after_max_retries_with_a_transient_error(api: Api) -> None:
    api.route.mock(return_value=api.error(503))

    with pytest.raises(LLMTransientError) as caught:
        complete(api.llm(max_retries=2))

    assert caught.value.attempts == 3
    assert (caught.value.provider, caught.value.model) == (api.provider, api.llm().model)
    assert api.route.call_count == 3
    assert api.sleeps == [1.0, 2.0]


def test_a_bad_request_fails_permanently_without_retrying(api: Api) -> None:
    api.route.mock(return_value=api.error(400))

    with pytest.raises(LLMPermanentError) as caught:
        complete(api.llm())

    assert caught.value.attempts == 1
    assert caught.value.provider == api.provider
    assert api.route.call_count == 1
    assert api.sleeps == []


def test_an_auth_failure_is_permanent(api: Api) -> None:
    api.route.mock(return_value=api.error(401))

    with pytest.raises(LLMPermanentError):
        complete(api.llm())
    assert api.route.call_count == 1


def test_a_timeout_is_retried_then_reported_as_transient(api: Api) -> None:
    api.route.side_effect = httpx.ReadTimeout

    with pytest.raises(LLMTransientError) as caught:
        complete(api.llm(max_retries=1))

    assert caught.value.attempts == 2
    assert api.route.call_count == 2
    assert api.sleeps == [1.0]


def test_a_timeout_then_success_recovers(api: Api) -> None:
    api.route.side_effect = [httpx.ReadTimeout("slow"), api.ok()]

    assert complete(api.llm()).attempts == 2


def test_a_connection_error_is_retried(api: Api) -> None:
    api.route.side_effect = [httpx.ConnectError("refused"), api.ok()]

    assert complete(api.llm()).attempts == 2


def test_a_server_out_of_reach_is_reported_naming_where_it_was_looked_for(api: Api) -> None:
    api.route.side_effect = httpx.ConnectError("[Errno 111] Connection refused")

    with pytest.raises(LLMUnreachable) as caught:
        complete(api.llm(max_retries=2))

    where = "https://api.anthropic.com" if api.provider == "anthropic" else "https://api.openai.com/v1"
    assert caught.value.url.startswith(where) and where in str(caught.value)
    assert "Connection refused" in str(caught.value) and caught.value.attempts == 3
    assert isinstance(caught.value, LLMTransientError)  # the worker's backoff takes it as before


def test_a_check_that_must_answer_at_once_gives_up_on_a_server_out_of_reach_after_one_attempt(api: Api) -> None:
    api.route.side_effect = httpx.ConnectError("[Errno -2] Name or service not known")

    with pytest.raises(LLMUnreachable) as caught:
        complete(api.llm(max_retries=3, retry_unreachable=False))

    assert caught.value.attempts == 1 and api.route.call_count == 1 and api.sleeps == []


def test_a_timeout_is_not_taken_for_a_server_out_of_reach(api: Api) -> None:
    api.route.side_effect = [httpx.ReadTimeout("slow"), api.ok()]

    assert complete(api.llm(retry_unreachable=False)).attempts == 2


def test_zero_max_retries_means_a_single_attempt(api: Api) -> None:
    api.route.mock(return_value=api.error(429))

    with pytest.raises(LLMTransientError) as caught:
        complete(api.llm(max_retries=0))

    assert caught.value.attempts == 1
    assert api.sleeps == []


# ------------------------------------------------------------- configuration


def test_hosted_providers_without_a_key_fail_with_a_clear_message() -> None:
    with pytest.raises(LLMPermanentError, match="ANTHROPIC_API_KEY"):
        AnthropicLLM("claude-haiku-4-5", api_key=None)
    with pytest.raises(LLMPermanentError, match="OPENAI_API_KEY"):
        OpenAILLM("gpt-4o-mini", api_key=None)


def test_no_llm_refuses_so_the_work_waits() -> None:
    llm = NoLLM()

    with pytest.raises(LLMUnavailable, match="LLM_PROVIDER=none") as caught:
        llm.complete(system="s", prompt="p")

    assert llm.provider == "none"
    assert caught.value.provider == "none"


def test_the_builder_picks_the_provider_and_its_default_model() -> None:
    assert isinstance(_build_llm("none", None, None, None, 60.0, 3), NoLLM)
    anthropic_llm = _build_llm("anthropic", None, None, "sk-ant-test", 60.0, 3)
    assert (anthropic_llm.provider, anthropic_llm.model) == ("anthropic", DEFAULT_MODELS["anthropic"])
    openai_llm = _build_llm("openai", "gpt-4.1-mini", None, "sk-test", 60.0, 3)
    assert (openai_llm.provider, openai_llm.model) == ("openai", "gpt-4.1-mini")
    assert _build_llm("openai", "gpt-4.1-mini", None, "sk-test", 60.0, 3) is openai_llm


def test_an_unknown_provider_names_the_allowed_values() -> None:
    with pytest.raises(LLMPermanentError, match="none, anthropic, openai"):
        _build_llm("gemini", None, None, None, 60.0, 3)
