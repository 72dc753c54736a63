"""LLM providers behind one small ``LLM`` protocol.

- ``AnthropicLLM`` and ``OpenAILLM`` (the latter also serves any OpenAI-compatible
  server: Ollama, LM Studio, vLLM) call the real SDKs with the SDKs' own retries
  off, because we retry here: one policy for both, with attempts counted and
  reported, and a fake ``sleep`` injectable so tests never wait.
- ``NoLLM`` is what runs when nothing is configured: it refuses, loudly, so work
  that needs a model waits instead of being faked.

Every call returns an ``LLMResult`` carrying provider, model, tokens, latency and
attempts, which callers record for per-organisation cost metering.

Providers take their configuration as constructor arguments; only
``llm_from_settings`` reads Django settings.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from reasoningbank.ai.outbound import outbound_text
from reasoningbank.health import LlmHealth, llm_health

LLM_PROVIDERS = ("none", "anthropic", "openai")

# claude-3-5-haiku was retired by Anthropic on 2026-02-19 (requests to it fail);
# claude-haiku-4-5 is its recommended replacement.
DEFAULT_MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4o-mini"}

# Local OpenAI-compatible servers ignore the key, but the SDKs insist on a string.
_PLACEHOLDER_API_KEY = "not-needed"

Sleep = Callable[[float], None]

# When a server does not count a call's tokens (some OpenAI-compatible local servers omit ``usage``), we
# estimate them at one token per four characters, the usual rule of thumb for English with BPE
# tokenizers, rather than record 0: a call counted as free would never reach a budget's cap.
CHARS_PER_TOKEN = 4


def tokens_estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class LLMResult:
    text: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    latency_ms: float  # wall time of the whole call, retries, backoff and waiting for a slot included
    attempts: int
    tokens_estimated: bool = False  # the server did not count (all of) them: see tokens_estimate
    # Of ``input_tokens`` (which counts every prompt token, cached or not, so budgets see them all): those
    # read from the provider's prompt cache, and those written to it (Anthropic bills writes above the
    # input price; OpenAI's automatic cache has no writes to report). Both 0 when the server says nothing.
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


class LLMError(Exception):
    """Base for every LLM failure; carries what is known about the call."""

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model: str | None = None,
        attempts: int | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.attempts = attempts


class LLMUnavailable(LLMError):
    """No provider is configured: the work must wait, never be faked."""


class LLMTransientError(LLMError):
    """Rate limits, server errors, timeouts or connection failures that outlasted our retries.

    Worth trying again later (e.g. the job queue's own backoff).
    """


class LLMUnreachable(LLMTransientError):
    """The provider's server could not be reached at all (refused, unknown host, no route; not a timeout):
    ``url`` names where it was looked for, the first thing to check."""

    def __init__(self, message: str, *, url: str, **known: Any) -> None:
        super().__init__(message, **known)
        self.url = url


class LLMPermanentError(LLMError):
    """A request the provider will keep refusing (bad request, auth, unknown model) or bad config.

    Retrying unchanged is pointless.
    """


@runtime_checkable
class LLM(Protocol):
    provider: str
    model: str

    def complete(
        self,
        *,
        system: str,
        prompt: str,
        max_tokens: int = 2048,
        temperature: float = 0.0,
    ) -> LLMResult: ...


@dataclass(frozen=True)
class _Reply:
    text: str
    input_tokens: int | None  # None: the server did not say; cached tokens included
    output_tokens: int | None
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


def _token_count(value: Any) -> int | None:
    """A usage field as a count, or None when it is absent or not a count (null, a string, negative)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value)


def _without_thinking(text: str) -> str:
    """The reply after a reasoning model's ``<think>…</think>`` block (DeepSeek-R1, Qwen3 and the like
    served by Ollama or llama.cpp put their thinking in the content): the parsers take the first block of
    the asked-for shape, which would otherwise be a draft inside the thinking. A reply whose thinking never
    closed (it ran out of tokens) is kept whole, so its parse fails visibly."""
    stripped = text.lstrip()
    if not stripped.startswith("<think>"):
        return text
    end = stripped.find("</think>")
    return text if end == -1 else stripped[end + len("</think>") :].strip()


