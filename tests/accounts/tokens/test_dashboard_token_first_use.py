"""The dashboard's connection snippet works as copied (docs/tenancy.md#who-owns-what): an owner creates a
token in Settings → API tokens with the form's defaults (whole organization), pastes the `.mcp.json`
snippet into an agent, and the agent's first memory_record and session_submit succeed in an org with one
project. With no project or several, the page says what the agent needs before it fails."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import httpx2
import pytest
from django.db import connection
from django.test import Client
from mcp import Client as MCPClient
from mcp.client.streamable_http import streamable_http_client

from accounts.models import DEFAULT_TOKEN_SCOPES, ApiToken
from memories.models import AgentSession, Memory
from memories.sessions import services as services_sessions
from tests.factories import ProjectFactory
from tests.mcp_harness import MODES, dump, in_thread

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

RECORD = {
    "title": "Run the migrations before the tests",
    "description": "When a fresh checkout's tests fail on missing tables",
    "content": "Run manage.py migrate first; the test database is built from the migrations.",
    "outcome": "success",
}
SESSION = {"session_id": "first-session", "outcome": "success", "trace": "user: fix the build\nagent: done"}


@pytest.fixture(autouse=True)
def _setup(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    settings.LLM_PROVIDER, settings.LLM_API_KEY = "openai", "test-key"
    monkeypatch.setattr(services_sessions, "session_enqueue", lambda *a, **k: None)


def token_page(user: Any) -> str:
    """Settings → API tokens → Create token, with the form exactly as it is offered (default scopes,
    no project restriction): the page that shows the snippets, as text."""
    client = Client()
    client.force_login(user)
    form = html.unescape(client.get("/settings/tokens/").content.decode())
    checked = re.findall(r'name="scopes" value="([^"]+)" checked', form)
    assert sorted(checked) == sorted(DEFAULT_TOKEN_SCOPES)
    response = client.post("/settings/tokens/", {"label": "my laptop", "scopes": checked})
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def snippet_server(page: str) -> dict[str, Any]:
    block = re.search(r'<pre class="snippet" id="snippet-json">(.*?)</pre>', page, re.S)
    assert block is not None
    return json.loads(block.group(1))["mcpServers"]["reasoningbank"]


@pytest.mark.parametrize("mode", MODES)
async def test_the_copied_snippet_records_and_submits_a_session_in_a_one_project_org(
    app: Any, cast: Any, mode: str
) -> None:
    page = await in_thread(lambda: token_page(cast.alice))
    server = snippet_server(page)
    token = await in_thread(lambda: ApiToken.objects.get(label="my laptop"))
    assert await in_thread(lambda: list(token.projects.all()) + list(token.teams.all())) == []  # org-wide

    # the agent connects to the snippet's URL with the snippet's headers, nothing else
    async with (
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), headers=server["headers"]) as http,
        MCPClient(streamable_http_client(server["url"], http_client=http), mode=mode) as client,
    ):
        recorded = await client.call_tool("memory_record", RECORD)
        submitted = await client.call_tool("session_submit", SESSION)

    assert not recorded.is_error, dump(recorded)
    assert not submitted.is_error, dump(submitted)
    memory = await in_thread(lambda: Memory.objects.select_related("project").get(pk=recorded.structured_content["id"]))
    session = await in_thread(lambda: AgentSession.objects.select_related("project").get())
    assert memory.project == cast.project_a and session.project == cast.project_a


async def test_the_token_page_says_which_project_the_agent_writes_to(cast: Any) -> None:
    page = await in_thread(lambda: token_page(cast.alice))
    assert "web-app" in page[page.index('id="new-token"') : page.index("</section>")]


async def test_with_several_projects_the_token_page_says_to_pass_project(cast: Any) -> None:
    await in_thread(lambda: ProjectFactory(organization=cast.org_a, slug="mobile"))
    page = await in_thread(lambda: token_page(cast.alice))
    panel = page[page.index('id="new-token"') : page.index("</section>")]
    assert "project" in panel and "mobile" in panel and "web-app" in panel


async def test_with_no_project_the_token_page_says_to_create_one_first(cast: Any) -> None:
    await in_thread(lambda: cast.project_a.delete())
    page = await in_thread(lambda: token_page(cast.alice))
    panel = page[page.index('id="new-token"') : page.index("</section>")]
    assert "Create a project" in panel and "/settings/projects/" in panel
    form = page[page.index("<h2>Create a token</h2>") :]
    assert "no project yet" in form
