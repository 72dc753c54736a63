"""A tool that finds no free database connection in time (the pool exhausted under load, or the database
gone) answers the documented ``database_unavailable`` error with a retry hint, as REST's 503 does,
not the SDK's generic "Error executing tool ..." (docs/concurrency.md).

Over the official MCP SDK client, with a real psycopg pool: the bearer token is checked on one
pooled connection, then every connection of the pool is taken before the tool asks for its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from psycopg_pool import PoolTimeout

from memories.search import services as search_services
from tests.db_pool import connection_pool
from tests.mcp_harness import MODES, mcp_client

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

SEARCH = {"query": "retry flaky network calls", "min_confidence": 0.0}


@pytest.fixture
def small_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A pool of two connections that gives up waiting after half a second."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)  # each tool call gives its own back
    with connection_pool(max_size=2, timeout=0.5) as pool:
        yield pool


@pytest.fixture
def exhausted_when_the_tool_runs(small_pool: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Once the tool has its arguments and principal (its first step: embedding the query), other
    work holds every connection of the pool; handed back after the test."""
    held: list[Any] = []
    real_embed = search_services.query_embed

    def embed_while_others_hold_the_pool(text: str) -> list[float]:
        small_pool.open()
        while True:
            try:
                held.append(small_pool.getconn(timeout=0.2))
            except PoolTimeout:
                return real_embed(text)

    monkeypatch.setattr(search_services, "query_embed", embed_while_others_hold_the_pool)
    yield held
    for conn in held:
        small_pool.putconn(conn)


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_that_finds_no_free_connection_answers_database_unavailable_with_a_retry_hint(
    app, agent_token, exhausted_when_the_tool_runs, mode, caplog
):
    async with mcp_client(app, agent_token, mode) as client:
        result = await client.call_tool("memory_search", SEARCH)

    assert result.is_error
    text = result.content[0].text
    assert "database_unavailable" in text, text
    assert "retry this call in 5 seconds" in text, text
    assert exhausted_when_the_tool_runs, "the pool was never exhausted"
    assert "answered database_unavailable" in caplog.text  # a warning for the operator, no traceback
    assert "Traceback" not in caplog.text


async def test_the_next_call_succeeds_once_connections_are_free_again(app, agent_token, small_pool, monkeypatch):
    held: list[Any] = []
    real_embed = search_services.query_embed

    def embed_once_starved(text: str) -> list[float]:
        if not held:
            small_pool.open()
            while True:
                try:
                    held.append(small_pool.getconn(timeout=0.2))
                except PoolTimeout:
                    break
        return real_embed(text)

    monkeypatch.setattr(search_services, "query_embed", embed_once_starved)
    async with mcp_client(app, agent_token, "2026-07-28") as client:
        starved = await client.call_tool("memory_search", SEARCH)
        for conn in held:
            small_pool.putconn(conn)
        again = await client.call_tool("memory_search", SEARCH)

    assert starved.is_error and "database_unavailable" in starved.content[0].text
    assert not again.is_error, again.content[0].text


@pytest.fixture
def agent_token(cast: Any, make_token: Any) -> str:
    return str(make_token(cast.org_a, projects=[cast.project_a])[0])
