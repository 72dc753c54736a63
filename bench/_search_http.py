"""``search.py``'s legs over HTTP against a real server: ``POST /api/v1/memories/search`` (REST) and the
``memory_search`` tool through the official MCP SDK client, each sequentially and with concurrent
clients, with the server's CPU per search."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from common import CpuMeter, Latency, log

# the MCP leg's latency target, sequential p50 and p99 in milliseconds (bench/README.md)
MCP_TARGET_P50_MS = 15.0
MCP_TARGET_P99_MS = 50.0

# --- 2. REST -----------------------------------------------------------------------------------------


async def _rest_series(client: Any, queries: list[str]) -> tuple[list[float], int]:
    latencies: list[float] = []
    errors = 0
    for q in queries:
        t0 = time.perf_counter()
        response = await client.post("/api/v1/memories/search", json={"query": q})
        latencies.append((time.perf_counter() - t0) * 1000)
        if response.status_code != 200:
            errors += 1
            if errors == 1:
                log(f"  REST error {response.status_code}: {response.text[:300]}")
    return latencies, errors


async def bench_rest(
    base_url: str, raw_token: str, queries: list[str], warmup: int, concurrency: int, server_pid: int
) -> dict[str, Any]:
    import httpx2

    headers = {"Authorization": f"Bearer {raw_token}"}
    async with httpx2.AsyncClient(base_url=base_url, headers=headers, timeout=60) as client:
        await _rest_series(client, queries[:warmup])
        meter = CpuMeter(server_pid).start()
        t0 = time.perf_counter()
        sequential, errors = await _rest_series(client, queries)
        wall = time.perf_counter() - t0
        meter.stop()
    out: dict[str, Any] = {
        "sequential": {
            **Latency.of(sequential).as_dict(),
            "throughput_qps": round(len(queries) / wall, 1),
            "errors": errors,
            "cpu_ms_per_search": meter.per_op_ms(len(queries)),
        }
    }
    clients = [httpx2.AsyncClient(base_url=base_url, headers=headers, timeout=60) for _ in range(concurrency)]
    try:
        await asyncio.gather(*(_rest_series(c, queries[:3]) for c in clients))  # open the connections
        meter = CpuMeter(server_pid).start()
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *(_rest_series(c, _rotated(queries, k, concurrency)) for k, c in enumerate(clients))
        )
        wall = time.perf_counter() - t0
        meter.stop()
    finally:
        for c in clients:
            await c.aclose()
    latencies = [x for series, _ in results for x in series]
    out["concurrent"] = {
        **Latency.of(latencies).as_dict(),
        "clients": concurrency,
        "throughput_qps": round(len(latencies) / wall, 1),
        "errors": sum(e for _, e in results),
        "cpu_ms_per_search": meter.per_op_ms(len(latencies)),
    }
    return out


def _rotated(queries: list[str], k: int, n: int) -> list[str]:
    """Client k of n sends every query once, starting at a different place."""
    shift = k * len(queries) // n
    return queries[shift:] + queries[:shift]


# --- 3. MCP ------------------------------------------------------------------------------------------


async def _mcp_series(client: Any, queries: list[str]) -> tuple[list[float], int]:
    latencies: list[float] = []
    errors = 0
    for q in queries:
        t0 = time.perf_counter()
        result = await client.call_tool("memory_search", {"query": q})
        latencies.append((time.perf_counter() - t0) * 1000)
        if result.is_error:
            errors += 1
            if errors == 1:
                log(f"  MCP tool error: {result.content[0].text if result.content else result}")
    return latencies, errors


async def _mcp_worker(
    url: str,
    raw_token: str,
    queries: list[str],
    warmup: list[str],
    ready: asyncio.Barrier | None = None,
    meter: CpuMeter | None = None,
) -> tuple[list[float], int, float]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {raw_token}"}, timeout=60) as http:
        async with Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy") as client:
            await _mcp_series(client, warmup)
            if ready is not None:
                if await ready.wait() == 0 and meter is not None:  # one task starts the meter
                    meter.start()
            elif meter is not None:
                meter.start()
            t0 = time.perf_counter()
            latencies, errors = await _mcp_series(client, queries)
            return latencies, errors, time.perf_counter() - t0


async def mcp_available(base_url: str, raw_token: str) -> str | None:
    """None when /mcp serves memory_search; otherwise why not."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    try:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {raw_token}"}, timeout=30) as http:
            probe = await http.post(base_url + "/mcp", json={})
            if probe.status_code == 404:
                return "POST /mcp answered 404"
            async with Client(streamable_http_client(base_url + "/mcp", http_client=http), mode="legacy") as client:
                tools = {t.name for t in (await client.list_tools()).tools}
        if "memory_search" not in tools:
            return f"memory_search not among the tools ({', '.join(sorted(tools))})"
    except Exception as exc:  # any failure means: not usable yet
        return f"{type(exc).__name__}: {exc}"
    return None


async def bench_mcp(
    base_url: str, raw_token: str, queries: list[str], warmup: int, concurrency: int, server_pid: int
) -> dict[str, Any]:
    reason = await mcp_available(base_url, raw_token)
    if reason is not None:
        return {"status": "unavailable", "reason": reason}
    meter = CpuMeter(server_pid)
    sequential, errors, wall = await _mcp_worker(base_url, raw_token, queries, queries[:warmup], meter=meter)
    meter.stop()
    out: dict[str, Any] = {
        "status": "ok",
        "sequential": {
            **Latency.of(sequential).as_dict(),
            "throughput_qps": round(len(queries) / wall, 1),
            "errors": errors,
            "cpu_ms_per_search": meter.per_op_ms(len(queries)),
        },
    }
    ready = asyncio.Barrier(concurrency)
    meter = CpuMeter(server_pid)
    t0 = time.perf_counter()
    results = await asyncio.gather(
        *(
            _mcp_worker(base_url, raw_token, _rotated(queries, k, concurrency), queries[:3], ready, meter)
            for k in range(concurrency)
        )
    )
    meter.stop()  # includes the 4 sessions' closing
    total_wall = time.perf_counter() - t0
    latencies = [x for series, _, _ in results for x in series]
    wall = max(w for _, _, w in results)  # after the barrier: every client connected and warm
    out["concurrent"] = {
        **Latency.of(latencies).as_dict(),
        "clients": concurrency,
        "throughput_qps": round(len(latencies) / wall, 1),
        "errors": sum(e for _, e, _ in results),
        "wall_seconds_including_connect": round(total_wall, 2),
        "cpu_ms_per_search": meter.per_op_ms(len(latencies)),
    }
    out["target"] = {
        "p50_ms": MCP_TARGET_P50_MS,
        "p99_ms": MCP_TARGET_P99_MS,
        "met": out["sequential"]["p50"] <= MCP_TARGET_P50_MS and out["sequential"]["p99"] <= MCP_TARGET_P99_MS,
    }
    return out
