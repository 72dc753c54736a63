"""``memory_ask`` under an LLM budget, 60 at once (docs/llm-spend.md#how-a-cap-is-kept): sixty
threads, each with its own PostgreSQL connection, ask through ``POST /api/v1/memories/ask`` with the
real ``openai`` and ``anthropic`` SDKs answering through respx-mocked HTTP. With an honest provider the
asks are admitted until the cap is really spent; with one that reports far more tokens than a call can
use, the spend still passes the cap by at most one call, and the over-report is shown."""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from django.db import connection
from rest_framework.test import APIClient

from memories.ask.contracts import REPLY_MAX_TOKENS
from reasoningbank.ai.budget import call_ceiling
from reasoningbank.ai.budget_rules import DEFAULT_REPLY_SHARE, MESSAGE_OVERHEAD_TOKENS
from reasoningbank.ai.llm import tokens_estimate
from reasoningbank.models import LlmBudget, LlmBudgetPeriod, LlmCall
from tests.factories import MemoryFactory
from tests.memories.ask.test_api_ask import ASK, QUESTION, answer_json, mocked_llm
from tests.reasoningbank.test_llm import anthropic_reply, anthropic_system, openai_reply

ASKS = 60
DAILY_CAP = 20_000  # the red team's cap
# the reply a real model would send: its tokens at the usual four characters a token
REPLY = answer_json()
REFUSAL = re.compile(r"\(([\d,]+) used, ([\d,]+) held for calls in flight; this call needs about ([\d,]+)\)")

# each asking thread commits on its own connection: sixty at once, so it runs where no other test holds
# connections of the same server (the serial mark: ./scripts/test.sh runs it after the parallel tiers)
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.serial]


def bank(agent: Any) -> None:
    """A few memories the question finds, so each ask sends a prompt of some size."""
    for day in range(1, 6):
        MemoryFactory(
            principal=agent,
            title=f"Caroline's support group, week {day}",
            description="What Caroline told us at standup",
            content=f"Caroline said she went to the support group yesterday; week {day} notes: " + "detail " * 60,
            created_at=datetime(2023, 5, day, 14, 30, tzinfo=UTC),
        )


class Provider:
    """The mocked endpoint's answers: what the provider reports for each request, and what it saw."""

    def __init__(self, name: str, usage: Callable[[str, str], tuple[int, int]]) -> None:
        self.name, self.usage = name, usage
        self.prompts: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if self.name == "anthropic":
            system, prompt = anthropic_system(body), body["messages"][0]["content"]
        else:
            system, prompt = body["messages"][0]["content"], body["messages"][1]["content"]
        with self.lock:
            self.prompts.append((system, prompt))
        time.sleep(0.02)  # a model takes a moment: the asks overlap (nothing is measured)
        input_tokens, output_tokens = self.usage(system, prompt)
        reply = anthropic_reply if self.name == "anthropic" else openai_reply
        return reply(REPLY, input_tokens=input_tokens, output_tokens=output_tokens)


def honest(system: str, prompt: str) -> tuple[int, int]:
    """A tokenizer a little denser than the service's estimate (3.7 characters a token, not 4)."""
    return math.ceil(len(system + prompt) / 3.7), math.ceil(len(REPLY) / 4)


def over_reporting(system: str, prompt: str) -> tuple[int, int]:
    """Far more than any ask can use: 40,000 prompt tokens and 8,000 reply tokens, every time."""
    return 40_000, 8_000


def ask_all(raw_token: str) -> list[tuple[int, dict[str, Any]]]:
    """``ASKS`` asks at once, each on its own thread and database connection."""
    start = threading.Barrier(ASKS)
    answers: list[tuple[int, dict[str, Any]]] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_token}")
            start.wait()
            response = client.post(ASK, {"question": QUESTION}, format="json")
            answers.append((response.status_code, response.json()))
        except BaseException as exc:  # surfaced below, not lost in the thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(ASKS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    return answers


def refusals(answers: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, int, int]]:
    """(used, held, needed) as each refusal stated them; every other answer is a 200."""
    found = []
    for status, body in answers:
        if status == 200:
            continue
        assert (status, body["code"]) == (403, "limit_exceeded"), body
        stated = REFUSAL.search(body["detail"])
        assert stated, body["detail"]  # refused at the cap, never crowded out by a call that hung
        found.append(tuple(int(figure.replace(",", "")) for figure in stated.groups()))
    return found  # type: ignore[return-value]


