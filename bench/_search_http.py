"""``search.py``'s legs over HTTP against a real server: ``POST /api/v1/memories/search`` (REST) and the
``memory_search`` tool through the official MCP SDK client, each sequentially and with concurrent
clients, with the server's CPU per search. Every series sends texts the server has not embedded yet
(``queries_needed`` of them per leg), so no query is served from its query-embedding cache; the MCP leg
then sends further new queries each twice in a row, the second served from the cache: the paired
difference is the query embedding's share, robust to load that drifts during the run."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from common import CpuMeter, Latency, log

# the MCP leg's latency target at 100K, sequential p50 and p99 in milliseconds, uncached queries, the
# query's embedding included (bench/README.md)
MCP_TARGET_P50_MS = 15.0
MCP_TARGET_P99_MS = 40.0
CONNECT_QUERIES = 3  # each concurrent client's first searches, which open its connection or session


def queries_needed(count: int, warmup: int, concurrency: int) -> int:
    """Distinct queries one HTTP leg uses: a warm-up, ``count`` sequential, then ``count`` for each
    concurrent client after its connection is open, and ``count`` for the MCP leg's pairs."""
    return warmup + count + concurrency * (CONNECT_QUERIES + count) + count


def _split(
    queries: list[str], count: int, warmup: int, concurrency: int
) -> tuple[list[str], list[str], list[list[str]], list[str]]:
    """(warm-up, sequential, one list per concurrent client: its connection queries then its ``count``,
    the ``count`` sent in pairs)."""
    if len(queries) < queries_needed(count, warmup, concurrency):
        raise ValueError(f"{len(queries)} queries for a leg that needs {queries_needed(count, warmup, concurrency)}")
    rest = queries[warmup + count :]
    per_client = CONNECT_QUERIES + count
    return (
        queries[:warmup],
        queries[warmup : warmup + count],
        [rest[k * per_client : (k + 1) * per_client] for k in range(concurrency)],
        rest[concurrency * per_client : concurrency * per_client + count],
    )


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
    base_url: str, raw_token: str, pool: list[str], count: int, warmup: int, concurrency: int, server_pid: int
) -> dict[str, Any]:
    import httpx2

    warm, queries, per_client, _ = _split(pool, count, warmup, concurrency)
    headers = {"Authorization": f"Bearer {raw_token}"}
    async with httpx2.AsyncClient(base_url=base_url, headers=headers, timeout=60) as client:
        await _rest_series(client, warm)
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
        # open the connections
        await asyncio.gather(
            *(_rest_series(c, mine[:CONNECT_QUERIES]) for c, mine in zip(clients, per_client, strict=True))
        )
        meter = CpuMeter(server_pid).start()
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *(_rest_series(c, mine[CONNECT_QUERIES:]) for c, mine in zip(clients, per_client, strict=True))
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
    pairs: list[str] | None = None,
) -> tuple[list[float], int, float, list[tuple[float, float]]]:
    """One client session: the warm-up, then ``queries`` timed (the meter runs from their start); then,
    once the meter stops, each of ``pairs`` sent twice in a row: (first, second) milliseconds."""
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
            wall = time.perf_counter() - t0
            paired: list[tuple[float, float]] = []
            if pairs:
                if meter is not None:
                    meter.stop()
                for q in pairs:
                    (first, second), _ = await _mcp_series(client, [q, q])
                    paired.append((first, second))
            return latencies, errors, wall, paired


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
    base_url: str, raw_token: str, pool: list[str], count: int, warmup: int, concurrency: int, server_pid: int
) -> dict[str, Any]:
    reason = await mcp_available(base_url, raw_token)
    if reason is not None:
        return {"status": "unavailable", "reason": reason}
    warm, queries, per_client, pairs = _split(pool, count, warmup, concurrency)
    meter = CpuMeter(server_pid)
    sequential, errors, wall, paired = await _mcp_worker(base_url, raw_token, queries, warm, meter=meter, pairs=pairs)
    uncached = Latency.of(sequential)
    first, second = Latency.of([a for a, _ in paired]), Latency.of([b for _, b in paired])
    difference = Latency.of([a - b for a, b in paired])
    out: dict[str, Any] = {
        "status": "ok",
        "sequential": {
            **uncached.as_dict(),
            "throughput_qps": round(len(queries) / wall, 1),
            "errors": errors,
            "cpu_ms_per_search": meter.per_op_ms(len(queries)),
        },
        # new texts each sent twice in a row: the second is served its vector from the server's cache
        "pairs": {
            "first_uncached": {
                **first.as_dict(),
                "throughput_qps": round(len(paired) / (sum(a for a, _ in paired) / 1000), 1),
            },
            "second_cached": {
                **second.as_dict(),
                "throughput_qps": round(len(paired) / (sum(b for _, b in paired) / 1000), 1),
            },
            "difference": difference.as_dict(),
        },
        "embedding_share": {
            "p50_ms": round(difference.p50, 3),
            "p50_fraction": round(difference.p50 / first.p50, 3),
        },
    }
    ready = asyncio.Barrier(concurrency)
    meter = CpuMeter(server_pid)
    t0 = time.perf_counter()
    results = await asyncio.gather(
        *(
            _mcp_worker(base_url, raw_token, mine[CONNECT_QUERIES:], mine[:CONNECT_QUERIES], ready, meter)
            for mine in per_client
        )
    )
    meter.stop()  # includes the 4 sessions' closing
    total_wall = time.perf_counter() - t0
    latencies = [x for series, _, _, _ in results for x in series]
    wall = max(w for _, _, w, _ in results)  # after the barrier: every client connected and warm
    out["concurrent"] = {
        **Latency.of(latencies).as_dict(),
        "clients": concurrency,
        "throughput_qps": round(len(latencies) / wall, 1),
        "errors": sum(e for _, e, _, _ in results),
        "wall_seconds_including_connect": round(total_wall, 2),
        "cpu_ms_per_search": meter.per_op_ms(len(latencies)),
    }
    out["target"] = {
        "p50_ms": MCP_TARGET_P50_MS,
        "p99_ms": MCP_TARGET_P99_MS,
        "met": out["sequential"]["p50"] <= MCP_TARGET_P50_MS and out["sequential"]["p99"] <= MCP_TARGET_P99_MS,
    }
    return out


