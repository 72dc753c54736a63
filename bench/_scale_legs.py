"""``scale.py``'s measured legs: the MCP tools through the official SDK client against a real uvicorn server
(``memory_search``, ``memory_record``, ``memory_context``), and in this process an incremental
consolidation run, the daily rollup and export (bench/README.md, "scale.py")."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from common import log

TOKEN_LABEL = "bench-scale"
TOKEN_PROJECT = "web-app"


def stats(samples_ms: list[float], wall_seconds: float | None = None) -> dict[str, Any]:
    """p50/p95/p99 (ms), mean, n and, given the wall time, throughput (calls per second)."""
    import numpy as np

    a = np.asarray(samples_ms, dtype=float)
    if a.size == 0:
        return {"n": 0}
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    out = {"n": int(a.size), "mean": round(float(a.mean()), 2), "p50": round(float(p50), 2)}
    out.update(p95=round(float(p95), 2), p99=round(float(p99), 2), max=round(float(a.max()), 2))
    if wall_seconds:
        out["throughput_per_s"] = round(a.size / wall_seconds, 1)
    return out


def line(name: str, s: dict[str, Any]) -> str:
    return (
        f"{name}: p50 {s.get('p50')} ms, p95 {s.get('p95')} ms, p99 {s.get('p99')} ms, "
        f"{s.get('throughput_per_s')} calls/s (n={s.get('n')}); load average {os.getloadavg()[0]:.2f}"
    )


def token_for(org: Any, project_slug: str | None) -> str:
    """A fresh API token of ``org`` (restricted to the project when one is named); older scale tokens removed."""
    from accounts.models import ApiToken, Project
    from accounts.services import token_create

    ApiToken.objects.filter(organization=org, label=TOKEN_LABEL).delete()
    projects = [Project.objects.get(organization=org, slug=project_slug)] if project_slug else None
    _, raw = token_create(organization=org, label=TOKEN_LABEL, projects=projects)
    return str(raw)


async def _tool_series(
    base_url: str, raw: str, tool: str, calls: list[dict[str, Any]], warmup: int
) -> tuple[list[float], int, float]:
    """One MCP session calling ``tool`` with each argument set in turn: (latencies of all but the first
    ``warmup`` calls, errors, wall seconds of the timed calls)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []
    errors = 0
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {raw}"}, timeout=120) as http:
        async with Client(streamable_http_client(base_url + "/mcp", http_client=http), mode="legacy") as client:
            started = 0.0
            for k, arguments in enumerate(calls):
                if k == warmup:
                    started = time.perf_counter()
                t0 = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                if k >= warmup:
                    latencies.append((time.perf_counter() - t0) * 1000)
                if result.is_error:
                    errors += 1
                    if errors == 1:
                        log(f"  {tool} error: {result.content[0].text if result.content else result}")
            return latencies, errors, time.perf_counter() - started


def mcp_series(base_url: str, raw: str, tool: str, calls: list[dict[str, Any]], warmup: int = 10) -> dict[str, Any]:
    before = os.getloadavg()
    latencies, errors, wall = asyncio.run(_tool_series(base_url, raw, tool, calls, warmup))
    return {**stats(latencies, wall), "errors": errors, "loadavg_before": before, "loadavg_after": os.getloadavg()}


def rss_mib(pid: int) -> dict[str, float]:
    """Resident memory of a process (now and its peak) in MiB, from /proc."""
    out: dict[str, float] = {}
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith(("VmRSS:", "VmHWM:")):
            out[row.split(":")[0]] = round(int(row.split()[1]) / 1024, 1)
    return out


def record_calls(count: int, seed: int) -> list[dict[str, Any]]:
    """New memories to record (texts of the bench corpus under a namespace of their own, so none is an
    identical copy of a stored one)."""
    from _corpus import Corpus

    corpus = Corpus(seed)
    calls = []
    for i in range(count):
        text = corpus.text(i * 97 + 13)
        calls.append(
            {
                "title": text.title,
                "description": text.description,
                "content": f"{text.content} Recorded by the scale bench, run {seed}, memory {i}.",
                "outcome": text.outcome,
                "tags": text.tags,
            }
        )
    return calls


# --- in process ----------------------------------------------------------------------------------------


