"""A short concurrent load over MCP: tens of agents searching and recording at once, zero errors
(deadlocks in the usage write-behind once failed searches:
docs/concurrency.md#locking-order-ascending-memory-id)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, mcp_client, unique

CLIENTS = 30
SEARCHES_EACH = 6
RECORDS_EACH = 2

pytestmark = pytest.mark.anyio


async def test_thirty_concurrent_agents_search_and_record_without_a_single_error(service: Service, acme: Setup) -> None:
    marker = unique()
    errors: list[str] = []
    calls = 0

    async def agent(n: int) -> None:
        nonlocal calls
        mode = "legacy" if n % 2 else "2026-07-28"
        try:
            async with mcp_client(service, acme.project_token, mode) as client:
                for i in range(RECORDS_EACH):
                    result = await client.call_tool(
                        "memory_record",
                        {
                            "title": f"Load {marker} agent {n} note {i}",
                            "description": "Recorded under concurrent load",
                            "content": f"Agent {n} learned thing {i} about caching and retries ({marker}).",
                            "outcome": "success",
                            "tags": ["load"],
                        },
                    )
                    calls += 1
                    _check(result, f"agent {n} record {i}", errors)
                for i in range(SEARCHES_EACH):
                    # the same popular queries from every agent: they hit (and count usage of) the same rows
                    result = await client.call_tool(
                        "memory_search",
                        {
                            "query": ["caching and retries", "load note", "focused test before the suite"][i % 3],
                            "min_confidence": 0.0,
                            "limit": 10,
                        },
                    )
                    calls += 1
                    _check(result, f"agent {n} search {i}", errors)
        except Exception as exc:  # a transport failure is an error like any other
            errors.append(f"agent {n}: {type(exc).__name__}: {exc} {getattr(exc, 'data', '') or ''}")

    with anyio.fail_after(240):
        async with anyio.create_task_group() as tg:
            for n in range(CLIENTS):
                tg.start_soon(agent, n)
    assert not errors, f"{len(errors)} errors in {calls} calls:\n" + "\n".join(errors[:20])
    assert calls == CLIENTS * (SEARCHES_EACH + RECORDS_EACH)
    assert not [line for line in service.log_text().splitlines() if "deadlock detected" in line]


def _check(result: Any, what: str, errors: list[str]) -> None:
    if result.is_error:
        errors.append(f"{what}: " + " ".join(getattr(c, "text", "") for c in result.content))
