"""Every text bound for a model provider is scrubbed at one place (reasoningbank/ai/outbound.py,
docs/security/secret-scrubbing.md#what-is-scrubbed): what the real ``anthropic`` and ``openai`` SDKs send
over respx-mocked HTTP holds no secret, whoever built the prompt — a direct call, a metered call, the
provider check, a batch, a remote embedder — and a token of ours in it is revoked.

The secrets are assembled from pieces so that secret scanners do not flag this file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from accounts.models import AuditEvent
from accounts.tokens.services import token_authenticate, token_create
from reasoningbank.ai.batch_services import batch_session, batch_submit
from reasoningbank.ai.check import llm_check
from reasoningbank.ai.embedders import OpenAIEmbedder
from reasoningbank.ai.llm import AnthropicLLM, OpenAILLM
from reasoningbank.ai.metered import llm_complete
from reasoningbank.ai.prompt_kinds import PromptExample, PromptKind, prompt_kinds
from reasoningbank.scrubbing import scrub_secrets
from tests.batch_api_stub import BatchApiStub, batch_api_served
from tests.reasoningbank.test_llm import anthropic_reply, anthropic_system, openai_reply
from tests.repo_files import REPO, python_modules
from tests.respx_httpx2 import serve_httpx2_from

AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
PEM = "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END RSA " + "PRIVATE KEY-----"
SECRETS = (AWS_KEY, GITHUB_TOKEN, "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo")
PROMPT = f"Summarise: deployed with {AWS_KEY}, pushed with {GITHUB_TOKEN}, signed with\n{PEM}\nand it worked."
SYSTEM = f"You summarise deploys. The operator's own key is {GITHUB_TOKEN}."


class Provider:
    """The provider's endpoint, mocked: every request body it received."""

    def __init__(self, name: str, route: respx.Route) -> None:
        self.name, self.route = name, route
        route.side_effect = self.answer

    def answer(self, request: httpx.Request) -> httpx.Response:
        reply = anthropic_reply if self.name == "anthropic" else openai_reply
        return reply("Done.", input_tokens=50, output_tokens=2)

    def sent(self) -> list[tuple[str, str]]:
        """(system, prompt) of every request, read from the HTTP bodies."""
        texts = []
        for call in self.route.calls:
            body = json.loads(call.request.content)
            if self.name == "anthropic":
                texts.append((anthropic_system(body), body["messages"][0]["content"]))
            else:
                system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
                texts.append((system, next(m["content"] for m in body["messages"] if m["role"] == "user")))
        return texts


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest, settings: Any) -> Iterator[Provider]:
    settings.LLM_PROVIDER, settings.LLM_API_KEY, settings.LLM_MODEL, settings.LLM_BASE_URL = (
        request.param, "sk-test", "", None,
    )  # fmt: skip
    settings.LLM_MAX_RETRIES = 0
    base, path = {
        "anthropic": ("https://api.anthropic.com", "/v1/messages"),
        "openai": ("https://api.openai.com/v1", "/chat/completions"),
    }[request.param]
    with respx.mock(base_url=base, assert_all_called=False) as router, serve_httpx2_from(router):
        yield Provider(request.param, router.post(path))


def llm_of(provider: Provider) -> AnthropicLLM | OpenAILLM:
    if provider.name == "anthropic":
        return AnthropicLLM("claude-haiku-4-5", api_key="sk-test", max_retries=0)
    return OpenAILLM("gpt-4o-mini", api_key="sk-test", max_retries=0)


def assert_clean(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def test_a_direct_call_sends_its_system_prompt_and_prompt_scrubbed(provider):
    result = llm_of(provider).complete(system=SYSTEM, prompt=PROMPT)

    ((system, prompt),) = provider.sent()
    assert result.text == "Done."
    assert_clean(system, prompt)
    assert prompt == scrub_secrets(PROMPT).text
    assert "[REDACTED:aws_access_key_id]" in prompt and "[REDACTED:private_key]" in prompt
    assert system == "You summarise deploys. The operator's own key is [REDACTED:github_token]."


def test_a_metered_call_of_any_purpose_is_scrubbed_and_a_token_of_ours_in_it_revoked(provider, cast):
    _, raw = token_create(organization=cast.org_a, label="laptop")

    llm_complete(organization=cast.org_a, purpose="distill", system="s", prompt=f"{PROMPT}\nRB_TOKEN={raw}")

    ((_, prompt),) = provider.sent()
    assert_clean(prompt)
    assert raw not in prompt and "RB_TOKEN=[REDACTED:reasoningbank_token]" in prompt
    assert token_authenticate(raw) is None
    (row,) = AuditEvent.objects.filter(organization=cast.org_a, verb="token.revoke")
    assert row.data["seen_in"] == "llm.prompt" and raw not in str(row.data)


def test_the_provider_check_sends_a_kind_holding_a_secret_scrubbed(provider, db):
    kind = PromptKind("leaky", "other", lambda: PromptExample(SYSTEM, PROMPT, lambda text: text))

    (check,) = llm_check(llm_of(provider), [kind])

    assert check.parsed
    ((system, prompt),) = provider.sent()
    assert_clean(system, prompt)


def test_every_prompt_of_ours_passes_the_scrubber_unchanged():
    """The scrubber must never rewrite our own instructions on their way out."""
    for kind in prompt_kinds():
        example = kind.example()
        assert scrub_secrets(example.system).redactions == 0, kind.name
        assert scrub_secrets(example.prompt).redactions == 0, kind.name


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_batched_call_is_scrubbed_when_the_batch_is_submitted(name, cast):
    llm = (
        AnthropicLLM("claude-haiku-4-5", api_key="sk-test")
        if name == "anthropic"
        else OpenAILLM("gpt-4o-mini", api_key="sk-test")
    )
    with batch_api_served(BatchApiStub()) as stub:
        session = batch_session(organization=cast.org_a, subject=cast.project_a, llm=llm)
        assert session is not None
        session.answer(purpose="distill", system=SYSTEM, prompt=PROMPT, max_tokens=200)
        batch_submit(session)

    ((_, system, prompt, _),) = stub.requests()
    assert_clean(system, prompt, json.dumps(stub.created), "".join(stub.uploads))
    assert prompt == scrub_secrets(PROMPT).text


def test_a_remote_embedders_inputs_are_scrubbed():
    with respx.mock(base_url="https://api.openai.com/v1") as router, serve_httpx2_from(router):
        vector = {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]}
        route = router.post("/embeddings").mock(
            return_value=httpx.Response(200, json={"object": "list", "model": "m", "data": [vector]})
        )
        OpenAIEmbedder("m", 2, api_key="sk-test", base_url=None).embed([PROMPT])

    sent = json.loads(route.calls.last.request.content)["input"]
    assert_clean(*sent)
    assert sent == [scrub_secrets(PROMPT).text]


# the SDK calls that send text to a provider; only the modules that scrub first may make them
SENDS = re.compile(r"\.(?:messages|completions|embeddings|batches|files)\.create\(")
SENDERS = {"reasoningbank/ai/llm.py", "reasoningbank/ai/batch_providers.py", "reasoningbank/ai/embedders.py"}


def test_no_other_product_module_sends_text_to_a_provider():
    found = {
        str(path.relative_to(REPO))
        for path in python_modules()
        if not str(path.relative_to(REPO)).startswith(("tests/", "bench/", "scripts/"))
        and SENDS.search(path.read_text(encoding="utf-8"))
    }
    assert found == SENDERS