@pytest.fixture
def capped(cast: Any, agent: Any, settings: Any) -> Any:
    bank(agent)
    LlmBudget.objects.create(organization=cast.org_a, daily_tokens=DAILY_CAP, alert_percent=None)
    settings.LLM_BUDGET_WAIT_SECONDS = 120  # a loaded machine never turns a held-back ask into a refusal
    return cast


def test_sixty_concurrent_asks_are_admitted_until_the_cap_is_really_spent(capped: Any, make_token: Any, settings):
    """The bound on the spend when the first ask is refused comes from the admission rule
    (``budget_rules.admission``): an ask is refused when ``used + held + likely > cap``, where ``held``
    is the likely costs of the asks in flight. While more than one ask is in flight, all of them at
    their ceilings fit in the cap (``used + ceilings <= cap``), so ``held <= ceilings <= cap - used``;
    while one ask runs alone, ``held`` is its likely cost. Either way ``used > cap - 2 × likely`` at a
    refusal, with ``likely`` at its largest: the prompt and the larger of the default reply and the real
    one. Reserving ceilings (the old rule) refused the seventh ask at once, with nothing spent."""
    raw, _ = make_token(capped.org_a)
    with mocked_llm(settings, "openai") as llm:
        provider = Provider("openai", honest)
        llm.route.mock(side_effect=provider)
        answers = ask_all(raw)

    system, prompt = max(provider.prompts, key=lambda sent: len(sent[1]))
    reply_tokens = max(math.ceil(REPLY_MAX_TOKENS * DEFAULT_REPLY_SHARE), math.ceil(len(REPLY) / 4))
    likely = tokens_estimate(system) + tokens_estimate(prompt) + MESSAGE_OVERHEAD_TOKENS + reply_tokens
    ceiling = call_ceiling(system=system, prompt=prompt, max_tokens=REPLY_MAX_TOKENS)

    refused = refusals(answers)
    ran = [body for status, body in answers if status == 200]
    assert refused and ran  # sixty asks do not fit in the cap, and it was not refused from the start
    assert all(used + held + needed > DAILY_CAP for used, held, needed in refused)  # only at the cap
    first_refusal_spend = min(used for used, _, _ in refused)  # spend only grows: the first refusal's
    assert first_refusal_spend > DAILY_CAP - 2 * likely, (first_refusal_spend, likely)
    day = LlmBudgetPeriod.objects.get(organization=capped.org_a, period="day")
    assert (day.reserved_tokens, day.ceiling_tokens, day.over_reported_tokens) == (0, 0, 0)
    assert DAILY_CAP - 2 * likely < day.used_tokens <= DAILY_CAP + ceiling
    metered = LlmCall.objects.filter(organization=capped.org_a)
    assert metered.count() == len(ran) == len(provider.prompts)
    assert day.used_tokens == sum(c.input_tokens + c.output_tokens for c in metered)


def test_a_provider_over_reporting_usage_takes_the_spend_past_the_cap_by_at_most_one_call(
    capped: Any, make_token: Any, token_client: Any, settings: Any
) -> None:
    """Each reply claims 48,000 tokens, more than the whole cap: every ask is charged its ceiling, the
    most it could have used, the rest is shown as over-reported, and the spend ends within one ceiling
    of the cap. Charging the reported usage after admitting on reservations took it to many times the
    cap."""
    raw, _ = make_token(capped.org_a)
    with mocked_llm(settings, "anthropic") as llm:
        provider = Provider("anthropic", over_reporting)
        llm.route.mock(side_effect=provider)
        answers = ask_all(raw)

    ceiling = max(call_ceiling(system=s, prompt=p, max_tokens=REPLY_MAX_TOKENS) for s, p in provider.prompts)
    refusals(answers)
    ran = sum(1 for status, _ in answers if status == 200)
    day = LlmBudgetPeriod.objects.get(organization=capped.org_a, period="day")
    assert ran == len(provider.prompts) >= 1
    assert DAILY_CAP - ceiling < day.used_tokens <= DAILY_CAP + ceiling  # refused only once the cap was spent
    assert (day.reserved_tokens, day.ceiling_tokens) == (0, 0)
    assert day.used_tokens + day.over_reported_tokens == ran * 48_000  # every reported token accounted for

    # shown: the metered calls keep what the provider reported, the caps say how much was over-reported
    alice = token_client(capped.org_a)
    spend = alice.get("/api/v1/llm/spend?days=1").json()
    assert (spend["input_tokens"], spend["output_tokens"]) == (ran * 40_000, ran * 8_000)
    daily = next(cap for cap in alice.get("/api/v1/llm/budget").json()["caps"] if cap["cap"] == "daily")
    assert (daily["used"], daily["over_reported"]) == (day.used_tokens, day.over_reported_tokens)
    assert daily["reached"]
