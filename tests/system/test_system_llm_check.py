"""The system page's LLM check (system/views_llm_check.py, docs/llm.md#checking-a-provider): staff only;
one prompt kind per request, each answer carrying the next kind's row; one attempt per kind; the real
``openai`` SDK against respx-mocked HTTP; nothing metered against any organization."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from django.contrib.auth import get_user_model

from reasoningbank.ai.prompt_kinds import prompt_kinds
from reasoningbank.models import LlmCall
from tests.e2e.llm_stub import llm_reply
from tests.reasoningbank.test_llm import openai_reply
from tests.respx_httpx2 import serve_httpx2_from

URL = "/system/llm-check/"
PAGE = "/system/"
KINDS = [kind.name for kind in prompt_kinds()]


@pytest.fixture(autouse=True)
def _long_running(long_running_process: None) -> None:
    """Health read afresh, with no LLM unless a test configures one."""


@pytest.fixture
def staff(db: Any) -> Any:
    return get_user_model().objects.create_user(
        username="ops", email="ops@rb.test", password="x-long-pass", is_staff=True
    )


@pytest.fixture
def provider(settings) -> Iterator[dict[str, Any]]:
    """An OpenAI provider answering every prompt kind well, unless ``state["broken"]`` names one."""
    settings.LLM_PROVIDER = "openai"
    settings.LLM_API_KEY = "sk-test"
    settings.LLM_MODEL = "gpt-4o-mini"
    settings.LLM_BASE_URL = None
    state: dict[str, Any] = {"broken": None, "status": 200}

    def answer(request: httpx.Request) -> httpx.Response:
        if state["status"] != 200:
            return httpx.Response(state["status"], json={"error": {"message": "overloaded", "type": "x"}})
        messages = json.loads(request.content)["messages"]
        found, text = llm_reply(messages[0]["content"], messages[1]["content"])
        return openai_reply("no idea" if found == state["broken"] else text, input_tokens=50, output_tokens=20)

    with respx.mock(base_url="https://api.openai.com/v1", assert_all_called=False) as router, serve_httpx2_from(router):
        state["route"] = router.post("/chat/completions").mock(side_effect=answer)
        yield state


def text(response: Any) -> str:
    return html.unescape(response.content.decode())


def pending_kind(body: str) -> str | None:
    found = re.search(r'id="llm-check-pending" data-kind="([a-z_]+)"', body)
    return found.group(1) if found else None


def run_all(client: Any) -> list[str]:
    """Follow the chain as htmx does: post each pending row's kind with the failures so far."""
    bodies = [text(client.post(URL, HTTP_HX_REQUEST="true"))]
    while (kind := pending_kind(bodies[-1])) is not None:
        vals = json.loads(re.search(r"hx-vals='([^']*)'", bodies[-1]).group(1))  # type: ignore[union-attr]
        assert vals["kind"] == kind
        response = client.post(URL, vals, HTTP_HX_REQUEST="true")
        assert response.status_code == 200
        bodies.append(text(response))
    return bodies


# --- who may run it ----------------------------------------------------------------------------------


def test_staff_see_the_button_and_org_owners_do_not(client, cast, staff, provider):
    client.force_login(staff)
    body = text(client.get(PAGE))
    assert (
        'id="llm-check-run"' in body
        and f'hx-post="{URL}"' in body
        and " disabled" not in body.split('id="llm-check-run"')[1].split(">")[0]
    )
    client.force_login(cast.alice)
    assert "llm-check-run" not in text(client.get(PAGE))


@pytest.mark.cross_tenant("system-llm-check")
def test_an_org_owner_or_viewer_cannot_run_it_and_nothing_is_sent_or_metered(client, cast, provider):
    """Not tenant data but the service's provider and the operator's tokens: every non-staff user, of any
    org, is refused before anything is sent; the staff's check bills no org."""
    for user in (cast.alice, cast.bob, cast.charlie):
        client.force_login(user)
        assert client.post(URL).status_code == 403
        assert client.post(URL, {"kind": "judge"}).status_code == 403
    assert provider["route"].call_count == 0
    assert not LlmCall.objects.exists()


