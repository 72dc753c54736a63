"""Two machines on one PostgreSQL the project did not start (docs/operations.md#several-machines-on-one-database):
two ``scripts/run.sh``, each with its own data directory, port, web and worker, started at the same time,
with ``DATABASE_URL`` over TCP to a standalone server (``tests/pg_servers.py``), directly and through
PgBouncer in transaction pooling with fewer server connections than clients
(docs/operations.md#pgbouncer-in-transaction-pooling). Sessions handed in through both webs are each
distilled exactly once, by both workers between them; consolidation runs asked of both webs each run
once; every schedule fires once per period; the system page lists both workers' heartbeats; each
machine's /metrics counts its own processes' work and the two add up to the whole."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import pytest

from reasoningbank.schedules import schedule_specs
from tests.e2e.harness import ARTIFACTS, PYTHON, REPO, Service, completed_text, mcp_client, token_from, unique
from tests.e2e.llm_stub import LLMStub
from tests.e2e.test_mcp_agent import submit_and_wait_for_distillation
from tests.pg_servers import PgServer, database_create, free_port, server_start
from tests.pgbouncer import PgBouncer, pgbouncer_start

SECRET = "e2e-many-processes-" + "k" * 40  # one key for both machines (sessions and signed values agree)
OWNER, PASSWORD = "ops@example.com", "a-long-enough-passw0rd!"
# fewer server connections than the two machines' clients (two web pools, two workers' processes):
# every server connection is shared, so any state left on one would reach another client
POOL_SIZE = 4
SESSIONS_PER_WEB = 3
TICK_WITHIN = 150  # django-q2's scheduler runs every ~30 s on each worker


@dataclass
class Machines:
    server: PgServer
    bouncer: PgBouncer | None
    database_url: str
    a: Service
    b: Service
    stub: LLMStub
    token: str = ""
    org_token: str = ""

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Straight to the server, beside the service (not through the pooler)."""
        with psycopg.connect(self.server.url("rb"), autocommit=True) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else []

    def manage(self, service: Service, *args: str, stdin: str = "") -> str:
        result = subprocess.run(
            [str(PYTHON), "manage.py", *args],
            cwd=REPO,
            env=service.env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{completed_text(result)}"
        return result.stdout


def _machine(stub: LLMStub, root: Path, name: str, database_url: str, pooler: str) -> Service:
    extra = {"DATABASE_URL": database_url, "SECRET_KEY": SECRET, "Q_WORKERS": "1", "DB_POOL_MIN_SIZE": "1"}
    if pooler:
        extra["DATABASE_POOLER"] = pooler
    (root / name).mkdir()
    return Service(data_dir=root / name, llm_base_url=stub.base_url, extra_env=extra)


def _start_together(*services: Service) -> None:
    """Both run.sh at once: both prepare the same database at the same time (migrations, schedules)."""
    for service in services:
        service.start(wait=False)
    for service in services:
        service.wait_healthy(300)


@pytest.fixture(scope="module", params=["direct", "pgbouncer"])
def machines(request: pytest.FixtureRequest) -> Iterator[Machines]:
    root = Path(tempfile.mkdtemp(prefix="rb-e2e-many-"))
    stub = LLMStub()
    stub.start()
    server = server_start(root / "server")
    bouncer: PgBouncer | None = None
    services: list[Service] = []
    try:
        database_url = database_create(server, "rb")
        if request.param == "pgbouncer":
            bouncer = pgbouncer_start(server, root / "pgbouncer", pool_size=POOL_SIZE)
            database_url = bouncer.url("rb")
        pooler = "transaction" if bouncer else ""
        services = [_machine(stub, root, name, database_url, pooler) for name in ("machine-a", "machine-b")]
        while services[1].port == services[0].port:
            services[1].port = free_port()
        _start_together(*services)
        found = Machines(server, bouncer, database_url, services[0], services[1], stub)
        found.manage(
            found.a,
            "create_org",
            "acme",
            "--plan",
            "pro",
            "--owner-email",
            OWNER,
            "--password-stdin",
            stdin=PASSWORD + "\n",
        )
        found.manage(found.a, "create_project", "acme", "web-app")
        found.manage(found.b, "create_project", "acme", "api")
        found.org_token = token_from(found.manage(found.a, "create_token", "acme", "--label", "ops"))
        found.token = token_from(found.manage(found.b, "create_token", "acme", "--label", "ci", "--project", "web-app"))
        yield found
    finally:
        for service in services:
            service.kill_everything()
            if service.log_path.exists():  # kept apart: Service.keep_log names every machine's log run.log
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(service.log_path, ARTIFACTS / f"many-{request.param}-{service.data_dir.name}.log")
        if bouncer is not None:
            bouncer.stop()
        server.stop()
        stub.stop()
        shutil.rmtree(root, ignore_errors=True)


def _crash_lines(machines: Machines) -> list[str]:
    return machines.a.worker_crash_lines() + machines.b.worker_crash_lines()


def _logs(machines: Machines) -> str:
    tails = [machines.a.log_tail(40), machines.b.log_tail(40)]
    if machines.bouncer is not None:
        tails.append("----- pgbouncer -----\n" + machines.bouncer.log_tail())
    return "\n".join(tails)


def _qcluster_pids(service: Service) -> set[str]:
    """The pids of a machine's worker: qcluster and what it forked (sentinel, pusher, monitor, workers)."""
    return {str(p.pid) for p in service.running() if p.kind == "qcluster"}


@pytest.mark.anyio
async def test_sessions_handed_in_through_both_webs_are_each_distilled_exactly_once_by_the_two_workers(
    machines: Machines,
) -> None:
    markers: list[str] = []
    by_machine: Counter[str] = Counter()
    for _round in range(3):  # which worker pulls a task first is the queue's business: usually both in one round
        for service in (machines.a, machines.b):
            async with mcp_client(service, machines.token, "2026-07-28") as client:
                for _ in range(SESSIONS_PER_WEB):
                    marker = unique()
                    markers.append(marker)
                    session = await submit_and_wait_for_distillation(client, marker, service)
                    assert session["memories"], session
        # each session names the worker process that distilled it ("<host>/<pid>"), kept after it is done
        rows = machines.sql("SELECT worker FROM memories_agentsession WHERE external_id = ANY(%s)", (markers,))
        a, b = _qcluster_pids(machines.a), _qcluster_pids(machines.b)
        by_machine = Counter(
            "a" if pid in a else "b" if pid in b else pid for (worker,) in rows for pid in [worker.rpartition("/")[2]]
        )
        if by_machine["a"] and by_machine["b"]:
            break
    assert not _crash_lines(machines), "\n".join(_crash_lines(machines))

    distilled = Counter(
        marker
        for call in machines.stub.calls_of("distill")
        for marker in set(re.findall(r"E2E-[0-9a-f]{10}", call.prompt))
    )
    assert {marker: distilled[marker] for marker in markers} == dict.fromkeys(markers, 1), _logs(machines)
    statuses = machines.sql(
        "SELECT status, count(*) FROM memories_agentsession WHERE external_id = ANY(%s) GROUP BY status", (markers,)
    )
    assert statuses == [("done", len(markers))]
    assert set(by_machine) == {"a", "b"}, f"distilled by {dict(by_machine)} of {len(markers)} sessions"


def test_consolidation_runs_asked_of_both_webs_each_run_exactly_once(machines: Machines) -> None:
    """The same project asked of both webs at once: one run, the other asked is refused (one at a time per
    project); another project's run through the second web; each run executed by one worker, once."""

    def consolidate(service: Service, project: str) -> httpx2.Response:
        with httpx2.Client(
            base_url=service.url, headers={"Authorization": f"Bearer {machines.org_token}"}, timeout=60
        ) as http:
            return http.post("/api/v1/consolidation/runs", json={"project_id": project})

    answers: list[httpx2.Response] = []
    both = [
        threading.Thread(target=lambda s=s: answers.append(consolidate(s, "web-app"))) for s in (machines.a, machines.b)
    ]
    for thread in both:
        thread.start()
    for thread in both:
        thread.join()
    assert sorted(a.status_code for a in answers) == [202, 409], [a.text[:300] for a in answers]
    other = consolidate(machines.b, "api")
    assert other.status_code == 202, other.text[:300]
    run_ids = [a.json()["run_id"] for a in answers if a.status_code == 202] + [other.json()["run_id"]]

    deadline = time.monotonic() + 180
    rows: list[tuple[Any, ...]] = []
    while time.monotonic() < deadline:
        rows = machines.sql("SELECT id, status FROM consolidation_consolidationrun WHERE id = ANY(%s)", (run_ids,))
        if len(rows) == len(run_ids) and all(status in ("completed", "failed", "skipped") for _, status in rows):
            break
        time.sleep(1)
    assert sorted(status for _, status in rows) == ["completed", "completed"], f"{rows}\n{_logs(machines)}"
    tasks = machines.sql("SELECT count(*) FROM django_q_task WHERE func = 'consolidation.tasks.consolidation_run_task'")
    assert tasks == [(len(run_ids),)]


def test_every_schedule_fires_once_per_period_with_two_workers_each_running_the_scheduler(machines: Machines) -> None:
    names = sorted(spec.name for spec in schedule_specs())
    # started together, both machines created the schedules: each exists once
    assert (
        sorted(name for (name,) in machines.sql("SELECT name FROM django_q_schedule WHERE name LIKE 'rb:%%'")) == names
    )
    since = machines.sql(
        "UPDATE django_q_schedule SET next_run = now() - interval '1 second' WHERE name LIKE 'rb:%%' RETURNING now()"
    )[0][0]
    # every schedule due now: the first scheduler to tick fires them all and moves them a period on (a minute at
    # least); the second must then find none due. Watched until both workers' schedulers ran again after the
    # firing (their own heartbeats, stamped right after each scheduler run), well within the minute.
    deadline = time.monotonic() + TICK_WITHIN
    fired: dict[str, int] = {}
    while time.monotonic() < deadline:
        rows = machines.sql(
            'SELECT "group", count(*), max(started) FROM django_q_task WHERE "group" LIKE %s '
            'AND started >= %s GROUP BY "group"',
            ("rb:%", since),
        )
        fired = {group: count for group, count, _ in rows}
        if set(fired) >= set(names):
            last_fired = max(started for _, _, started in rows)
            beats = machines.sql(
                "SELECT count(*) FROM reasoningbank_workerheartbeat WHERE cluster LIKE 'reasoningbank@%%' "
                "AND beat_at > %s",
                (last_fired,),
            )[0][0]
            if beats >= 2:
                break
        time.sleep(1)
    queued = machines.sql("SELECT count(*) FROM django_q_ormq")[0][0]
    elapsed = machines.sql("SELECT extract(epoch FROM now() - %s)", (since,))[0][0]
    assert elapsed < 58, f"not settled within the minute ({elapsed:.0f}s): the one-minute schedules fire again now"
    assert fired == dict.fromkeys(names, 1), f"{fired} (still queued: {queued})\n{_logs(machines)}"


def _signed_in(service: Service) -> httpx2.Client:
    http = httpx2.Client(base_url=service.url, timeout=60, follow_redirects=True)
    page = http.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, page.text[:500]
    signed = http.post(
        "/accounts/login/",
        data={"login": OWNER, "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": f"{service.url}/accounts/login/"},
    )
    assert "/accounts/login/" not in str(signed.url), signed.text[:500]
    return http


def test_the_system_page_shows_each_machine_s_worker_alive_by_its_own_heartbeat(machines: Machines) -> None:
    deadline = time.monotonic() + TICK_WITHIN
    rows: list[str] = []
    http = _signed_in(machines.b)
    try:
        while time.monotonic() < deadline:
            body = http.get("/system/").text
            rows = [
                " ".join(re.sub(r"<[^>]+>", " ", row).split())
                for row in re.findall(r'<tr data-alive="true"[^>]*>(.*?)</tr>', body, re.S)
            ]
            if len(rows) >= 2:
                break
            time.sleep(2)
    finally:
        http.close()
    # one row per machine's qcluster: the sentinel process, a child of the group run.sh started
    sentinels = {str(p.pid) for s in (machines.a, machines.b) for p in s.running() if p.kind == "qcluster"}
    shown = {row.split()[0].rpartition("/")[2] for row in rows}
    assert len(rows) == 2 and shown <= sentinels, f"{rows} (qcluster pids {sorted(sentinels)})"


def _counter(text: str, name: str, **labels: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all(f'{key}="{value}"' in line for key, value in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_each_machine_s_metrics_count_its_own_processes_and_the_two_add_up_to_the_whole(machines: Machines) -> None:
    """Prometheus scrapes each machine's /metrics (docs/observability.md#metrics): the distillations each
    machine's worker made are counted there, and the sum over the machines is every LLM call made."""
    per_machine = [
        _counter(httpx2.get(f"{s.url}/metrics", timeout=30).text, "reasoningbank_llm_requests_total", purpose="distill")
        for s in (machines.a, machines.b)
    ]
    assert sum(per_machine) == pytest.approx(len(machines.stub.calls_of("distill")))
    assert all(count > 0 for count in per_machine), per_machine
