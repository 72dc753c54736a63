"""The providers' batch APIs through their own SDKs (docs/llm-spend.md#batch-mode): Anthropic's Message
Batches (``client.messages.batches``) and OpenAI's Batch API (a JSONL file uploaded with purpose
``batch``, then ``client.batches`` over ``/v1/chat/completions``). Both answer within 24 hours at about
half the price of the same calls made one by one.

Each adapter sends the same request a direct call would (``reasoningbank.ai.llm``'s providers), submits,
reads the batch's state and, once it ended, its answers: one ``BatchAnswer`` per request, matched by
``custom_id`` (neither provider keeps the requests' order). Nothing here touches the database.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Protocol

from reasoningbank.ai.llm import LLM, LLMPermanentError, LLMTransientError, anthropic_system, tokens_estimate

# What became of one request: answered; refused for good (a request the provider will refuse again);
# or not answered (expired, cancelled, or a failure worth trying again): the caller makes it directly.
Outcome = Literal["ok", "error", "lost"]

# What a batched token costs against the list price: both Anthropic and OpenAI bill their batch APIs at
# 50 % of the same calls' price (input and output alike); the spend page's estimate applies it
BATCH_PRICE_FACTOR = Decimal("0.5")
OPENAI_HOSTS = ("api.openai.com",)  # the Batch API is OpenAI's own: compatible servers do not have it
# Anthropic's errors worth trying again as a direct call (an overloaded or failing server, a rate limit)
ANTHROPIC_TRANSIENT = {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}
# OpenAI's error codes of requests the batch did not get to
OPENAI_LOST_CODES = {"batch_expired", "batch_cancelled", "batch_canceled"}


@dataclass(frozen=True)
class BatchItem:
    custom_id: str
    system: str
    prompt: str
    max_tokens: int


@dataclass(frozen=True)
class BatchAnswer:
    custom_id: str
    outcome: Outcome
    text: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    error: str = ""


@dataclass(frozen=True)
class BatchState:
    provider_status: str  # the provider's own word: in_progress, ended, completed, expired, ...
    ended: bool  # its answers can be read (some may be lost)
    failed: str = ""  # the batch as a whole failed, expired or was cancelled: why, in the provider's words


class BatchApi(Protocol):
    provider: str
    model: str

    def submit(self, items: Sequence[BatchItem]) -> str: ...

    def state(self, batch_id: str) -> BatchState: ...

    def answers(self, batch_id: str) -> list[BatchAnswer]: ...


def batch_api(llm: LLM) -> BatchApi | None:
    """The batch API of ``llm``'s provider, or None when it has none: no provider, a fake, or an
    OpenAI-compatible server (Ollama, llama.cpp, vLLM: no batch endpoints), whose calls stay direct."""
    client = getattr(llm, "sdk_client", None)
    if client is None:
        return None
    if llm.provider == "anthropic":
        return AnthropicBatches(client, llm.model, prompt_cache=getattr(llm, "prompt_cache", True))
    if llm.provider == "openai" and getattr(getattr(client, "base_url", None), "host", "") in OPENAI_HOSTS:
        return OpenAIBatches(client, llm.model)
    return None


def _sdk_errors(provider: str, exc: Exception) -> Exception:
    """An SDK error as ours: a status below 500 other than 408/429 is permanent, the rest transient."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status < 500 and status not in (408, 429):
        return LLMPermanentError(f"{provider} batch API refused the request: {exc}", provider=provider)
    return LLMTransientError(f"{provider} batch API failed: {exc}", provider=provider)


