"""A memory's text reaches agents without terminal escapes or bidi controls, over MCP (both eras) and
REST alike, wherever it was written; its Unicode survives; the export keeps it as stored
(docs/agent-api.md, "Control characters")."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.db import connection

from accounts.models import Organization
from tests.consolidation.vectors import remember, vec
from tests.mcp_harness import MODES, dump, http_client, in_thread, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
TITLE = "Wrap \x1b[31merrors\x1b[0m with context café"
CONTENT = "Use fmt.Errorf with %w \u202eso callers\u202c keep the cause 中文 👩\u200d💻\x1b]0;pwned\x07 always."
SHOWN_TITLE = "Wrap errors with context café"
SHOWN_CONTENT = "Use fmt.Errorf with %w so callers keep the cause 中文 👩\u200d💻 always."


@pytest.fixture
def hostile(cast: Any, make_token: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A memory as an import or an old write may hold it (nothing strips it on the way in), and a token."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    # an old write: the instruction-smell detector (which holds bidi tricks for review) was not there yet
    cast.org_a.poisoning_policy = Organization.POISONING_OFF
    cast.org_a.save(update_fields=["poisoning_policy"])
    scopes = ["memories:read", "memories:write", "admin"]
    raw, principal = make_token(cast.org_a, projects=[cast.project_a], scopes=scopes)
    memory = remember(
        principal, TITLE, vec({1: 1.0}), content=CONTENT, tags=["go\x1b[1m", "errors\u2066"], confidence=0.9
    )
    return {"token": raw, "id": memory.id}


def strings(value: Any) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings(v)]
    return []


def assert_clean(payload: Any) -> None:
    texts = strings(payload)
    assert not [t for t in texts if UNSAFE.search(t)]  # no escape, control or bidi character
    assert any(SHOWN_TITLE in t for t in texts)


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_results_hold_no_escape_or_bidi_character(app: Any, hostile: dict[str, Any], mode: str) -> None:
    async with mcp_client(app, hostile["token"], mode) as client:
        got = await client.call_tool("memory_get", {"memory_id": hostile["id"]})
        found = await client.call_tool("memory_search", {"query": "wrap errors with context", "min_confidence": 0})
        context = await client.call_tool("memory_context", {"context": "You are a coding agent.", "min_confidence": 0})

    for result in (got, found, context):
        assert not result.is_error, dump(result)
        assert_clean(result.structured_content)
        assert not UNSAFE.search(result.content[0].text)
    memory = got.structured_content
    assert (memory["title"], memory["content"], memory["tags"]) == (SHOWN_TITLE, SHOWN_CONTENT, ["go", "errors"])
    assert found.structured_content["memories"][0]["content"] == SHOWN_CONTENT
    assert SHOWN_CONTENT in context.structured_content["context_block"]


async def test_rest_answers_hold_no_escape_or_bidi_character(app: Any, hostile: dict[str, Any]) -> None:
    async with http_client(app, hostile["token"]) as http:
        answers = [
            await http.get(f"/api/v1/memories/{hostile['id']}"),
            await http.get("/api/v1/memories"),
            await http.post("/api/v1/memories/search", json={"query": "wrap errors", "min_confidence": 0}),
            await http.post("/api/v1/memories/context", json={"min_confidence": 0}),
        ]
        exported = await http.get("/api/v1/export", params={"project": "web-app"})

    for response in answers:
        assert response.status_code == 200, (response.request.url, response.text)
        assert_clean(response.json())
    assert answers[0].json()["content"] == SHOWN_CONTENT
    # the export is a backup: it restores exactly what is stored
    assert exported.status_code == 200, exported.text
    assert TITLE in [s for line in exported.text.splitlines() for s in strings(json.loads(line))]


async def test_stored_text_is_left_as_written(hostile: dict[str, Any]) -> None:
    from memories.models import Memory

    stored = await in_thread(lambda: Memory.objects.get(id=hostile["id"]))
    assert (stored.title, stored.content) == (TITLE, CONTENT)
