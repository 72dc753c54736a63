"""The providers' batch APIs through the real SDKs, against respx-mocked endpoints
(``tests/batch_api_stub.py``, docs/llm-spend.md#batch-mode): creating a batch, polling it while it is in
progress and once it ended, and downloading its results, for Anthropic and OpenAI alike."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from reasoningbank.ai.batch_providers import AnthropicBatches, BatchItem, OpenAIBatches, batch_api
from reasoningbank.ai.llm import AnthropicLLM, LLMPermanentError, NoLLM, OpenAILLM
from tests.batch_api_stub import BatchApiStub, batch_api_served
from tests.local_llm_stub import BASE_URL as LOCAL_BASE_URL

ITEMS = [
    BatchItem("a" * 64, "You judge pairs.", "Pair one: timeouts", 300),
    BatchItem("b" * 64, "You write summaries.", "Summarise: retries", 500),
]


def reply(system: str, prompt: str) -> str:
    return f"answer to {prompt}"


@pytest.fixture
def stub() -> Iterator[BatchApiStub]:
    with batch_api_served(BatchApiStub(reply=reply)) as served:
        yield served


def api_of(provider: str):
    if provider == "anthropic":
        return batch_api(AnthropicLLM("claude-haiku-4-5", api_key="sk-ant-test"))
    return batch_api(OpenAILLM("gpt-4o-mini", api_key="sk-test"))


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_batch_is_created_polled_in_progress_then_ended_and_its_answers_matched_by_custom_id(stub, provider):
    api = api_of(provider)

    batch_id = api.submit(ITEMS)
    in_progress = api.state(batch_id)
    stub.end()
    ended = api.state(batch_id)
    answers = {answer.custom_id: answer for answer in api.answers(batch_id)}

    assert not in_progress.ended and in_progress.provider_status == "in_progress"
    assert ended.ended and not ended.failed
    assert stub.requests() == [(i.custom_id, i.system, i.prompt, i.max_tokens) for i in ITEMS]
    assert answers["a" * 64].outcome == "ok" and answers["a" * 64].text == "answer to Pair one: timeouts"
    assert answers["b" * 64].text == "answer to Summarise: retries"
    assert answers["b" * 64].input_tokens == len("Summarise: retries") // 4
    assert answers["b" * 64].output_tokens == len("answer to Summarise: retries") // 4


def test_anthropic_batch_requests_carry_the_model_the_cache_marked_system_prompt_and_max_tokens(stub):
    api_of("anthropic").submit(ITEMS)

    (created,) = stub.created
    assert created["requests"][0] == {
        "custom_id": "a" * 64,
        "params": {
            "model": "claude-haiku-4-5",
            "max_tokens": 300,
            "messages": [{"role": "user", "content": "Pair one: timeouts"}],
            "system": [{"type": "text", "text": "You judge pairs.", "cache_control": {"type": "ephemeral"}}],
        },
    }


def test_openai_batch_is_a_jsonl_file_uploaded_for_batch_then_a_24h_chat_completions_batch(stub):
    api_of("openai").submit(ITEMS)

    (upload,) = stub.uploads
    assert 'name="purpose"' in upload and "\r\nbatch\r\n" in upload
    first = json.loads(next(line for line in upload.splitlines() if line.startswith('{"custom_id"')))
    assert first == {
        "custom_id": "a" * 64,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You judge pairs."},
                {"role": "user", "content": "Pair one: timeouts"},
            ],
            "max_tokens": 300,
            "temperature": 0.0,
        },
    }
    (created,) = stub.created
    assert created["endpoint"] == "/v1/chat/completions" and created["completion_window"] == "24h"
    assert created["input_file_id"].startswith("file-")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("fate", ["expired", "canceled"])
def test_requests_a_batch_did_not_get_to_are_lost_so_they_are_made_directly(stub, provider, fate):
    stub.fate = fate
    api = api_of(provider)
    batch_id = api.submit(ITEMS)
    stub.end()

    state = api.state(batch_id)
    answers = api.answers(batch_id)

    assert state.ended
    # Anthropic names each request's fate; OpenAI's expired or cancelled batch leaves them out of its files
    assert all(answer.outcome == "lost" for answer in answers)
    if provider == "openai":
        assert state.failed.startswith("the batch") and answers == []


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_request_the_provider_refused_is_an_error_not_retried(stub, provider):
    stub.fate = "errored"
    api = api_of(provider)
    batch_id = api.submit(ITEMS)
    stub.end()

    answers = api.answers(batch_id)

    assert sorted(a.custom_id for a in answers) == ["a" * 64, "b" * 64]
    assert all(a.outcome == "error" and a.error for a in answers)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_provider_without_batches_refusing_the_creation_is_a_permanent_error(stub, provider):
    stub.refuse_create = 404

    with pytest.raises(LLMPermanentError, match="batch API refused"):
        api_of(provider).submit(ITEMS)


def test_only_the_providers_own_apis_have_batches():
    assert isinstance(batch_api(AnthropicLLM("claude-haiku-4-5", api_key="k")), AnthropicBatches)
    assert isinstance(batch_api(OpenAILLM("gpt-4o-mini", api_key="k")), OpenAIBatches)
    # an OpenAI-compatible local server (Ollama, llama.cpp, vLLM) has no batch endpoints: its calls stay direct
    assert batch_api(OpenAILLM("llama3.2", api_key=None, base_url=LOCAL_BASE_URL)) is None
    assert batch_api(NoLLM()) is None
