"""The dashboard's error pages (templates/404.html, 403.html, 500.html, 400.html, 403_csrf.html) with DEBUG
off, as users run it: the dashboard's look (its stylesheet and top bar), what happened in a sentence, and a
way on. The machine paths (``/api/``, ``/mcp``, ``/oauth/``) keep their JSON errors
(docs/security/http-hardening.md#one-error-shape)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from reasoningbank.api_errors import server_error
from tests.mcp_harness import http_client

FAILING_URLS = "tests.reasoningbank.error_pages_urls"


@pytest.fixture(autouse=True)
def _debug_off(settings: Any) -> None:
    settings.DEBUG = False


def dashboard_page(html: str, status: int) -> bool:
    """Whether ``html`` is one of our error pages: the stylesheet, the top bar, the page's card."""
    return (
        "/static/css/app.css" in html and 'class="topbar"' in html and f'id="error-page" data-status="{status}"' in html
    )


def test_an_unknown_dashboard_address_is_a_page_in_the_dashboard_style_that_leads_to_sign_in(client, db):
    response = client.get("/no-such-page/")

    html = response.content.decode()
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
    assert dashboard_page(html, 404) and "Page not found" in html and "/no-such-page/" in html
    assert 'href="/accounts/login/"' in html


def test_a_signed_in_member_gets_the_navigation_and_a_way_back(client, cast):
    client.force_login(cast.alice)

    html = client.get("/memories/mem_nothing_here/").content.decode()

    assert dashboard_page(html, 404) and 'class="mainnav"' in html and 'href="/">Overview</a>' in html


def test_a_refusal_is_a_page_in_the_dashboard_style_saying_why(client, cast):
    client.force_login(cast.alice)  # an owner, not the service's staff

    response = client.post("/system/llm-check/")

    html = response.content.decode()
    assert response.status_code == 403 and dashboard_page(html, 403)
    assert "the LLM check is for the service&#x27;s staff" in html


@pytest.mark.urls(FAILING_URLS)
def test_a_bug_behind_a_dashboard_page_is_a_page_in_the_dashboard_style(db):
    response = Client(raise_request_exception=False).get("/failing/")

    html = response.content.decode()
    assert response.status_code == 500 and dashboard_page(html, 500)
    assert "Something went wrong on our side" in html and "a bug in a view" not in html


def test_the_500_page_reads_nothing_from_the_database_or_the_session(rf, db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = server_error(rf.get("/memories/"))

    assert response.status_code == 500 and dashboard_page(response.content.decode(), 500)


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.urls(FAILING_URLS)
async def test_the_500_page_names_the_request_id_the_logs_carry(app):
    async with http_client(app) as http:
        response = await http.get("/failing/")

    request_id = response.headers["x-request-id"]
    assert response.status_code == 500 and request_id and f"<code>{request_id}</code>" in response.text


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
@pytest.mark.urls(FAILING_URLS)
async def test_the_machine_paths_keep_their_json_errors(app):
    async with http_client(app) as http:
        failing = await http.get("/api/v1/failing")
        unknown = await http.get("/api/v1/no-such-endpoint")
        not_mcp = await http.get("/mcp/no-such-thing")

    for response, status in [(failing, 500), (unknown, 404), (not_mcp, 404)]:
        assert response.status_code == status and response.headers["content-type"].startswith("application/json")
        assert {"detail", "code", "errors"} <= response.json().keys() and "error-page" not in response.text


def test_an_address_the_service_does_not_answer_to_is_a_page_in_the_dashboard_style(client, db):
    response = client.get("/", HTTP_HOST="not-this-service.example")

    html = response.content.decode()
    assert response.status_code == 400 and dashboard_page(html, 400) and "ALLOWED_HOSTS" in html


def test_a_form_sent_without_its_csrf_token_is_a_page_in_the_dashboard_style(cast):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(cast.alice)

    response = browser.post("/settings/projects/", {"name": "Infra"})

    html = response.content.decode()
    assert response.status_code == 403 and dashboard_page(html, 403) and "Reload the page" in html
