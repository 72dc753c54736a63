"""Stopping run.sh stops everything it started (web, worker, the embedded PostgreSQL), and a second start
on the same data directory has everything back (docs/operations.md#runsh-supervises-what-it-starts). Runs
last: it replaces the running service."""

from __future__ import annotations

import signal

import anyio
import pytest

from tests.e2e.conftest import Setup
from tests.e2e.harness import Service, call, describe, mcp_client, rest, unique


@pytest.fixture(scope="module")
def recorded_before_stop(service: Service, acme: Setup) -> dict[str, str]:
    async def record() -> dict[str, str]:
        marker = unique()
        async with mcp_client(service, acme.project_token, "legacy") as client:
            result = await call(
                client,
                "memory_record",
                {
                    "title": f"Survives a restart {marker}",
                    "description": "Written before the service stopped",
                    "content": "Data in RB_DATA_DIR outlives the processes.",
                    "outcome": "success",
                    "tags": ["restart"],
                },
            )
        return {"id": result["id"], "marker": marker}

    return anyio.run(record)


def test_ctrl_c_stops_the_web_server_the_worker_and_the_database(
    service: Service, recorded_before_stop: dict[str, str]
) -> None:
    # Ctrl-C in run.sh's terminal. run.sh gives web and worker 20 s, then stops PostgreSQL; on a loaded
    # machine the Python start-ups around that take seconds more
    left = service.stop(signal.SIGINT, group=True, timeout=90)
    assert service.proc is not None and service.proc.returncode is not None, (
        f"run.sh did not exit on Ctrl-C\n{service.log_tail(30)}"
    )
    assert not left, f"still running after Ctrl-C: {describe(left)}\n{service.log_tail(30)}"


def test_a_second_start_on_the_same_data_has_the_memories_and_the_token(
    service: Service, acme: Setup, recorded_before_stop: dict[str, str]
) -> None:
    if service.proc is not None and service.proc.poll() is None:
        service.kill_everything()  # the stop test failed to stop it; a user would have killed it
    service.start()
    memory_id, marker = recorded_before_stop["id"], recorded_before_stop["marker"]

    async def search() -> list[str]:
        async with mcp_client(service, acme.project_token, "2026-07-28") as client:
            found = await call(
                client, "memory_search", {"query": f"survives a restart {marker}", "min_confidence": 0.0}
            )
        return [m["id"] for m in found["memories"]]

    assert memory_id in anyio.run(search)
    with rest(service, acme.org_token) as http:
        assert http.get(f"/api/v1/memories/{memory_id}").json()["title"] == f"Survives a restart {marker}"


def test_sigterm_to_run_sh_stops_everything(service: Service) -> None:
    left = service.stop(signal.SIGTERM, group=False)  # `kill <pid of run.sh>`, a service manager's stop
    assert service.proc is not None and service.proc.returncode is not None, "run.sh did not exit on SIGTERM"
    assert not left, f"still running after SIGTERM to run.sh: {describe(left)}\n{service.log_tail(30)}"
