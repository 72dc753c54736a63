"""``manage.py llm_check`` (docs/llm.md#checking-a-provider): one example of every prompt kind the service
sends, through the real ``anthropic`` and ``openai`` SDKs against respx-mocked HTTP — a provider that
answers every kind well (exit 0), one that answers a kind in a shape its parser refuses or refuses the
call (exit 1, naming the kind), none configured (exit 2)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest
import respx
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

from reasoningbank.ai.prompt_kinds import PromptExample, prompt_kind_register, prompt_kind_unregister, prompt_kinds
from reasoningbank.ai.purposes import OTHER, purposes
from reasoningbank.models import LlmCall
from tests.e2e.llm_stub import llm_reply
from tests.local_llm_stub import BASE_URL as LOCAL_URL
from tests.local_llm_stub import LocalServerStub
from tests.reasoningbank.test_llm import anthropic_reply, anthropic_system, openai_reply
from tests.respx_httpx2 import serve_httpx2_from

Reply = Callable[[str, str], str]  # (system, prompt) -> the assistant's text
KINDS = [
    "distill",
    "reason",
    "search_rewrite",
    "synthesize",
    "synthesize_batch",
    "supersede",
    "judge",
    "judge_batch",
    "patterns",
    "summarize",
]


def well_formed(system: str, prompt: str) -> str:
    """A reply in the shape each prompt asks for (the e2e suite's stub, which dispatches on the prompts)."""
    return llm_reply(system, prompt)[1]


def broken(kind: str, reply: str = "They look fine to me.") -> Reply:
    """Well-formed replies, except ``kind``'s: prose its parser cannot read."""

    def answer(system: str, prompt: str) -> str:
        found, text = llm_reply(system, prompt)
        stub_names = {"judge": "contradiction", "supersede": "supersession", "synthesize": "synthesis"}
        return reply if found == {**stub_names, "summarize": "summary"}.get(kind, kind) else text

    return answer


@dataclass
class Provider:
    name: str
    route: respx.Route
    reply: Reply = well_formed

    def answer(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if self.name == "anthropic":
            system = anthropic_system(body)
            prompt = body["messages"][0]["content"]
            return anthropic_reply(self.reply(system, prompt), input_tokens=len(prompt) // 4, output_tokens=20)
        messages = body["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        return openai_reply(self.reply(system, prompt), input_tokens=len(prompt) // 4, output_tokens=20)


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest, settings) -> Iterator[Provider]:
    name = request.param
    settings.LLM_PROVIDER = name
    settings.LLM_API_KEY = "sk-test"
    settings.LLM_MODEL = ""
    settings.LLM_BASE_URL = None
    base, path = (
        ("https://api.anthropic.com", "/v1/messages")
        if name == "anthropic"
        else ("https://api.openai.com/v1", "/chat/completions")
    )
    with respx.mock(base_url=base, assert_all_called=False) as router, serve_httpx2_from(router):
        stub = Provider(name, router.post(path))
        stub.route.side_effect = stub.answer
        yield stub


def run(*args: str) -> tuple[str, CommandError | None]:
    out = io.StringIO()
    try:
        call_command("llm_check", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


def exit_status(*args: str) -> int:
    """What ``manage.py llm_check …`` exits with: Django's own path from argv to ``sys.exit``."""
    command = load_command_class("reasoningbank", "llm_check")
    try:
        command.run_from_argv(["manage.py", "llm_check", *args])
    except SystemExit as exited:
        return int(exited.code or 0)
    return 0


def kind_line(output: str, kind: str) -> str:
    return next(line for line in output.splitlines() if line.split()[:1] == [kind])


# ------------------------------------------------------------------ the registry


def test_every_purpose_the_service_calls_an_llm_for_has_a_prompt_kind_to_check():
    assert [kind.name for kind in prompt_kinds()] == KINDS
    assert {p.name for p in purposes()} - {OTHER} <= {kind.purpose for kind in prompt_kinds()}


def test_a_new_prompt_is_one_registration_and_is_checked_from_then_on(provider, db):
    def yes_or_no(text: str) -> bool:
        if text.strip() not in ("yes", "no"):
            raise ValueError(f"expected yes or no, got {text!r}")
        return text.strip() == "yes"

    prompt_kind_register("rerank", purpose="other", example=lambda: PromptExample("Answer yes or no.", "Q?", yes_or_no))
    try:
        output, error = run("--kind", "rerank")
    finally:
        prompt_kind_unregister("rerank")

    assert error is not None and str(error) == "1 of 1 prompt kinds failed: rerank"
    assert "expected yes or no" in output
    with pytest.raises(ValueError, match="registered already"):
        prompt_kind_register("judge", purpose="other", example=lambda: PromptExample("s", "p", yes_or_no))


# ------------------------------------------------------------------ a provider that answers well


def test_a_provider_answering_every_kind_well_passes_with_latency_and_tokens_per_kind(provider, db):
    output, error = run()

    assert error is None, output
    assert provider.route.call_count == len(KINDS)
    for kind in KINDS:
        line = kind_line(output, kind)
        assert " parsed " in line and " ms " in line and "+20 tokens" in line, line
    assert f"All {len(KINDS)} prompt kinds parsed." in output
    assert not LlmCall.objects.exists()  # the operator's calls: no organization is billed for them


def test_the_examples_are_sent_with_the_services_own_system_prompts(provider, db):
    run()

    sent = [json.loads(call.request.content) for call in provider.route.calls]
    if provider.name == "anthropic":
        systems = [anthropic_system(body) for body in sent]
    else:
        systems = [body["messages"][0]["content"] for body in sent]
    assert systems == [kind.example().system for kind in prompt_kinds()]


def test_the_exit_status_is_0_when_every_kind_parsed(provider, db, capsys):
    assert exit_status() == 0
    assert f"All {len(KINDS)} prompt kinds parsed." in capsys.readouterr().out


# ------------------------------------------------------------------ a provider that does not


@pytest.mark.parametrize("kind", ["judge", "summarize", "distill"])
def test_a_kind_answered_in_a_shape_its_parser_refuses_fails_the_check_naming_it(provider, db, kind):
    provider.reply = broken(kind)

    output, error = run()

    assert error is not None and error.returncode == 1
    assert str(error) == f"1 of {len(KINDS)} prompt kinds failed: {kind}"
    assert "NOT PARSED" in kind_line(output, kind)
    assert "They look fine to me." in output  # the reply's head, to see what the model said
    assert all(" parsed " in kind_line(output, other) for other in KINDS if other != kind)


def test_the_exit_status_names_the_failing_kind(provider, db, capsys):
    provider.reply = broken("patterns", reply="Patterns: testing first, always.")

    assert exit_status() == 1
    assert f"1 of {len(KINDS)} prompt kinds failed: patterns" in capsys.readouterr().err


def test_a_kind_the_provider_refuses_is_a_failed_call_with_the_providers_words(provider, db):
    def refuse_summaries(request: httpx.Request) -> httpx.Response:
        if "Create a concise summary" in request.content.decode():
            return httpx.Response(400, json={"error": {"message": "prompt too long for this model", "type": "x"}})
        return provider.answer(request)

    provider.route.side_effect = refuse_summaries

    output, error = run()

    assert error is not None and str(error) == f"1 of {len(KINDS)} prompt kinds failed: summarize"
    line = output.split(kind_line(output, "summarize"), 1)[1].splitlines()[1]
    assert "CALL FAILED" in kind_line(output, "summarize") and "prompt too long for this model" in line


# ------------------------------------------------------------------ a provider out of reach


def test_a_provider_out_of_reach_stops_the_check_after_one_call_naming_the_url_and_the_fix(provider, db):
    provider.route.side_effect = httpx.ConnectError("[Errno 111] Connection refused")

    output, error = run()

    assert provider.route.call_count == 1  # not 10 kinds × 4 attempts
    assert error is not None and error.returncode == 1
    message = str(error)
    where = "https://api.anthropic.com" if provider.name == "anthropic" else "https://api.openai.com/v1"
    assert "\n" not in message and where in message and "Connection refused" in message
    assert f"{len(KINDS) - 1} other prompt kinds were not sent" in message
    assert "LLM_BASE_URL" in message  # the fix: where the URL comes from
    assert "CALL FAILED" in kind_line(output, KINDS[0])
    assert all(not line.split()[:1] == [kind] for line in output.splitlines() for kind in KINDS[1:])


def test_a_local_server_that_is_not_running_is_named_with_its_setting(settings, db):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = LOCAL_URL
    settings.LLM_MODEL = "llama3.2"
    settings.LLM_API_KEY = None
    with respx.mock(base_url=LOCAL_URL) as router, serve_httpx2_from(router):
        route = router.post("/chat/completions").mock(side_effect=httpx.ConnectError("[Errno 111] Connection refused"))

        _, error = run()

    assert route.call_count == 1
    assert error is not None and LOCAL_URL in str(error)
    assert "start the server LLM_BASE_URL names, or correct LLM_BASE_URL" in str(error)


def test_json_output_marks_the_kinds_not_sent_to_a_provider_out_of_reach(provider, db):
    provider.route.side_effect = httpx.ConnectError("[Errno 111] Connection refused")

    output, error = run("--json")

    assert error is not None and error.returncode == 1
    results = json.loads(output)
    assert [r["kind"] for r in results] == KINDS
    assert [r["stage"] for r in results] == ["call"] + ["skipped"] * (len(KINDS) - 1)
    assert results[0]["unreachable_url"] and not any(r["parsed"] for r in results)


# ------------------------------------------------------------------ options


def test_one_kind_can_be_checked_alone(provider, db):
    output, error = run("--kind", "judge")

    assert error is None
    assert provider.route.call_count == 1
    assert "All 1 prompt kinds parsed." in output


def test_an_unknown_kind_is_refused_naming_the_known_ones(provider, db):
    _, error = run("--kind", "tarot")

    assert error is not None and "'tarot'" in str(error) and "judge" in str(error)
    assert provider.route.call_count == 0


def test_json_output_has_one_object_per_kind(provider, db):
    provider.reply = broken("supersede")

    output, error = run("--json")

    assert error is not None and error.returncode == 1
    results = json.loads(output)
    assert [r["kind"] for r in results] == KINDS
    assert [r["kind"] for r in results if not r["parsed"]] == ["supersede"]
    assert {r["stage"] for r in results} == {"ok", "parse"}
    assert all(r["output_tokens"] == 20 for r in results)


# ------------------------------------------------------------------ no LLM


def test_without_an_llm_it_says_how_to_configure_one_and_exits_2(settings, db, capsys):
    settings.LLM_PROVIDER = "none"

    _, error = run()
    assert error is not None and error.returncode == 2
    assert "No LLM is configured (LLM_PROVIDER=none)" in str(error) and "LLM_API_KEY" in str(error)

    assert exit_status() == 2


def test_a_hosted_provider_without_its_key_exits_2_naming_the_setting(settings, db):
    settings.LLM_PROVIDER = "anthropic"
    settings.LLM_API_KEY = None
    settings.ANTHROPIC_API_KEY = None
    settings.LLM_BASE_URL = None

    _, error = run()

    assert error is not None and error.returncode == 2 and "ANTHROPIC_API_KEY" in str(error)


# ------------------------------------------------------------------ a local server


def test_a_local_server_that_rejects_response_format_and_counts_no_tokens_passes_with_estimates(settings, db):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = LOCAL_URL
    settings.LLM_MODEL = "llama3.2"
    settings.LLM_API_KEY = None
    stub = LocalServerStub(reply=well_formed, usage="missing", response_format="reject")
    with respx.mock(base_url=LOCAL_URL) as router, serve_httpx2_from(router):
        router.post("/chat/completions").mock(side_effect=stub)

        output, error = run()

    assert error is None, output
    assert f"Checking openai llama3.2 at {LOCAL_URL}" in output
    assert "tokens" in kind_line(output, "judge") and "≈" in kind_line(output, "judge")
    assert len(stub.requests) == len(KINDS)