def memories_add_new(project: Any, fraction: float, sigma: float) -> int:
    """``fraction`` of the project's memories (active ones picked at random) again as new ones (created
    now, text and vector varied as ``_scale_data`` derives variants): a day of recording before a run."""
    from _scale_data import memory_columns
    from django.db import connection, transaction

    columns = memory_columns()
    values = {
        "id": "'mem_new_' || substr(md5(m.id || clock_timestamp()::text), 1, 20)",
        "content": "m.content || ' Seen again today.'",
        "embedding": (
            "l2_normalize(m.embedding + (SELECT array_agg(random_normal(0, %(sigma)s))::vector "
            "FROM generate_series(1, vector_dims(m.embedding)) WHERE m.id IS NOT NULL))"
        ),
        "created_at": "now()",
        "updated_at": "now()",
        "tier": "'hot'",
    }
    select = ", ".join(values.get(c, f"m.{c}") for c in columns)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO memories_memory ({', '.join(columns)}) SELECT {select} FROM memories_memory m "
            "WHERE m.id IN (SELECT id FROM memories_memory WHERE project_id = %(project)s AND state = 'active' "
            "ORDER BY random() LIMIT (SELECT round(count(*) * %(fraction)s) FROM memories_memory "
            "WHERE project_id = %(project)s))",
            {"project": project.id, "fraction": fraction, "sigma": sigma},
        )
        added = cursor.rowcount
        cursor.execute("ANALYZE memories_memory")
    return added


def signals_add_old(org: Any, count: int) -> int:
    """``count`` usage events older than the 30 days the log keeps, on random memories of the org: what
    the daily rollup folds."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO memories_memorysignal (organization_id, memory_id, project_id, type, positive, session_id, "
            "comment, actor, created_at) SELECT m.organization_id, m.id, m.project_id, 'usage', random() < 0.8, '', "
            "'', 'scale-bench', now() - interval '31 days' - random() * interval '30 days' "
            "FROM memories_memory m WHERE m.organization_id = %s AND m.state = 'active' "
            "ORDER BY random() LIMIT %s",
            [org.id, count],
        )
        return cursor.rowcount


def consolidation_runs(project: Any, *, fraction: float, sigma: float) -> dict[str, Any]:
    """A settled bank, then a day's new memories (``fraction`` of the project) and one run over them: with
    no LLM, then again with the bench's scripted LLM (every prompt answered at once, ``consolidate.py``)."""
    from consolidate import FakeLLM, run_once

    from consolidation.models import ConsolidationRun
    from reasoningbank.ai.llm import NoLLM

    # runs that on-demand consolidation queued while the record leg wrote (no worker serves the bench)
    ConsolidationRun.objects.filter(
        project=project, status__in=[ConsolidationRun.STATUS_QUEUED, ConsolidationRun.STATUS_WAITING]
    ).update(status=ConsolidationRun.STATUS_SKIPPED)
    out: dict[str, Any] = {}
    log("  consolidation: settling run (no LLM; the first run probes every memory of the project) …")
    out["settle_no_llm"] = run_once(project, NoLLM())
    log(f"    {out['settle_no_llm']['total_seconds']} s")
    for label, llm in (("incremental_no_llm", NoLLM()), ("incremental_stub_llm", FakeLLM(0.0))):
        added = memories_add_new(project, fraction, sigma)
        log(f"  consolidation: {added} new memories, one run ({label}) …")
        t0 = time.perf_counter()
        run = run_once(project, llm)
        run["new_memories"] = added
        run["wall_seconds"] = round(time.perf_counter() - t0, 2)
        run["loadavg_after"] = os.getloadavg()
        out[label] = run
        log(f"    {run['total_seconds']} s, phases {run['phase_durations']}; load average {os.getloadavg()[0]:.2f}")
    return out


def rollup_run(org: Any, events: int) -> dict[str, Any]:
    """The daily rollup task as the schedule runs it, after ``events`` usage events older than 30 days."""
    from memories.tasks import signals_rollup_daily

    added = signals_add_old(org, events)
    before = os.getloadavg()
    t0 = time.perf_counter()
    result = signals_rollup_daily()
    seconds = time.perf_counter() - t0
    log(f"  daily rollup: {seconds:.1f} s for {added} old events ({result}); load average {os.getloadavg()[0]:.2f}")
    return {"seconds": round(seconds, 2), "old_events": added, "result": result, "loadavg_before": before}


def export_run(org_slug: str, out_dir: Path) -> dict[str, Any]:
    """``manage.py export_memories <org>`` as the operator runs it (a child process: wall, CPU, peak RSS;
    ``transfer.py``'s measurement)."""
    saved = dict(os.environ)
    import transfer  # sets bench defaults in the environment at import: put ours back

    os.environ.clear()
    os.environ.update(saved)
    path = out_dir / f"scale-export-{org_slug}.jsonl"
    measured = transfer.run_measured(["export_memories", org_slug, "-o", str(path)])
    measured["file_mib"] = round(path.stat().st_size / 2**20, 1)
    measured["lines"] = sum(1 for _ in path.open(encoding="utf-8"))
    path.unlink()
    log(f"  export: {measured['seconds']} s, {measured['lines']:,} lines, peak RSS {measured['peak_rss_mib']} MiB")
    return measured