def record_mark(seed: int) -> str:
    """What each memory of a record leg says (``_scale_legs.record_calls``): the leg removes them by it."""
    return f"Recorded by the scale bench, run {seed},"


async def bench_mcp_record(
    base_url: str, raw_token: str, count: int, warmup: int, server_pid: int, seed: int
) -> dict[str, Any]:
    """``memory_record`` over MCP in one session: latency and CPU per call (client / server / PostgreSQL),
    the server's write-behind work included (the meter stops a second after the last answer)."""
    import httpx2
    from _scale_legs import record_calls
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    calls = record_calls(warmup + count, seed)
    latencies: list[float] = []
    errors = 0
    meter = CpuMeter(server_pid)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {raw_token}"}, timeout=120) as http:
        async with Client(streamable_http_client(base_url + "/mcp", http_client=http), mode="legacy") as client:
            for k, arguments in enumerate(calls):
                if k == warmup:
                    await asyncio.sleep(1.0)
                    meter.start()
                    started = time.perf_counter()
                t0 = time.perf_counter()
                result = await client.call_tool("memory_record", arguments)
                if k >= warmup:
                    latencies.append((time.perf_counter() - t0) * 1000)
                if result.is_error:
                    errors += 1
                    if errors == 1:
                        log(f"  memory_record error: {result.content[0].text if result.content else result}")
            wall = time.perf_counter() - started
            await asyncio.sleep(1.0)  # the last calls' work behind the answer
            meter.stop()
    return {
        **Latency.of(latencies).as_dict(),
        "throughput_per_s": round(len(latencies) / wall, 1),
        "errors": errors,
        "cpu_ms_per_record": meter.per_op_ms(len(latencies)),
    }


def recorded_remove(seed: int) -> int:
    """The record leg's memories deleted again, so that later runs search the dataset as loaded."""
    from memories.models import Memory

    deleted, _ = Memory.objects.filter(content__contains=record_mark(seed)).delete()
    return deleted