class AnthropicBatches:
    provider = "anthropic"

    def __init__(self, client: Any, model: str, *, prompt_cache: bool = True) -> None:
        import anthropic

        self._client, self.model, self._error = client, model, anthropic.AnthropicError
        self._prompt_cache = prompt_cache

    def submit(self, items: Sequence[BatchItem]) -> str:
        requests = []
        for item in items:
            params: dict[str, Any] = {
                "model": self.model,
                "max_tokens": item.max_tokens,
                "messages": [{"role": "user", "content": item.prompt}],
            }
            if item.system:  # marked for the prompt cache like a direct call (batches read it too)
                params["system"] = anthropic_system(item.system, cached=self._prompt_cache)
            requests.append({"custom_id": item.custom_id, "params": params})
        try:
            return str(self._client.messages.batches.create(requests=requests).id)
        except self._error as exc:
            raise _sdk_errors(self.provider, exc) from exc

    def state(self, batch_id: str) -> BatchState:
        try:
            batch = self._client.messages.batches.retrieve(batch_id)
        except self._error as exc:
            raise _sdk_errors(self.provider, exc) from exc
        # an Anthropic batch always ends "ended"; its requests say whether they expired or were cancelled
        return BatchState(provider_status=batch.processing_status, ended=batch.processing_status == "ended")

    def answers(self, batch_id: str) -> list[BatchAnswer]:
        try:
            lines = list(self._client.messages.batches.results(batch_id))
        except self._error as exc:
            raise _sdk_errors(self.provider, exc) from exc
        return [self._answer(line) for line in lines]

    def _answer(self, line: Any) -> BatchAnswer:
        result = line.result
        if result.type == "succeeded":
            message = result.message
            text = "".join(block.text for block in message.content if block.type == "text")
            usage = message.usage
            return BatchAnswer(
                line.custom_id,
                "ok",
                text,
                int(getattr(usage, "input_tokens", 0) or 0),
                int(getattr(usage, "output_tokens", 0) or 0),
            )
        if result.type == "errored":
            error = result.error.error
            kind, message = getattr(error, "type", "error"), getattr(error, "message", "")
            outcome: Outcome = "lost" if kind in ANTHROPIC_TRANSIENT else "error"
            return BatchAnswer(line.custom_id, outcome, error=f"{kind}: {message}")
        return BatchAnswer(line.custom_id, "lost", error=f"the request {result.type} in the batch")


class OpenAIBatches:
    provider = "openai"
    ENDED = {"completed", "failed", "expired", "cancelled"}

    def __init__(self, client: Any, model: str) -> None:
        import openai

        self._client, self.model, self._error = client, model, openai.OpenAIError

    def submit(self, items: Sequence[BatchItem]) -> str:
        lines = []
        for item in items:
            messages = [{"role": "system", "content": item.system}] if item.system else []
            messages.append({"role": "user", "content": item.prompt})
            body = {"model": self.model, "messages": messages, "max_tokens": item.max_tokens, "temperature": 0.0}
            lines.append(
                json.dumps({"custom_id": item.custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body})
            )
        try:
            uploaded = self._client.files.create(
                file=("batch.jsonl", ("\n".join(lines) + "\n").encode()), purpose="batch"
            )
            batch = self._client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
        except self._error as exc:
            raise _sdk_errors(self.provider, exc) from exc
        return str(batch.id)

    def state(self, batch_id: str) -> BatchState:
        try:
            batch = self._client.batches.retrieve(batch_id)
        except self._error as exc:
            raise _sdk_errors(self.provider, exc) from exc
        failed = ""
        if batch.status in ("failed", "expired", "cancelled"):
            said = "; ".join(e.message or e.code or "" for e in (batch.errors.data or [])) if batch.errors else ""
            failed = f"the batch {batch.status}" + (f": {said}" if said else "")
        return BatchState(provider_status=batch.status, ended=batch.status in self.ENDED, failed=failed)

    def answers(self, batch_id: str) -> list[BatchAnswer]:
        """The output file's answers and the error file's; a request in neither (a batch that expired or
        was cancelled before it) is lost, which the caller sees by its absence."""
        try:
            batch = self._client.batches.retrieve(batch_id)
            texts = [self._client.files.content(f).text for f in (batch.output_file_id, batch.error_file_id) if f]
        except self._error as exc:
            raise _sdk_errors(self.provider, exc) from exc
        return [self._answer(json.loads(line)) for text in texts for line in text.splitlines() if line.strip()]

    def _answer(self, line: dict[str, Any]) -> BatchAnswer:
        custom_id = str(line.get("custom_id", ""))
        response = line.get("response") or {}
        error = line.get("error") or {}
        status = response.get("status_code")
        body = response.get("body") or {}
        if status == 200 and not error:
            choices = body.get("choices") or []
            text = ((choices[0].get("message") or {}).get("content") or "") if choices else ""
            usage = body.get("usage") or {}
            return BatchAnswer(
                custom_id,
                "ok",
                text,
                # the Batch API always counts; were it not to, the prompt is not at hand here: 0 rather than a guess
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or tokens_estimate(text)),
            )
        said = error or body.get("error") or {}
        message = f"{said.get('code') or status}: {said.get('message', '')}".strip()
        lost = said.get("code") in OPENAI_LOST_CODES or not isinstance(status, int) or status >= 500 or status == 429
        return BatchAnswer(custom_id, "lost" if lost else "error", error=message)