def _server_message(exc: Exception) -> str:
    """What the server said in an error body the SDK did not read: Ollama and llama.cpp answer
    ``{"error": "model \"x\" not found, try pulling it first"}`` where OpenAI nests a ``message``, and
    the SDK then says only "Error code: 404"."""
    body = getattr(exc, "body", None)
    said = body.get("error") if isinstance(body, dict) else body
    if isinstance(said, dict):
        said = said.get("message")
    if isinstance(said, str) and said.strip() and said.strip() not in str(exc):
        return f"{exc}: {said.strip()[:500]}"
    return str(exc)


def _retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's requested wait, if it sent one we can read.

    Both APIs send ``retry-after`` as seconds (OpenAI also ``retry-after-ms``);
    the HTTP-date form is not used by either, so it falls back to our backoff.
    """
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue
    return None


class _RetryingLLM:
    """Shared retry loop; subclasses send one request and name their SDK's errors."""

    provider: str  # set by each subclass
    # The SDK's base error, its HTTP-status error and its connection error (which includes timeouts
    # in both SDKs), set by each subclass's constructor: the SDKs are imported only when a provider is
    # built, so that no command or process that never calls an LLM pays for them (docs/commands.md).
    _sdk_error: type[Exception]
    _status_error: type[Exception]
    _connection_error: type[Exception]
    _timeout_error: type[Exception]
    _client: Any

    def __init__(
        self,
        model: str,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_concurrency: int = 0,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        sleep: Sleep = time.sleep,
        prompt_cache: bool = True,
        retry_unreachable: bool = True,
    ) -> None:
        self.model = model
        # False for a check that must answer at once: a server out of reach is said after one attempt
        self.retry_unreachable = retry_unreachable
        # mark the stable system prompt for the provider's prompt cache (Anthropic; OpenAI caches by itself)
        self.prompt_cache = prompt_cache
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self._sleep = sleep
        # At most this many requests in flight from this process (0: no limit). A local server serves a
        # few requests at once (Ollama's OLLAMA_NUM_PARALLEL, llama.cpp's --parallel slots, vLLM's
        # --max-num-seqs) and answers 503 past its queue; waiting here costs nothing, a 503 costs a retry.
        self.max_concurrency = max_concurrency
        self._slots = threading.BoundedSemaphore(max_concurrency) if max_concurrency > 0 else None
        self._waiting_lock = threading.Lock()
        self.slots_waiting = 0  # calls waiting for a slot now (read by tests and diagnostics)
        self._connect(api_key, base_url, timeout)

    def _connect(self, api_key: str | None, base_url: str | None, timeout: float) -> None:
        """Import the provider's SDK, name its errors and build its client (each subclass)."""
        raise NotImplementedError

    @property
    def sdk_client(self) -> Any:
        """The provider SDK's client, for its batch API (reasoningbank/ai/batch_providers.py)."""
        return self._client

    @contextmanager
    def _slot(self) -> Iterator[None]:
        """Hold one of the ``max_concurrency`` slots while a request is in flight (not while backing off).

        A call waits for a slot at most its timeout: a server that keeps every slot busy that long is as
        good as one that does not answer, and the caller's own backoff takes over."""
        if self._slots is None:
            yield
            return
        with self._waiting_lock:
            self.slots_waiting += 1
        try:
            acquired = self._slots.acquire(timeout=self.timeout)
        finally:
            with self._waiting_lock:
                self.slots_waiting -= 1
        if not acquired:
            raise LLMTransientError(
                f"{self.provider} {self.model}: all {self.max_concurrency} concurrent requests allowed by "
                f"LLM_MAX_CONCURRENCY stayed busy for {self.timeout:g}s",
                provider=self.provider,
                model=self.model,
                attempts=0,
            )
        try:
            yield
        finally:
            self._slots.release()

    def _send(self, *, system: str, prompt: str, max_tokens: int, temperature: float) -> _Reply:
        raise NotImplementedError

    def _require_key(self, api_key: str | None, base_url: str | None, env_name: str) -> str:
        if api_key:
            return api_key
        if base_url:
            return _PLACEHOLDER_API_KEY
        raise LLMPermanentError(
            f"LLM_PROVIDER={self.provider} needs an API key: set LLM_API_KEY or {env_name} "
            "(or LLM_BASE_URL for a local compatible server).",
            provider=self.provider,
            model=self.model,
            attempts=0,
        )

    def complete(
        self,
        *,
        system: str,
        prompt: str,
        max_tokens: int = 2048,
        temperature: float = 0.0,
    ) -> LLMResult:
        started = time.perf_counter()
        # the one place a direct call's texts leave for the provider: scrubbed, whoever built them
        system, prompt = outbound_text(system), outbound_text(prompt)
        attempt = 0
        while True:
            attempt += 1
            try:
                with self._slot():
                    reply = self._send(system=system, prompt=prompt, max_tokens=max_tokens, temperature=temperature)
            except self._sdk_error as exc:
                retryable, retry_after = self._classify(exc)
                if not retryable:
                    raise LLMPermanentError(
                        f"{self.provider} {self.model} refused the request: {_server_message(exc)}",
                        provider=self.provider,
                        model=self.model,
                        attempts=attempt,
                    ) from exc
                unreachable = isinstance(exc, self._connection_error) and not isinstance(exc, self._timeout_error)
                if unreachable and (attempt > self.max_retries or not self.retry_unreachable):
                    url = str(self._client.base_url)
                    raise LLMUnreachable(
                        f"{self.provider} {self.model}: cannot reach {url} ({exc.__cause__ or exc}) "
                        f"after {attempt} attempt{'s' if attempt > 1 else ''}",
                        url=url,
                        provider=self.provider,
                        model=self.model,
                        attempts=attempt,
                    ) from exc
                if attempt > self.max_retries:
                    raise LLMTransientError(
                        f"{self.provider} {self.model} still failing after {attempt} attempts: {_server_message(exc)}",
                        provider=self.provider,
                        model=self.model,
                        attempts=attempt,
                    ) from exc
                self._sleep(self._delay(attempt, retry_after))
                continue
            text = _without_thinking(reply.text)
            input_tokens, output_tokens = reply.input_tokens, reply.output_tokens
            # No request is free of input, nor a written reply of output: a 0 beside text is a count the
            # server did not make (some fill in zeros), like a missing one.
            if not input_tokens and (system or prompt):
                input_tokens = None
            if not output_tokens and reply.text:
                output_tokens = None
            return LLMResult(
                text=text,
                provider=self.provider,
                model=self.model,
                input_tokens=tokens_estimate(system + prompt) if input_tokens is None else input_tokens,
                output_tokens=tokens_estimate(reply.text) if output_tokens is None else output_tokens,
                latency_ms=(time.perf_counter() - started) * 1000.0,
                attempts=attempt,
                tokens_estimated=input_tokens is None or output_tokens is None,
                cached_input_tokens=reply.cached_input_tokens,
                cache_write_tokens=reply.cache_write_tokens,
            )

    def _classify(self, exc: Exception) -> tuple[bool, float | None]:
        """Whether an SDK error is worth retrying, and the server's retry-after if it sent one."""
        if isinstance(exc, self._status_error):
            status: int = exc.status_code  # type: ignore[attr-defined]
            # 429 rate limit, 5xx (529 is Anthropic's "overloaded"), and 408,
            # which is a timeout reported by the server rather than by us.
            if status in (408, 429) or status >= 500:
                return True, _retry_after_seconds(exc.response.headers)  # type: ignore[attr-defined]
            return False, None
        if isinstance(exc, self._connection_error):  # includes timeouts
            return True, None
        return False, None  # e.g. an unparseable response: the same request will fail again

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        if retry_after is None:
            return backoff
        # Never come back sooner than the server asked, nor wait unboundedly
        # because it asked for an hour.
        return min(self.backoff_max, max(backoff, retry_after))


