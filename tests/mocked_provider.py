"""The configured LLM provider mocked at its HTTP endpoint, for tests of what a feature sends it: the real
``anthropic`` / ``openai`` SDK talks to respx (no network), and the requests it sent are read back from
their bodies."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import respx

from tests.reasoningbank.test_llm import anthropic_reply, anthropic_system, openai_reply
from tests.respx_httpx2 import serve_httpx2_from

ENDPOINTS = {
    "anthropic": ("https://api.anthropic.com", "/v1/messages"),
    "openai": ("https://api.openai.com/v1", "/chat/completions"),
}


@dataclass
class Provider:
    name: str
    route: respx.Route

    def reply(self, text: str) -> httpx.Response:
        return (anthropic_reply if self.name == "anthropic" else openai_reply)(text)

    def answers(self, *texts: str) -> None:
        """Answer the next requests with these texts, one each, in order."""
        self.route.side_effect = [self.reply(text) for text in texts]

    def prompts(self) -> list[str]:
        """The user prompt of every request the provider was sent, in order."""
        bodies = [json.loads(call.request.content) for call in self.route.calls]
        if self.name == "anthropic":
            return [body["messages"][0]["content"] for body in bodies]
        return [body["messages"][1]["content"] for body in bodies]

    def systems(self) -> list[str]:
        """The system prompt of every request, in order."""
        bodies = [json.loads(call.request.content) for call in self.route.calls]
        if self.name == "anthropic":
            return [anthropic_system(body) for body in bodies]
        return [body["messages"][0]["content"] for body in bodies]


@contextlib.contextmanager
def provider_mocked(settings: Any, name: str) -> Iterator[Provider]:
    """``name`` configured as the LLM provider (no retries: a failure is reported at once), its endpoint
    mocked."""
    settings.LLM_PROVIDER, settings.LLM_API_KEY = name, "sk-test"
    settings.LLM_MODEL, settings.LLM_BASE_URL, settings.LLM_MAX_RETRIES = "", None, 0
    base_url, path = ENDPOINTS[name]
    with respx.mock(base_url=base_url, assert_all_called=False) as router, serve_httpx2_from(router):
        yield Provider(name, router.post(path))
