"""Backpressure (reasoningbank/admission.py, docs/concurrency.md): more agents at once than the database
pool can serve wait their turn instead of failing; only a request that waited the whole
``REQUEST_QUEUE_TIMEOUT`` is answered 503 ``database_unavailable`` with ``Retry-After``; health
checks and metrics are never queued."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from django.db import connection

from memories.search import services as search_services
from reasoningbank.admission import RequestAdmission
from tests.db_pool import connection_pool
from tests.mcp_harness import http_client, mcp_client, running

pytestmark = pytest.mark.anyio


class HeldApp:
    """An inner app whose requests to ``/hold`` stay at work until released; the others answer at once."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.started: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.started.append(scope["path"])
        if scope["path"].endswith("/hold"):
            await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"ok"})


def client(app: Any) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://testserver")


async def wait_until(condition: Any) -> None:
    with anyio.fail_after(10):
        while not condition():
            await anyio.sleep(0.01)


async def test_a_request_beyond_the_limit_waits_for_a_slot_and_then_runs():
    inner = HeldApp()
    app = RequestAdmission(inner, limit=1, timeout=60, retry_after=5)
    answers: dict[str, int] = {}

    async def get(path: str) -> None:
        async with client(app) as http:
            answers[path] = (await http.get(path)).status_code

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(get, "/api/v1/hold")
        await wait_until(lambda: inner.started == ["/api/v1/hold"])
        tasks.start_soon(get, "/api/v1/me")
        await anyio.sleep(0.2)
        assert inner.started == ["/api/v1/hold"]  # queued, not failed, while the slot is taken
        inner.release.set()

    assert inner.started == ["/api/v1/hold", "/api/v1/me"]
    assert answers == {"/api/v1/hold": 200, "/api/v1/me": 200}


@pytest.mark.parametrize(
    ("path", "content_type"),
    [("/api/v1/me", "application/json"), ("/mcp", "application/json"), ("/settings/tokens/", "text/plain")],
)
async def test_a_request_that_waited_the_whole_queue_timeout_is_a_503_with_retry_after(path, content_type):
    inner = HeldApp()
    app = RequestAdmission(inner, limit=1, timeout=0.1, retry_after=5)

    async with anyio.create_task_group() as tasks, client(app) as http:
        tasks.start_soon(http.get, "/api/v1/hold")
        await wait_until(lambda: inner.started == ["/api/v1/hold"])
        response = await http.get(path)
        inner.release.set()

    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert response.headers["content-type"].startswith(content_type)
    assert path not in inner.started  # nothing of it ran
    if content_type == "application/json":
        body = json.loads(response.content)
        assert body["code"] == "database_unavailable" and body["errors"] == {}
        assert "retry in 5 seconds" in body["detail"]


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/static/app.css"])
async def test_health_checks_and_metrics_are_never_queued(path):
    inner = HeldApp()
    app = RequestAdmission(inner, limit=1, timeout=60, retry_after=5)

    async with anyio.create_task_group() as tasks, client(app) as http:
        tasks.start_soon(http.get, "/api/v1/hold")
        await wait_until(lambda: inner.started == ["/api/v1/hold"])
        response = await http.get(path)
        inner.release.set()

    assert response.status_code == 200


# --- the product: more agents at once than the pool has connections ---------------------------------


AGENTS = 5
SEARCH = {"query": "retry flaky network calls", "min_confidence": 0.0}


@pytest.fixture
def agent_token(cast: Any, make_token: Any) -> str:
    return str(make_token(cast.org_a, projects=[cast.project_a])[0])


@pytest.fixture
def pool_of_three(agent_token: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Three connections, each waited for at most half a second."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)
    with connection_pool(max_size=3, timeout=0.5) as pool:
        yield pool


@pytest.mark.django_db(transaction=True)
async def test_more_agents_at_once_than_the_pool_has_connections_all_get_their_answers(
    agent_token, pool_of_three, settings, monkeypatch
):
    """Five MCP searches at once on a pool of three connections that each waits at most half a second:
    each search keeps its connection busy for longer than that (a slow query), so without the queue
    most of them found no connection in time and failed."""
    settings.REQUEST_CONCURRENCY = 1  # this pool's share for requests (the default is half the pool)
    real_search = search_services.memory_search

    def slow_search(*args: Any, **kwargs: Any) -> Any:
        found = real_search(*args, **kwargs)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(0.7)")  # on this request's connection: it stays in use
        return found

    monkeypatch.setattr(search_services, "memory_search", slow_search)
    from reasoningbank.asgi import build_application

    results: list[Any] = []
    async with running(build_application()) as app:

        async def agent() -> None:
            async with mcp_client(app, agent_token, "2026-07-28") as mcp:
                results.append(await mcp.call_tool("memory_search", SEARCH))

        async with anyio.create_task_group() as tasks:
            for _ in range(AGENTS):
                tasks.start_soon(agent)
        async with http_client(app) as http:
            metrics = (await http.get("/metrics")).text

    errors = [r.content[0].text for r in results if r.is_error]
    assert len(results) == AGENTS and errors == [], errors
    assert "reasoningbank_request_queue_wait_seconds" in metrics
