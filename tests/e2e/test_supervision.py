"""run.sh supervises what it started (docs/operations.md): a killed worker group, a worker process
killed in the middle of a consolidation run, and a killed PostgreSQL postmaster each come back
without taking the rest down — the web keeps answering, the run the dead worker held is failed
within a minute so its project may run again, and the API answers again once the database is back.

Before, the first made run.sh stop web and PostgreSQL too, the second left the run "running" (new
runs of that project got 409 for 17 minutes), and nothing restarted the third.

Runs after the other modules (it kills the service's processes) and before stop-and-restart, and
leaves the service running and healthy.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.conftest import Setup, manage_ok
from tests.e2e.harness import Service, describe, pids_connected_to, postmaster_pid, rest, unique
from tests.e2e.llm_stub import LLMStub

BACK_WITHIN = 60.0  # seconds for a killed part to be back (one restart after 1 s, plus its start-up)
RUN_FAILED_WITHIN = 60.0  # docs/operations.md#work-whose-worker-died-is-released-within-a-minute
RUNS = "/api/v1/consolidation/runs"


def run_pids(service: Service) -> tuple[int, int]:
    """(worker group, web group) as run.sh last wrote them."""
    worker, web, _ = (Path(service.data_dir) / "run.pids").read_text().split()
    return int(worker), int(web)


def webhook_worker_pid(service: Service) -> int:
    """The webhook worker's group: run.pids' third line."""
    return int((Path(service.data_dir) / "run.pids").read_text().split()[2])


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def log_since(service: Service, offset: int) -> str:
    return service.log_text()[offset:]


def wait_for(what: str, check: Any, timeout: float, service: Service, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        assert service.proc is not None and service.proc.poll() is None, f"run.sh exited\n{service.log_tail()}"
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout:.0f}s\n{service.log_tail(40)}")


def run_status(http: httpx2.Client, run_id: str) -> dict[str, Any]:
    response = http.get(f"{RUNS}/{run_id}")
    assert response.status_code == 200, response.text[:500]
    return dict(response.json())


def consolidate(http: httpx2.Client, slug: str) -> httpx2.Response:
    return http.post(RUNS, json={"project_id": slug, "force": True})


def test_a_killed_worker_group_is_restarted_while_the_web_keeps_answering(service: Service, acme: Setup) -> None:
    assert service.proc is not None and service.proc.poll() is None
    worker, web = run_pids(service)
    postmaster = postmaster_pid(service.data_dir)
    offset = len(service.log_text())

    os.killpg(worker, signal.SIGKILL)  # the whole qcluster: its leader, sentinel, pusher, monitor, workers

    unanswered: list[str] = []

    def worker_back() -> int:
        try:
            response = httpx2.get(f"{service.url}/healthz", timeout=5)
            if response.status_code != 200:
                unanswered.append(f"{response.status_code} {response.text[:100]}")
        except httpx2.HTTPError as exc:
            unanswered.append(repr(exc))
        new_worker, _ = run_pids(service)
        return new_worker if new_worker != worker and "qcluster" in cmdline(new_worker) else 0

    new_worker = wait_for("a new worker", worker_back, BACK_WITHIN, service, interval=0.2)
    assert unanswered == [], f"the web stopped answering while the worker was down: {unanswered[:5]}"
    assert run_pids(service)[1] == web and postmaster_pid(service.data_dir) == postmaster, "web or database restarted"
    log = log_since(service, offset)
    assert "==> worker killed by SIGKILL" in log and "restarting it in 1s" in log, log[-3000:]
    assert "==> stopping" not in log

    # the new worker works: a consolidation of an empty project is picked up and completes
    slug = f"sup-{unique().lower()}"
    manage_ok(service, "create_project", "acme", slug)
    with rest(service, acme.org_token) as http:
        response = consolidate(http, slug)
        assert response.status_code == 202, response.text[:500]
        run_id = response.json()["run_id"]
        done = wait_for("the run completed", lambda: run_status(http, run_id)["status"] == "completed", 90, service)
    assert done and "qcluster" in cmdline(new_worker)


def test_a_killed_webhook_worker_group_is_restarted_and_nothing_else_is(service: Service) -> None:
    worker, web = run_pids(service)
    webhooks = webhook_worker_pid(service)
    assert "qcluster" in cmdline(webhooks)
    offset = len(service.log_text())

    os.killpg(webhooks, signal.SIGKILL)

    new = wait_for(
        "a new webhook worker",
        lambda: (pid := webhook_worker_pid(service)) != webhooks and "qcluster" in cmdline(pid) and pid,
        BACK_WITHIN,
        service,
        interval=0.2,
    )
    environ = Path(f"/proc/{new}/environ").read_bytes().split(b"\0")
    assert b"Q_CLUSTER_NAME=reasoningbank-webhooks" in environ  # the webhook worker again, on its queue
    assert run_pids(service) == (worker, web), "web or worker restarted for the webhook worker"
    log = log_since(service, offset)
    assert "==> webhooks killed by SIGKILL" in log and "restarting it in 1s" in log, log[-3000:]


# one strategy said three ways (as in test_mcp_agent): the judge reads their pairs, so the run calls the LLM
NEAR_DUPLICATES = [
    ("Wrap database calls with a timeout", "so slow queries cannot hang the request"),
    ("Put a deadline on every SQL query", "because a stuck statement blocks the worker"),
    ("Cancel database queries that run too long", "so one slow statement cannot stall the service"),
]


@pytest.fixture
def held_judge(llm_stub: LLMStub) -> Any:
    """The LLM answers no batched judge call until the test is done: a run stays busy in its judge phase."""
    llm_stub.hold("judge_batch")
    yield llm_stub
    llm_stub.release("judge_batch")


def test_a_run_whose_worker_process_is_killed_is_failed_within_a_minute_and_the_project_runs_again(
    service: Service, acme: Setup, held_judge: LLMStub
) -> None:
    marker = unique()
    slug = f"sup-{marker.lower()}"
    manage_ok(service, "create_project", "acme", slug)
    with rest(service, acme.org_token) as http:
        for title, tail in NEAR_DUPLICATES:
            response = http.post("/api/v1/memories", json={
                "title": f"{title} {marker}",
                "description": "When Go services call the database",
                "content": f"Always wrap database queries in Go with context.WithTimeout {tail}",
                "outcome": "success",
                "tags": ["go", "database"],
                "project": slug,
            })  # fmt: skip
            assert response.status_code == 201, response.text[:500]
        response = consolidate(http, slug)
        assert response.status_code == 202, response.text[:500]
        run_id = response.json()["run_id"]
        wait_for(
            "the run asked the LLM (and waits for it)",
            lambda: any(marker in call.prompt for call in held_judge.calls_of("judge_batch")),
            90,
            service,
        )
        # the busy worker process: the one of the service waiting on the LLM stub
        busy = [pid for pid in pids_connected_to(held_judge.port) if "qcluster" in cmdline(pid)]
        assert len(busy) == 1, f"not one worker process waits on the LLM: {busy}"
        (pid,) = busy
        assert run_status(http, run_id)["status"] == "running"

        os.kill(pid, signal.SIGKILL)  # the busy worker process only: django-q2 starts another one
        killed_at = time.monotonic()

        failed = wait_for(
            "the run failed",
            lambda: (r := run_status(http, run_id))["status"] == "failed" and r,
            RUN_FAILED_WITHIN,
            service,
        )
        elapsed = time.monotonic() - killed_at
        assert "worker" in " ".join(failed["errors"]), failed["errors"]
        assert elapsed <= RUN_FAILED_WITHIN

        held_judge.release("judge_batch")
        again = consolidate(http, slug)
        assert again.status_code == 202, f"the project is still blocked: {again.status_code} {again.text[:500]}"
        new_run = again.json()["run_id"]
        finished = wait_for(
            "the new run finished",
            lambda: (r := run_status(http, new_run))["status"] in ("completed", "failed") and r,
            120,
            service,
        )
        assert finished["status"] == "completed", finished["errors"]
    health = httpx2.get(f"{service.url}/readyz", timeout=10).json()
    assert health["running"]["status"] == "ok", health["running"]


def test_web_stays_ready_while_a_worker_killed_mid_session_is_restarted(
    service: Service, acme: Setup, llm_stub: LLMStub
) -> None:
    """The red team's case: the worker group killed under load left its session "running" for a dead
    process until the new worker's sweep, and /readyz answered 503 for about 10 s — a load balancer would
    have dropped a healthy web. Now /readyz answers 200 throughout; /readyz/worker carries the worker's state.
    After the run test: the distillation leaves a worker connected to the LLM stub, which that test counts."""
    marker = unique()
    llm_stub.hold("distill")
    try:
        with rest(service, acme.project_token) as http:
            submitted = http.post("/api/v1/sessions", json={
                "session_id": marker, "outcome": "success",
                "trace": f"user: the cache test is flaky ({marker})\nassistant: cleared the shared cache; green.",
            })  # fmt: skip
            assert submitted.status_code in (200, 201, 202), submitted.text[:500]
            wait_for(
                "the distillation asked the LLM (and waits for it)",
                lambda: any(marker in call.prompt for call in llm_stub.calls_of("distill")),
                90,
                service,
            )
            worker, _ = run_pids(service)
            os.killpg(worker, signal.SIGKILL)
            statuses: list[int] = []
            seen_background: set[str] = set()
            until = time.monotonic() + 20  # the restart (1 s), the new worker's sweep, the 10 s cache
            while time.monotonic() < until:
                ready = httpx2.get(f"{service.url}/readyz", timeout=10)
                statuses.append(ready.status_code)
                seen_background.update(ready.json()["background"]["failing"])
                time.sleep(0.2)
            assert set(statuses) == {200}, f"/readyz was not 200 throughout: {statuses}"
            llm_stub.release("distill")
            done = wait_for(
                "the session distilled by the new worker",
                lambda: http.get(f"/api/v1/sessions/{marker}").json()["status"] == "done",
                120,
                service,
            )
            assert done
        # once the sweep queued the session again and it ran, the background is whole again
        worker_ready = wait_for(
            "/readyz/worker ok",
            lambda: httpx2.get(f"{service.url}/readyz/worker", timeout=10).status_code == 200,
            BACK_WITHIN,
            service,
        )
        assert worker_ready, seen_background
    finally:
        llm_stub.release("distill")


def test_a_killed_postgresql_is_started_again_and_the_api_answers_again(service: Service, acme: Setup) -> None:
    postmaster = postmaster_pid(service.data_dir)
    assert postmaster is not None
    worker, web = run_pids(service)
    offset = len(service.log_text())

    os.kill(postmaster, signal.SIGKILL)

    def answers() -> bool:
        with rest(service, acme.org_token) as http:
            try:
                return http.get("/api/v1/memories", params={"page_size": 1}).status_code == 200
            except httpx2.HTTPError:
                return False

    wait_for("the API answering again", answers, BACK_WITHIN, service)
    restarted = postmaster_pid(service.data_dir)
    assert restarted is not None and restarted != postmaster
    log = log_since(service, offset)
    assert "==> postgres stopped" in log and "restarting it in 1s" in log, log[-3000:]
    assert "embedded PostgreSQL in" in log and "started (pid" in log
    assert run_pids(service) == (worker, web), "web and worker were not restarted for a database restart"
    ready = wait_for(
        "/readyz ok", lambda: httpx2.get(f"{service.url}/readyz", timeout=10).status_code == 200, BACK_WITHIN, service
    )
    assert ready


def test_a_process_that_keeps_dying_at_once_makes_run_sh_give_up_and_stop_everything(service: Service) -> None:
    """No endless restart loop: past RB_RESTART_MAX_FAST_FAILURES deaths in a row soon after a start,
    run.sh says so and stops everything (exit 1). Restarted with a limit of 1 to keep it short, and
    started again as the suite had it afterwards."""
    left = service.stop(signal.SIGTERM, group=False)
    assert not left, f"still running after SIGTERM: {describe(left)}"
    service.extra_env = {"RB_RESTART_MAX_FAST_FAILURES": "1"}
    try:
        service.start()
        offset = len(service.log_text())
        _, web = run_pids(service)
        os.killpg(web, signal.SIGKILL)  # a first death: restarted after 1 s
        restarted = wait_for(
            "web restarted",
            lambda: (pid := run_pids_or_none(service)[1]) not in (None, web) and pid,
            BACK_WITHIN,
            service,
        )
        # a second, within 60 s of that start: one more than allowed. run.pids names a group only once it
        # exists (a kill right after the restart must not miss a process still starting)
        os.killpg(restarted, signal.SIGKILL)
        assert service.proc is not None
        service.proc.wait(60)
        assert service.proc.returncode == 1, service.log_tail(20)
        log = log_since(service, offset)
        assert "==> web killed by SIGKILL after" in log and "restarting it in 1s" in log
        assert "2 deaths in a row within 60s of a start, more than RB_RESTART_MAX_FAST_FAILURES=1; giving up" in log
        assert log.rstrip().endswith("==> stopped"), log[-2000:]
        left = service.stop(signal.SIGTERM, group=False)  # nothing to stop: only waits for stragglers
        assert not left, f"left running after run.sh gave up: {describe(left)}"
    finally:
        service.extra_env = {}
        if service.proc is not None and service.proc.poll() is None:
            service.kill_everything()
        service.start()


def run_pids_or_none(service: Service) -> tuple[int | None, int | None]:
    try:
        return run_pids(service)
    except (OSError, ValueError):
        return None, None
