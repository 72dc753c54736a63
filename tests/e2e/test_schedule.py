"""The worker's schedule ticks with every scheduled task succeeding, /readyz says so, and the worker
keeps pulling work afterwards (its pusher once died at the first tick on a pooled connection shared
across forks: docs/decisions.md#django-q2-on-the-orm-broker-not-celery-and-redis); the heartbeat and the
stale-queue check are in /readyz (docs/observability.md#health)."""

from __future__ import annotations

import base64
import pickle
import time
from typing import Any

import httpx2
import pytest

from reasoningbank.schedules import schedule_specs
from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, mcp_client, unique
from tests.e2e.test_mcp_agent import submit_and_wait_for_distillation

TICK_WITHIN = 150  # django-q2's scheduler runs every ~30 s; the tasks themselves are quick here


def _result(raw: Any) -> str:
    """A failed task's stored result is "<error> : <traceback>": the error is what a reader needs."""
    try:
        text = str(pickle.loads(base64.b64decode(raw)))
    except Exception:
        text = str(raw)
    return text.split(" : Traceback", 1)[0][:500]


def test_every_scheduled_task_runs_and_succeeds_and_the_worker_survives_the_tick(service: Service) -> None:
    names = sorted(spec.name for spec in schedule_specs())
    assert sorted(r[0] for r in service.sql("SELECT name FROM django_q_schedule WHERE name LIKE 'rb:%%'")) == names
    # make every schedule due now, as if its interval had passed
    since = service.sql(
        "UPDATE django_q_schedule SET next_run = now() - interval '1 second' WHERE name LIKE 'rb:%%' RETURNING now()"
    )[0][0]
    deadline = time.monotonic() + TICK_WITHIN
    done: dict[str, bool] = {}
    while time.monotonic() < deadline:
        rows = service.sql(
            'SELECT "group", success, result FROM django_q_task WHERE "group" LIKE %s AND started >= %s',
            ("rb:%", since),
        )
        failures = {group: _result(result) for group, success, result in rows if not success}
        assert not failures, f"scheduled tasks failed: {failures}\n{service.log_tail()}"
        assert not service.worker_crash_lines(), "the worker crashed:\n" + "\n".join(service.worker_crash_lines())
        done = {group: True for group, success, _ in rows if success}
        if set(done) >= set(names):
            break
        time.sleep(2)
    assert set(done) >= set(names), f"within {TICK_WITHIN}s only {sorted(done)} of {names} ran\n{service.log_tail()}"
    assert {"qcluster"} <= {p.kind for p in service.running()}
    assert not service.worker_crash_lines(), "\n".join(service.worker_crash_lines())


def test_readyz_names_the_worker_alive_the_queue_moving_and_the_llm_after_the_tick(service: Service) -> None:
    """The heartbeat and stale-queue parts of /readyz, as a load balancer or a user sees them."""
    deadline = time.monotonic() + 60  # the heartbeat runs every minute; /readyz may cache briefly
    health: dict[str, Any] = {}
    while time.monotonic() < deadline:
        health = httpx2.get(f"{service.url}/readyz", timeout=10).json()
        if (health.get("worker") or {}).get("status") == "ok":
            break
        time.sleep(2)
    assert (health.get("worker") or {}).get("status") == "ok", health
    assert (health.get("queue") or {}).get("status") == "ok", health
    assert (health.get("llm") or {}).get("provider") == "openai", health


@pytest.mark.anyio
async def test_the_worker_still_distills_sessions_after_the_schedule_ticked(service: Service, acme: Setup) -> None:
    marker = unique()
    async with mcp_client(service, acme.project_token, "2026-07-28") as client:
        session = await submit_and_wait_for_distillation(client, marker, service)
    assert session["memories"], session
