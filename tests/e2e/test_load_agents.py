"""Fifty agents on the official MCP SDK client recording and searching for a minute on a Teams-plan
project, whose automatic (on-demand) consolidation keeps running underneath: not one failed call,
not one failed consolidation run, not one usage signal dropped (docs/concurrency.md).

The counts come from outside: the agents' own results, the runs' rows in the database, and the
service's /metrics (usage signals written and dropped) checked against the signal rows stored.
Latencies are not asserted here (bench/load.py reports them)."""

from __future__ import annotations

import time

import anyio
import httpx2
import pytest

from tests.e2e.agent_load import agents_run, metric_value
from tests.e2e.conftest import manage_ok
from tests.e2e.harness import Service, token_from, unique

AGENTS = 50
SECONDS = 60
SETTLE_WITHIN = 240  # the runs started during the load finish, the written-behind signals land

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(SECONDS + SETTLE_WITHIN + 120)]


def _usage_metrics(service: Service) -> tuple[float, float]:
    text = httpx2.get(f"{service.url}/metrics", timeout=30).text
    return (
        metric_value(text, "reasoningbank_usage_signals_total", outcome="written"),
        metric_value(text, "reasoningbank_usage_signals_total", outcome="dropped"),
    )


def _stored_usage_signals(service: Service) -> int:
    return int(service.sql("SELECT count(*) FROM memories_memorysignal WHERE type = 'usage'")[0][0])


def _runs(service: Service, org: str) -> list[tuple[str, str, list[str]]]:
    return [
        (run_id, status, errors)
        for run_id, status, errors in service.sql(
            "SELECT r.id, r.status, r.errors FROM consolidation_consolidationrun r "
            "JOIN accounts_organization o ON o.id = r.organization_id WHERE o.slug = %s ORDER BY r.created_at",
            (org,),
        )
    ]


async def test_fifty_agents_for_a_minute_on_a_teams_project_lose_no_call_no_run_and_no_signal(
    service: Service,
) -> None:
    org = unique("load").lower()
    manage_ok(service, "create_org", org, "--plan", "teams", "--owner-email", f"{org}@example.com")
    manage_ok(service, "create_project", org, "agents")
    token = token_from(manage_ok(service, "create_token", org, "--label", "agents", "--project", "agents"))
    written_before, dropped_before = _usage_metrics(service)
    stored_before = _stored_usage_signals(service)
    log_before = len(service.log_text())

    result = await agents_run(service.url, token, agents=AGENTS, seconds=SECONDS, marker=unique())

    # the load is over: wait for the runs it triggered and for the signals written behind the searches
    deadline = time.monotonic() + SETTLE_WITHIN
    stored_seen = -1
    while time.monotonic() < deadline:
        stored_now = _stored_usage_signals(service)
        active = [r for r in _runs(service, org) if r[1] in ("queued", "running")]
        if stored_now == stored_seen and not active:
            break
        stored_seen = stored_now
        await anyio.sleep(2)
    runs = _runs(service, org)
    written, dropped = _usage_metrics(service)
    stored = _stored_usage_signals(service) - stored_before
    log = service.log_text()[log_before:]

    searches, records = result.count("memory_search"), result.count("memory_record")
    summary = f"{result.count()} calls ({searches} searches, {records} records), {len(runs)} runs"
    assert not result.failures, f"{len(result.failures)} failed of {summary}:\n" + "\n".join(result.failures[:30])
    assert searches >= AGENTS * 2 and records >= AGENTS, summary  # every agent really worked
    failed_runs = [r for r in runs if r[1] not in ("completed", "skipped")]
    assert not failed_runs, f"{len(failed_runs)} of {len(runs)} consolidation runs did not complete: {failed_runs}"
    assert sum(1 for r in runs if r[1] == "completed") >= 2, f"consolidation hardly ran under the load: {runs}"
    assert dropped - dropped_before == 0, f"{dropped - dropped_before} usage signals dropped\n{service.log_tail()}"
    assert written - written_before == stored > 0, (written - written_before, stored)
    assert "deadlock detected" not in log, [line for line in log.splitlines() if "deadlock detected" in line][:5]
