"""The system page's LLM check in a real browser: staff click "Check the LLM" and htmx brings in one row
per prompt kind, one request after the other, then the verdict naming the kind whose reply did not parse
(the real ``openai`` SDK in the live server, against respx-mocked HTTP)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from django.contrib.auth import get_user_model

from reasoningbank.ai.prompt_kinds import prompt_kinds
from tests.e2e.llm_stub import llm_reply
from tests.reasoningbank.test_llm import openai_reply
from tests.respx_httpx2 import serve_httpx2_from

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _long_running(long_running_process: None) -> None:
    """Health read afresh, long after this process "started" (no grace)."""


@pytest.fixture
def provider(settings) -> Iterator[respx.Route]:
    """An OpenAI provider whose judge answers in prose; every other kind well."""
    settings.LLM_PROVIDER = "openai"
    settings.LLM_API_KEY = "sk-test"
    settings.LLM_MODEL = "gpt-4o-mini"
    settings.LLM_BASE_URL = None

    def answer(request: httpx.Request) -> httpx.Response:
        messages = json.loads(request.content)["messages"]
        kind, text = llm_reply(messages[0]["content"], messages[1]["content"])
        return openai_reply("They agree, I think." if kind == "contradiction" else text)

    with respx.mock(base_url="https://api.openai.com/v1") as router, serve_httpx2_from(router):
        yield router.post("/chat/completions").mock(side_effect=answer)


@pytest.fixture
def staff(db: Any) -> Any:
    return get_user_model().objects.create_user(
        username="ops", email="ops@rb.test", password="correct-horse-battery", is_staff=True
    )


def test_staff_check_the_llm_and_see_each_prompt_kinds_result_then_the_verdict(
    staff, provider, live_server, page, shoot
):
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=login]", "ops@rb.test")
    page.fill("input[name=password]", "correct-horse-battery")
    page.click("button[type=submit]")
    page.goto(f"{base}/system/")

    page.get_by_role("button", name="Check the LLM").click()

    verdict = page.locator("#llm-check-verdict")
    verdict.wait_for()
    assert verdict.inner_text().strip() == f"1 of {len(prompt_kinds())} prompt kinds failed: judge"
    rows = page.locator("#llm-check-table tbody tr[data-stage]")
    assert [rows.nth(i).get_attribute("data-kind") for i in range(rows.count())] == [k.name for k in prompt_kinds()]
    assert page.locator('tr[data-kind="judge"]').get_attribute("data-stage") == "parse"
    assert "They agree, I think." in page.locator('tr[data-kind="judge"]').inner_text()
    assert page.locator('tr[data-stage="ok"]').count() == len(prompt_kinds()) - 1
    assert page.locator("#llm-check-pending").count() == 0
    assert provider.call_count == len(prompt_kinds())
    shoot("system-llm-check")
