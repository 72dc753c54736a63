"""One organization cannot stall the worker for the others (docs/security/worker-fairness.md), against
the real service: ``scripts/run.sh`` with its worker and its webhook worker, the stub LLM.

Organization "flood" subscribes four slow-loris receivers (loopback https servers that answer the TLS
handshake one byte every 1.5 s and never finish it) to ``memory.created`` and records memories as fast as
it can: every memory is four deliveries, each of which takes the whole WEBHOOK_TIMEOUT (5 s). Meanwhile
organization "calm" hands in a session: it is distilled within a small multiple of the time it takes on a
quiet service, because deliveries run on the webhook worker's own queue and never in the slots the
distillation needs. Before, the deliveries ran in those slots: four such receivers made another
organization's distillation take 179 s instead of 1.1 s.

The receivers also show the two other defences from outside: no attempt outlives its deadline by more
than a little, and the flooding organization never has more than WEBHOOK_ORG_CONCURRENCY deliveries in
flight. The times measured are written to artifacts/e2e/worker-fairness.txt.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.harness import ARTIFACTS, Service, completed_text, rest, token_from, unique
from tests.e2e.llm_stub import LLMStub
from tests.slow_receiver import SlowReceiver

RECEIVERS = 4
MEMORIES = 15  # × RECEIVERS deliveries of 5 s each: 150 s of work for the 2 slots of the worker, before
WEBHOOK_TIMEOUT = 5.0  # the default
WEBHOOK_ORG_CONCURRENCY = 2  # the default
WARM_UP_ROUNDS = 2  # each worker process loads the embedder at its first distillation
BASELINE_ROUNDS = 3
DISTILL_WITHIN = 120.0  # a session that is not done by then has failed the test anyway


def bound(baseline: float) -> float:
    """Generous on purpose (a loaded machine, a second service beside this one): a few times the quiet
    time, never less than 30 s — and still far below what the flood would make it wait (over 100 s)."""
    return max(30.0, 5 * baseline)


@pytest.fixture(scope="module")
def fair_service(llm_stub: LLMStub) -> Iterator[Service]:
    """A service of its own: loopback receivers need WEBHOOKS_ALLOW_PRIVATE_ADDRESSES, which the shared
    one must not have."""
    data_dir = Path(tempfile.mkdtemp(prefix="rb-e2e-fair-"))
    svc = Service(
        data_dir=data_dir, llm_base_url=llm_stub.base_url, extra_env={"WEBHOOKS_ALLOW_PRIVATE_ADDRESSES": "true"}
    )
    try:
        svc.start()
        yield svc
    finally:
        svc.kill_everything()
        if svc.log_path.exists():
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(svc.log_path, ARTIFACTS / "worker-fairness-run.log")
        shutil.rmtree(data_dir, ignore_errors=True)


def setup_org(service: Service, slug: str, project: str, *scopes: str) -> str:
    for args in (("create_org", slug, "--plan", "pro"), ("create_project", slug, project)):
        result = service.manage(*args)
        assert result.returncode == 0, completed_text(result)
    token_args = ["create_token", slug, "--label", "e2e"]
    if scopes:
        token_args += ["--scopes", ",".join(scopes)]
    result = service.manage(*token_args)
    assert result.returncode == 0, completed_text(result)
    return token_from(result.stdout)


def distill_seconds(service: Service, token: str, project: str) -> float:
    """Hand in a session and wait for it to be distilled: the seconds from the request to ``done``."""
    marker = unique()
    with rest(service, token) as http:
        started = time.monotonic()
        answer = http.post(
            "/api/v1/sessions",
            json={
                "session_id": marker,
                "outcome": "success",
                "project": project,
                "trace": f"user: the checkout test is flaky\nassistant: ran it alone ({marker}), found the shared "
                "fixture, isolated it; the suite is green.",
            },
        )
        assert answer.status_code in (200, 201, 202), answer.text
        status = ""
        while time.monotonic() - started < DISTILL_WITHIN:
            status = http.get(f"/api/v1/sessions/{marker}").json()["status"]
            if status in ("done", "failed"):
                break
            time.sleep(0.2)
        elapsed = time.monotonic() - started
    assert status == "done", f"session {marker} is {status!r} after {elapsed:.0f}s\n{service.log_tail(30)}"
    return elapsed


def most_open_at_once(receivers: list[SlowReceiver]) -> int:
    events: list[tuple[float, int]] = []
    for receiver in receivers:
        for conn in receiver.connections:
            events.append((conn.opened, 1))
            events.append((conn.closed if conn.closed is not None else float("inf"), -1))
    most = now = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        now += step
        most = max(most, now)
    return most


def flood(service: Service, token: str, receivers: list[SlowReceiver]) -> None:
    with rest(service, token) as http:
        for receiver in receivers:
            made = http.post("/api/v1/webhooks", json={"url": receiver.url(), "events": ["memory.created"]})
            assert made.status_code == 201, made.text
        for n in range(MEMORIES):
            marker = unique()
            recorded = http.post(
                "/api/v1/memories",
                json={
                    "project": "noisy",
                    "title": f"Retry the upload {n} with backoff {marker}",
                    "description": f"When the upload service answers 503 ({marker})",
                    "content": f"Retry with exponential backoff starting at {n + 1} s; give up after five tries.",
                    "outcome": "success",
                },
            )
            assert recorded.status_code in (200, 201), recorded.text


def test_another_organizations_session_distils_in_its_usual_time_while_one_floods_slow_webhooks(
    fair_service: Service,
) -> None:
    service = fair_service
    calm = setup_org(service, "calm", "web")
    noisy = setup_org(service, "flood", "noisy", "memories:read", "memories:write", "admin")

    for _ in range(WARM_UP_ROUNDS):
        distill_seconds(service, calm, "web")
    quiet = [distill_seconds(service, calm, "web") for _ in range(BASELINE_ROUNDS)]
    baseline = statistics.median(quiet)

    receivers = [SlowReceiver(mode="tls", interval=1.5, max_seconds=120) for _ in range(RECEIVERS)]
    for receiver in receivers:
        receiver.start()
    try:
        flood(service, noisy, receivers)
        # the deliveries are queued and the first attempts are on the wire
        deadline = time.monotonic() + 30
        while not any(r.opened() for r in receivers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert any(r.opened() for r in receivers), f"no delivery reached a receiver\n{service.log_tail(30)}"
        flooded = distill_seconds(service, calm, "web")
        time.sleep(2 * WEBHOOK_TIMEOUT)  # a few more attempts, for the receivers' view
    finally:
        for receiver in receivers:
            receiver.stop()

    deliveries = service.sql(
        "SELECT count(*), count(*) FILTER (WHERE attempts > 0) FROM webhooks_webhookdelivery d "
        "JOIN accounts_organization o ON o.id = d.organization_id WHERE o.slug = 'flood'"
    )[0]
    durations = [d for r in receivers for d in r.durations()]
    report = (
        f"calm's distillation, quiet service: median {baseline:.1f} s of {', '.join(f'{q:.1f}' for q in quiet)}\n"
        f"calm's distillation while flood's deliveries hang: {flooded:.1f} s (bound {bound(baseline):.0f} s)\n"
        f"flood: {MEMORIES} memories x {RECEIVERS} slow receivers = {deliveries[0]} deliveries, "
        f"{deliveries[1]} attempted so far; connections {sum(r.opened() for r in receivers)}, "
        f"longest {max(durations, default=0):.1f} s, most open at once {most_open_at_once(receivers)}\n"
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "worker-fairness.txt").write_text(report)
    print(report)

    assert flooded <= bound(baseline), report
    assert deliveries[0] == MEMORIES * RECEIVERS, report  # every event's deliveries exist: none lost
    # each attempt is cut at its deadline (plus a little: the close, a loaded machine)
    assert durations and max(durations) <= WEBHOOK_TIMEOUT + 4, report
    # the flooding organization never had more than its cap in flight, across all its receivers
    assert most_open_at_once(receivers) <= WEBHOOK_ORG_CONCURRENCY, report


def test_the_webhook_worker_beats_and_readyz_reports_it_apart(fair_service: Service) -> None:
    deadline = time.monotonic() + 90  # its processes stamp their heartbeat about every 30 s
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = httpx2.get(f"{fair_service.url}/readyz/worker", timeout=10).json()
        if body.get("webhook_worker", {}).get("status") == "ok":
            break
        time.sleep(2)
    assert body["webhook_worker"]["status"] == "ok", body
    ready = httpx2.get(f"{fair_service.url}/readyz", timeout=10)
    assert ready.status_code == 200 and ready.json()["webhook_worker"]["status"] == "ok"