def anthropic_system(system: str, *, cached: bool) -> str | list[dict[str, Any]]:
    """Anthropic's ``system`` parameter. The system prompt is the stable part of every prompt kind:
    marked as the end of a cacheable prefix, calls of the same kind within five minutes read it from the
    cache at a tenth of the input price. Below the model's minimum (1,024 to 4,096 tokens) the API caches
    nothing and charges as usual (docs/llm.md#prompt-caching)."""
    if not cached:
        return system
    return [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]


class AnthropicLLM(_RetryingLLM):
    provider = "anthropic"

    def _connect(self, api_key: str | None, base_url: str | None, timeout: float) -> None:
        import anthropic

        self._sdk_error = anthropic.AnthropicError
        self._status_error = anthropic.APIStatusError
        self._connection_error = anthropic.APIConnectionError
        self._timeout_error = anthropic.APITimeoutError
        self._client = anthropic.Anthropic(
            api_key=self._require_key(api_key, base_url, "ANTHROPIC_API_KEY"),
            base_url=base_url,
            timeout=timeout,
            max_retries=0,  # we retry ourselves, see _RetryingLLM
        )

    def _send(self, *, system: str, prompt: str, max_tokens: int, temperature: float) -> _Reply:
        kwargs: dict[str, Any] = {"system": anthropic_system(system, cached=self.prompt_cache)} if system else {}
        # temperature is deliberately not sent: SDK 2.x speaks API version
        # 2026-10-21, which rejects sampling parameters outright (400 even for
        # temperature=1), and the SDK no longer accepts the argument.
        message = self._client.messages.create(
            model=self.model,
            max_tokens=max_tokens,
            messages=[{"role": "user", "content": prompt}],
            **kwargs,
        )
        text = "".join(block.text for block in message.content if block.type == "text")
        usage = getattr(message, "usage", None)  # a gateway in front of the API may drop it
        # Anthropic's input_tokens are only the tokens after the last cache breakpoint: the prompt's whole
        # input is those plus the ones read from and written to the cache.
        uncached = _token_count(getattr(usage, "input_tokens", None))
        read = _token_count(getattr(usage, "cache_read_input_tokens", None)) or 0
        written = _token_count(getattr(usage, "cache_creation_input_tokens", None)) or 0
        return _Reply(
            text,
            None if uncached is None else uncached + read + written,
            _token_count(getattr(usage, "output_tokens", None)),
            cached_input_tokens=read,
            cache_write_tokens=written,
        )


