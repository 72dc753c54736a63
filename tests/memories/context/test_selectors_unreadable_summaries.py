"""A stored summary no read can render — what an older import let in, here written straight into the
database — is skipped and logged by every read of summaries, never a 500 for the whole answer: search
(one project and org-wide, REST and MCP), the summary list and get, memory_context in each of its
variants (REST and MCP), and a memory's dashboard page (docs/security/imports.md#reads-survive-a-bad-row)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from memories.context.selectors import SUMMARIES_UNREADABLE
from memories.models import MemorySummary
from tests.factories import summary_make
from tests.mcp_harness import in_thread, mcp_client

pytestmark = pytest.mark.django_db

SEARCH = "/api/v1/memories/search"
SUMMARIES = "/api/v1/summaries"
CONTEXT = "/api/v1/memories/context"
DECISION = {"decision": "Use a deadline", "rationale": "bounded latency", "outcome": None, "confidence": "high"}
# what the import used to let in: parts lacking keys or of the wrong types
DAMAGE = {
    "decision-lacking-keys": {"decisions": [{"decision": "Use a deadline"}]},
    "decision-of-wrong-types": {"decisions": [{**DECISION, "decision": 7, "confidence": ["high"]}]},
    "decision-not-an-object": {"decisions": ["Use a deadline", 3]},
    "fact-lacking-keys": {"superseded_facts": [{"original_fact": "30 s"}]},
    "fact-of-wrong-types": {"superseded_facts": [{"original_fact": 30, "superseded_by": None, "source_memory_id": 1}]},
    "key-facts-not-a-list": {"key_facts": {"fact": "deadline"}},
}


@pytest.fixture(params=sorted(DAMAGE))
def damage(request: Any) -> dict[str, Any]:
    return DAMAGE[request.param]


@pytest.fixture
def pair(agent: Any, damage: dict[str, Any]) -> tuple[MemorySummary, MemorySummary]:
    """Two summaries of web-app about timeouts: a good one and one damaged in the database."""
    good = summary_make(agent, title="HTTP timeouts", summary="Wrap every HTTP call in a timeout.")
    bad = summary_make(agent, title="Database timeouts", summary="Every database call needs a timeout deadline.")
    MemorySummary.objects.filter(pk=bad.pk).update(**damage)
    return good, bad


def skipped(read: str) -> float:
    return SUMMARIES_UNREADABLE.labels(read=read)._value.get()


@pytest.mark.parametrize("project", ["web-app", None], ids=["one-project", "org-wide"])
def test_a_search_returns_the_good_summary_and_skips_the_damaged_one(cast, token_client, pair, project, caplog):
    good, bad = pair
    before = skipped("search")
    body = {"query": "timeout on every call", "limit": 10, **({"project": project} if project else {})}

    with caplog.at_level(logging.WARNING, logger="memories.context.selectors"):
        response = token_client(cast.org_a).post(SEARCH, body, format="json")

    assert response.status_code == 200, response.content
    assert [s["id"] for s in response.json()["summaries"]] == [good.id]
    assert skipped("search") == before + 1
    (line,) = [r for r in caplog.records if getattr(r, "summary_id", None) == bad.id]
    assert line.read == "search" and line.org_id == cast.org_a.id and line.problems
    assert "Every database call" not in line.getMessage()  # the row's problems, never its text


def test_the_summary_list_leaves_the_damaged_one_out_and_its_get_is_a_404_saying_why(cast, token_client, pair):
    good, bad = pair
    client = token_client(cast.org_a)

    listed = client.get(SUMMARIES)
    one = client.get(f"{SUMMARIES}/{bad.id}")

    assert listed.status_code == 200 and [s["id"] for s in listed.json()["results"]] == [good.id]
    assert one.status_code == 404 and "cannot be read" in one.json()["detail"]
    assert client.get(f"{SUMMARIES}/{good.id}").status_code == 200


@pytest.mark.parametrize(
    "variant",
    [
        {"prioritize": "relevance", "task": "add a timeout to the database call"},
        {"prioritize": "relevance"},
        {"prioritize": "recency"},
        {"prioritize": "activation"},
    ],
    ids=["relevance-to-a-task", "relevance-without-a-task", "recency", "activation"],
)
def test_every_variant_of_the_context_serves_the_good_summary_and_skips_the_damaged_one(
    cast, token_client, pair, variant
):
    good, bad = pair

    response = token_client(cast.org_a).post(CONTEXT, {"project": "web-app", **variant}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["summary_ids"] == [good.id]
    assert bad.memory_id in response.json()["memory_ids"]  # its memory takes the place, as a memory


def test_the_memory_page_of_a_damaged_summary_shows_the_memory_without_it(client, cast, pair):
    _, bad = pair
    client.force_login(cast.alice)

    response = client.get(f"/memories/{bad.memory_id}/")

    assert response.status_code == 200 and "Consolidated summary" not in response.content.decode()


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_over_mcp_search_and_context_skip_the_damaged_summary(app, cast, make_token, monkeypatch):
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # no worker-thread connection outlives a test
    raw, agent = await in_thread(lambda: make_token(cast.org_a, projects=[cast.project_a]))
    good = await in_thread(lambda: summary_make(agent, title="HTTP timeouts", summary="Time out every HTTP call."))
    bad = await in_thread(lambda: summary_make(agent, title="DB timeouts", summary="Time out every database call."))
    await in_thread(lambda: MemorySummary.objects.filter(pk=bad.pk).update(**DAMAGE["decision-lacking-keys"]))

    async with mcp_client(app, raw, "2026-07-28") as client:
        found = await client.call_tool("memory_search", {"query": "timeout on every call", "limit": 10})
        context = await client.call_tool("memory_context", {"prioritize": "recency"})

    assert not found.is_error, found.content[0].text
    assert [s["id"] for s in found.structured_content["summaries"]] == [good.id]
    assert not context.is_error, context.content[0].text
    assert context.structured_content["summary_ids"] == [good.id]
