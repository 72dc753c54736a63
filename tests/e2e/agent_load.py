"""Many agents at once on the official MCP SDK client: each records a lesson now and then and searches
the shared bank the rest of the time, for a fixed time. Used by the e2e load test (which asserts the
counts: no failed call, no failed consolidation run, no dropped usage signal) and by
``bench/load.py`` (which reports the latencies), so both measure the same traffic.

Nothing here imports Django or the product: it speaks MCP over HTTP to a running service.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2

# Lessons an engineering team records; each agent's record combines a topic and a practice in its
# own way, so most records are new memories (the write gate folds exact and near copies, which is
# an answer too) and the project keeps reaching the on-demand consolidation threshold.
TOPICS = (
    "flaky integration tests",
    "slow container builds",
    "database migrations",
    "memory leaks in workers",
    "intermittent DNS failures",
    "frontend bundle size",
    "queue consumer races",
    "TLS certificate expiry",
    "timezone bugs in reports",
    "deadlocks in payment writes",
    "noisy pager alerts",
    "oversized images",
    "cache stampedes",
    "retry storms",
    "schema drift between services",
    "log volume costs",
)
PRACTICES = (
    "pin every dependency and rebuild from the lockfile",
    "lock rows in a fixed order by primary key inside each transaction",
    "add jittered exponential backoff and a retry budget",
    "measure first with a profiler and a flame graph",
    "alert on the symptom users feel instead of internal causes",
    "make the change reversible and rehearse the rollback on a copy",
    "give each test its own fixture data instead of a shared one",
    "set explicit timeouts on every outbound call",
)
# what agents ask before a task: the same popular questions from many agents hit (and count usage
# of) the same rows, which is where writers meet
QUERIES = (
    "how do we stop flaky integration tests",
    "retry with backoff",
    "deadlock when two writers update the same rows",
    "speed up container builds",
    "database migration rollback",
    "timeouts on outbound calls",
    "alerting on symptoms",
    "cache stampede protection",
)
SEARCH_EVERY_RECORD = 3  # searches per record: agents look things up more often than they write
MODES = ("legacy", "2026-07-28")  # both protocol eras of the SDK, alternately


@dataclass
class Call:
    tool: str
    started: float  # seconds since the load began
    ms: float
    error: str = ""


@dataclass
class LoadResult:
    agents: int
    seconds: float
    calls: list[Call] = field(default_factory=list)
    agent_errors: list[str] = field(default_factory=list)  # a session that could not even start

    @property
    def failures(self) -> list[str]:
        return [f"{c.tool} at {c.started:.1f}s: {c.error}" for c in self.calls if c.error] + self.agent_errors

    def latencies_ms(self, tool: str | None = None) -> list[float]:
        return [c.ms for c in self.calls if not c.error and (tool is None or c.tool == tool)]

    def count(self, tool: str | None = None) -> int:
        return sum(1 for c in self.calls if tool is None or c.tool == tool)


def _text(result: Any) -> str:
    return " ".join(getattr(content, "text", "") for content in result.content)[:500]


async def agents_run(
    url: str, token: str, *, agents: int, seconds: float, marker: str, call_timeout: float = 120
) -> LoadResult:
    """``agents`` MCP clients, each in its own session, calling tools back to back for ``seconds``
    (a call in flight when the time is up finishes and counts). Every failure is kept, never raised:
    an error result, a transport error, a session that did not start."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    result = LoadResult(agents=agents, seconds=seconds)
    began = time.monotonic()
    deadline = began + seconds

    async def agent(n: int) -> None:
        turn = 0
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=call_timeout) as http:
                transport = streamable_http_client(f"{url}/mcp", http_client=http)
                async with Client(transport, mode=MODES[n % 2]) as client:
                    while time.monotonic() < deadline:
                        tool, arguments = _next_call(n, turn, marker)
                        turn += 1
                        started = time.monotonic()
                        error = ""
                        try:
                            answer = await client.call_tool(tool, arguments)
                            if answer.is_error:
                                error = _text(answer)
                        except Exception as exc:  # a transport failure is a failed call like any other
                            error = f"{type(exc).__name__}: {exc} {getattr(exc, 'data', '') or ''}".strip()
                        result.calls.append(Call(tool, started - began, (time.monotonic() - started) * 1000, error))
        except Exception as exc:  # the session failed to start or to close: say what inside its task group failed
            inner = exc.exceptions if isinstance(exc, BaseExceptionGroup) else (exc,)
            said = "; ".join(f"{type(e).__name__}: {e!r}"[:300] for e in inner)
            result.agent_errors.append(f"agent {n} after {turn} calls: {type(exc).__name__}: {said}")

    async with anyio.create_task_group() as group:
        for n in range(agents):
            group.start_soon(agent, n)
    return result


def _next_call(agent: int, turn: int, marker: str) -> tuple[str, dict[str, Any]]:
    if turn % (SEARCH_EVERY_RECORD + 1) == 0:
        k = agent * 7 + turn
        topic, practice = TOPICS[k % len(TOPICS)], PRACTICES[(k // len(TOPICS) + agent) % len(PRACTICES)]
        return "memory_record", {
            "title": f"For {topic}, {practice.split(' and ')[0]}",
            "description": f"When {topic} come back in a service (agent {agent}, turn {turn}, {marker})",
            "content": f"What worked against {topic}: {practice}. Seen by agent {agent} on turn {turn} ({marker}).",
            "outcome": "success" if (agent + turn) % 5 else "failure",
            "tags": ["load", re.sub(r"[^a-z]+", "-", topic)[:40]],
        }
    return "memory_search", {"query": QUERIES[(agent + turn) % len(QUERIES)], "min_confidence": 0.0, "limit": 5}


def metric_value(metrics_text: str, name: str, **labels: str) -> float:
    """A sample's value in a Prometheus text exposition (0 when absent): the sum over the samples
    of ``name`` whose labels include ``labels``."""
    total = 0.0
    for line in metrics_text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        sample, _, label_text = head.partition("{")
        if sample != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', label_text))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(value)
    return total