class OpenAILLM(_RetryingLLM):
    provider = "openai"

    def _connect(self, api_key: str | None, base_url: str | None, timeout: float) -> None:
        import openai

        self._sdk_error = openai.OpenAIError
        self._status_error = openai.APIStatusError
        self._connection_error = openai.APIConnectionError
        self._timeout_error = openai.APITimeoutError
        self.base_url = base_url
        self._client = openai.OpenAI(
            api_key=self._require_key(api_key, base_url, "OPENAI_API_KEY"),
            base_url=base_url,
            timeout=timeout,
            max_retries=0,  # we retry ourselves, see _RetryingLLM
        )

    def _send(self, *, system: str, prompt: str, max_tokens: int, temperature: float) -> _Reply:
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        completion = self._client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            max_tokens=max_tokens,
            temperature=temperature,
        )
        text = (completion.choices[0].message.content or "") if completion.choices else ""
        # Compatible servers omit usage, send null, or count only the prompt: unknown, estimated later.
        usage = completion.usage
        prompt_tokens = _token_count(getattr(usage, "prompt_tokens", None))
        # OpenAI caches prompt prefixes of 1,024 tokens and more by itself and reports the share it read
        # (included in prompt_tokens); local servers leave the details out, or send null.
        cached = _token_count(getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None)) or 0
        return _Reply(
            text,
            prompt_tokens,
            _token_count(getattr(usage, "completion_tokens", None)),
            # never more than the prompt the server counted (a server's odd reply cannot make it negative)
            cached_input_tokens=min(cached, prompt_tokens) if prompt_tokens else 0,
        )