def test_it_is_a_post(client, staff, provider):
    client.force_login(staff)
    assert client.get(URL).status_code == 405


# --- the chain ---------------------------------------------------------------------------------------


def test_the_table_starts_with_the_first_kind_about_to_post_itself(client, staff, provider):
    client.force_login(staff)

    body = text(client.post(URL, HTTP_HX_REQUEST="true"))

    assert f"Checking <code>openai</code> <code>gpt-4o-mini</code>: {len(KINDS)} prompt kinds" in body
    assert pending_kind(body) == KINDS[0]
    assert 'hx-trigger="load"' in body and 'hx-swap="outerHTML"' in body
    assert provider["route"].call_count == 0  # the table alone calls nothing


def test_each_kind_answers_with_its_result_and_the_next_kind_until_the_verdict(client, staff, provider):
    client.force_login(staff)

    bodies = run_all(client)

    assert provider["route"].call_count == len(KINDS)
    results = [re.search(r'data-kind="([a-z_]+)" data-stage="(\w+)"', b).groups() for b in bodies[1:]]  # type: ignore[union-attr]
    assert results == [(kind, "ok") for kind in KINDS]
    assert "50 + 20" in bodies[1] and " ms" in bodies[1]
    assert f"All {len(KINDS)} prompt kinds parsed." in bodies[-1]
    assert not LlmCall.objects.exists()


def test_a_kind_whose_reply_does_not_parse_is_shown_with_the_parsers_words_and_named_in_the_verdict(
    client, staff, provider
):
    provider["broken"] = "contradiction"  # the judge's prompt
    client.force_login(staff)

    bodies = run_all(client)

    judge = next(b for b in bodies if b.lstrip().startswith('<tr data-kind="judge"'))
    assert 'data-stage="parse"' in judge and "not parsed" in judge
    assert "contradiction reply contains no JSON object" in judge and "no idea" in judge
    assert f"1 of {len(KINDS)} prompt kinds failed: judge" in bodies[-1]


def test_each_kind_gets_one_attempt_so_a_request_waits_one_timeout_at_most(client, staff, provider, settings):
    settings.LLM_MAX_RETRIES = 3
    provider["status"] = 503
    client.force_login(staff)

    body = text(client.post(URL, {"kind": "judge"}, HTTP_HX_REQUEST="true"))

    assert provider["route"].call_count == 1
    assert 'data-stage="call"' in body and "call failed" in body and "overloaded" in body


def test_a_provider_out_of_reach_ends_the_check_at_the_first_kind_naming_where_it_was_looked_for(
    client, staff, provider
):
    provider["route"].side_effect = httpx.ConnectError("[Errno 111] Connection refused")
    client.force_login(staff)

    bodies = run_all(client)

    assert provider["route"].call_count == 1 and len(bodies) == 2  # the table, then the first kind's row
    assert 'data-stage="call"' in bodies[1] and "Connection refused" in bodies[1]
    verdict = bodies[1].split('id="llm-check-verdict"', 1)[1]
    assert re.search(r"cannot be reached at <code>https://api.openai.com/v1/?</code>", verdict)
    assert f"the other {len(KINDS) - 1} prompt kinds were not sent" in verdict and "LLM_BASE_URL" in verdict


# --- bad input, no LLM -------------------------------------------------------------------------------


def test_an_unknown_kind_is_a_400_naming_the_known_ones(client, staff, provider):
    client.force_login(staff)

    response = client.post(URL, {"kind": "tarot"})

    assert response.status_code == 400
    assert "'tarot'" in response.content.decode() and "judge" in response.content.decode()
    assert provider["route"].call_count == 0


def test_without_an_llm_the_button_is_disabled_and_the_check_says_why(client, staff, settings):
    settings.LLM_PROVIDER = "none"
    client.force_login(staff)

    page = text(client.get(PAGE))
    assert "No LLM is configured." in page
    assert " disabled" in page.split('id="llm-check-run"')[1].split(">")[0]
    for data in ({}, {"kind": "judge"}):
        body = text(client.post(URL, data))
        assert "No LLM is configured (LLM_PROVIDER=none)" in body and "llm-check-pending" not in body