class NoLLM:
    """The provider when none is configured: refuses so the caller can queue the work."""

    provider = "none"
    model = "none"

    def complete(
        self,
        *,
        system: str,
        prompt: str,
        max_tokens: int = 2048,
        temperature: float = 0.0,
    ) -> LLMResult:
        raise LLMUnavailable(
            "No LLM provider is configured (LLM_PROVIDER=none); this work waits until one is configured.",
            provider=self.provider,
            model=self.model,
            attempts=0,
        )


@functools.lru_cache(maxsize=8)
def _build_llm(
    provider: str,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    max_retries: int,
    max_concurrency: int = 0,
    prompt_cache: bool = True,
    retry_unreachable: bool = True,
) -> LLM:
    # Cached on the settings values so each process builds one SDK client (and
    # connection pool) per configuration, while a settings change still takes.
    if provider == "none":
        return NoLLM()
    if provider == "anthropic":
        return AnthropicLLM(
            model or DEFAULT_MODELS["anthropic"],
            api_key,
            base_url,
            timeout=timeout,
            max_retries=max_retries,
            max_concurrency=max_concurrency,
            prompt_cache=prompt_cache,
            retry_unreachable=retry_unreachable,
        )
    if provider == "openai":
        return OpenAILLM(
            model or DEFAULT_MODELS["openai"],
            api_key,
            base_url,
            timeout=timeout,
            max_retries=max_retries,
            max_concurrency=max_concurrency,
            retry_unreachable=retry_unreachable,
        )
    raise LLMPermanentError(
        f"Unknown LLM_PROVIDER {provider!r}; expected one of: {', '.join(LLM_PROVIDERS)}.",
        provider=provider,
        model=model,
        attempts=0,
    )


def llm_from_settings(
    *, timeout: float | None = None, max_retries: int | None = None, retry_unreachable: bool = True
) -> LLM:
    """The LLM configured by Django settings (``NoLLM`` when nothing is set); ``timeout`` and
    ``max_retries`` instead of ``LLM_TIMEOUT_SECONDS`` and ``LLM_MAX_RETRIES`` for a caller that must
    answer within one bounded call (the system page's check, a deep search's rewrite);
    ``retry_unreachable=False`` gives up at once on a server out of reach (``manage.py llm_check``)."""
    from django.conf import settings

    # the defaults live in reasoningbank/settings/ai.py only, whose readers have validated every value
    provider = settings.LLM_PROVIDER
    return _build_llm(
        provider,
        # Empty strings (unset environment variables) mean "not configured".
        settings.LLM_MODEL or None,
        settings.LLM_BASE_URL or None,
        _api_key_from_settings(provider) or None,
        settings.LLM_TIMEOUT_SECONDS if timeout is None else timeout,
        settings.LLM_MAX_RETRIES if max_retries is None else max_retries,
        settings.LLM_MAX_CONCURRENCY,
        settings.LLM_PROMPT_CACHE,
        retry_unreachable,
    )


def _api_key_from_settings(provider: str) -> str | None:
    """``LLM_API_KEY``, else the provider's own key setting (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``)."""
    from django.conf import settings

    own = {"anthropic": settings.ANTHROPIC_API_KEY, "openai": settings.OPENAI_API_KEY}.get(provider)
    return settings.LLM_API_KEY or own


def llm_health_get() -> LlmHealth:
    """From settings alone (no call to the provider): the same rules the providers apply."""
    from django.conf import settings

    provider = settings.LLM_PROVIDER
    return llm_health(
        provider=provider, has_key=bool(_api_key_from_settings(provider)), has_base_url=bool(settings.LLM_BASE_URL)
    )
