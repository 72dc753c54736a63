"""/readyz: this web process can serve — database, migrations — and the background work (worker and
webhook worker heartbeats, queue, running work) is reported apart, failing /readyz/worker but never
/readyz: a worker that is down or restarting must not take a healthy web out of a load balancer's
rotation. The LLM is reported, never fatal (docs/observability.md#health)."""

from datetime import timedelta
from types import SimpleNamespace
from unittest import mock

import pytest
from django.core.management import call_command
from django.db import OperationalError
from django.utils import timezone
from django_q.models import OrmQ, Schedule

from reasoningbank.models import WorkerHeartbeat
from reasoningbank.tasks import queue_probe
from system.selectors import health_cache_clear
from tests.factories import AgentSessionFactory, ConsolidationRunFactory


@pytest.fixture(autouse=True)
def _long_running(long_running_process: None) -> None:
    """Health read afresh, long after this process "started" (no grace), with no LLM."""


def just_booted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("system.selectors.process_booted_at", lambda: timezone.now() - timedelta(seconds=5))


def beat(seconds_ago: float, *, webhook_worker_ago: float = 10) -> None:
    """The worker's heartbeat, and the webhook worker's process's own (reasoningbank/worker_presence.py)."""
    WorkerHeartbeat.objects.update_or_create(
        cluster="reasoningbank", defaults={"beat_at": timezone.now() - timedelta(seconds=seconds_ago)}
    )
    WorkerHeartbeat.objects.update_or_create(
        cluster="reasoningbank-webhooks@host/42",
        defaults={"beat_at": timezone.now() - timedelta(seconds=webhook_worker_ago), "host": "host", "pid": 42},
    )


def web_ready_worker_not(client, *, failing: list[str]) -> dict:
    """/readyz 200 with the background ``degraded``; /readyz/worker 503 naming ``failing``."""
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["failing"] == []
    assert ready.json()["background"] == {"status": "degraded", "failing": failing}
    response = client.get("/readyz/worker")
    assert response.status_code == 503 and response.json()["failing"] == failing
    return dict(response.json())


def test_readyz_is_200_when_every_fatal_part_passes_and_names_each_part(client, db):
    beat(10)
    response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "ok" and body["failing"] == []
    assert body["background"] == {"status": "ok", "failing": []}
    parts = ("database", "migrations", "worker", "webhook_worker", "queue", "running", "llm")
    assert set(parts) <= set(body)
    for part in parts:
        assert body[part]["status"] and body[part]["detail"], part
    assert body["database"]["status"] == "ok" and body["migrations"] == {
        "status": "ok",
        "detail": "every migration is applied",
        "unapplied": 0,
    }
    assert "no-store" in response["Cache-Control"]
    worker = client.get("/readyz/worker")
    assert worker.status_code == 200 and worker.json()["failing"] == [] and "no-store" in worker["Cache-Control"]


def test_a_worker_killed_mid_session_leaves_web_ready_and_says_so_apart(client, cast):
    """After the worker group is killed under load, its session is "running" for a dead process until
    the new worker's sweep: the background is degraded, web stays in rotation."""
    import socket
    import subprocess
    import sys

    beat(10)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    AgentSessionFactory(
        project=cast.project_a, status="running", started_at=timezone.now(), heartbeat_at=timezone.now(),
        worker=f"{socket.gethostname()}/{child.pid}",
    )  # fmt: skip
    body = web_ready_worker_not(client, failing=["running"])
    assert body["running"]["sessions_without_worker"] == 1
    assert body["database"]["status"] == "ok" and body["worker"]["status"] == "ok"


def test_readyz_is_503_when_the_database_is_down(client, db):
    with mock.patch("system.views.connection.cursor", side_effect=OperationalError("down")):
        response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 503
    assert body["status"] == "error" and body["failing"] == ["database", "migrations"]
    assert body["background"]["failing"] == ["worker", "webhook_worker", "queue", "running"]
    assert body["database"] == {"status": "error", "detail": "the database does not answer (OperationalError)"}
    assert body["llm"]["status"] == "none"


# --- migrations -------------------------------------------------------------------------------------


def test_unapplied_migrations_turn_readyz_red_with_the_fix(client, db):
    beat(10)
    pending = [(SimpleNamespace(app_label="memories", name=name), False) for name in ("0098_next", "0099_more")]
    with mock.patch("django.db.migrations.executor.MigrationExecutor.migration_plan", return_value=pending):
        response = client.get("/readyz")
    body = response.json()
    assert response.status_code == 503 and body["failing"] == ["migrations"]
    assert body["migrations"] == {
        "status": "pending",
        "detail": "2 migration(s) not applied: memories.0098_next, memories.0099_more",
        "unapplied": 2,
        "fix": "Apply them: .venv/bin/python manage.py migrate",
    }


def test_the_migration_check_is_cached_briefly(client, db):
    beat(10)
    with mock.patch("django.db.migrations.executor.MigrationExecutor.migration_plan", return_value=[]) as plan:
        client.get("/readyz")
        client.get("/readyz")
    assert plan.call_count == 1


# --- worker ----------------------------------------------------------------------------------------


def test_a_worker_never_seen_turns_readyz_worker_red_with_the_fix(client, db):
    Schedule.objects.create(name="rb:queue-probe", func="reasoningbank.tasks.queue_probe")
    beat(10)
    WorkerHeartbeat.objects.filter(cluster="reasoningbank").delete()
    body = web_ready_worker_not(client, failing=["worker"])
    assert body["worker"] == {
        "status": "never_seen",
        "detail": "no heartbeat was ever recorded",
        "last_heartbeat_age_seconds": None,
        "stale_after_seconds": 180.0,
        "fix": "Start the worker: .venv/bin/python manage.py qcluster",
    }


def test_a_stale_heartbeat_turns_readyz_worker_red(client, db, settings):
    Schedule.objects.create(name="rb:queue-probe", func="reasoningbank.tasks.queue_probe")
    settings.WORKER_HEARTBEAT_STALE_AFTER = 60
    beat(50)  # well inside the limit: on a loaded machine seconds pass before /readyz reads it
    assert client.get("/readyz/worker").status_code == 200
    health_cache_clear()
    beat(61)
    worker = web_ready_worker_not(client, failing=["worker"])["worker"]
    assert worker["status"] == "stale" and worker["stale_after_seconds"] == 60
    assert worker["detail"] == "last heartbeat 1 minute ago (stale after 1 minute)"


def test_right_after_a_start_a_missing_heartbeat_reads_starting_and_passes(client, db, monkeypatch):
    just_booted(monkeypatch)
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json()["worker"]["status"] == "starting"


def test_right_after_a_restart_an_old_heartbeat_reads_starting_not_stale(client, db, monkeypatch):
    beat(3600)
    just_booted(monkeypatch)
    worker = client.get("/readyz").json()["worker"]
    assert worker["status"] == "starting" and worker["last_heartbeat_age_seconds"] >= 3600


def test_the_heartbeat_task_makes_the_worker_ok(client, db):
    queue_probe()
    worker = client.get("/readyz").json()["worker"]
    assert worker["status"] == "ok" and 0 <= worker["last_heartbeat_age_seconds"] < 5 and "fix" not in worker
    row = WorkerHeartbeat.objects.get()
    assert row.cluster == "reasoningbank" and row.pid and row.host


def test_without_the_heartbeat_schedule_the_fix_says_to_create_the_schedules(client, db):
    worker = client.get("/readyz").json()["worker"]
    assert worker["status"] == "never_seen"
    assert worker["fix"].startswith(
        "Create the schedules, then start the worker: .venv/bin/python manage.py setup_schedules"
    )


def test_with_inline_tasks_there_is_no_worker_to_wait_for(client, db, monkeypatch):
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)
    response = client.get("/readyz/worker")
    assert response.status_code == 200 and response.json()["worker"]["status"] == "inline"
    assert response.json()["webhook_worker"]["status"] == "inline"


# --- the webhook worker ----------------------------------------------------------------------------------


def test_a_webhook_worker_never_seen_fails_readyz_worker_with_the_command_that_starts_it(client, db):
    beat(10)
    WorkerHeartbeat.objects.filter(cluster__startswith="reasoningbank-webhooks@").delete()
    part = web_ready_worker_not(client, failing=["webhook_worker"])["webhook_worker"]
    assert part["status"] == "never_seen"
    assert part["fix"].endswith("Q_CLUSTER_NAME=reasoningbank-webhooks .venv/bin/python manage.py qcluster")


def test_a_restarted_webhook_worker_is_ok_while_any_of_its_processes_beat_lately(client, db, settings):
    settings.WORKER_HEARTBEAT_STALE_AFTER = 60
    beat(10, webhook_worker_ago=300)  # the killed one's last beat
    WorkerHeartbeat.objects.create(
        cluster="reasoningbank-webhooks@host/43", beat_at=timezone.now(), host="host", pid=43
    )  # its replacement
    response = client.get("/readyz/worker")
    assert response.status_code == 200 and response.json()["webhook_worker"]["status"] == "ok"
    health_cache_clear()
    WorkerHeartbeat.objects.filter(pid=43).delete()
    assert web_ready_worker_not(client, failing=["webhook_worker"])["webhook_worker"]["status"] == "stale"


def test_the_webhook_workers_queue_waiting_past_the_threshold_stalls_the_queue(client, db):
    beat(10)
    OrmQ.objects.create(key="reasoningbank-webhooks", payload="x", lock=timezone.now() - timedelta(minutes=6))
    queue = web_ready_worker_not(client, failing=["queue"])["queue"]
    assert queue["webhook_tasks"]["depth"] == 1 and queue["tasks"]["depth"] == 0


def test_setup_schedules_makes_the_queue_probe_run_every_minute(db):
    call_command("setup_schedules", stdout=mock.Mock())
    schedule = Schedule.objects.get(name="rb:queue-probe")
    assert schedule.func == "reasoningbank.tasks.queue_probe"
    assert schedule.schedule_type == Schedule.MINUTES and schedule.minutes == 1


def test_the_scheduler_enqueues_the_queue_probe_and_running_it_makes_the_worker_ok(client, transactional_db):
    """What django-q2's scheduler and a worker do with our schedule row."""
    from django_q.scheduler import scheduler
    from django_q.signing import SignedPackage

    call_command("setup_schedules", stdout=mock.Mock())
    Schedule.objects.exclude(name="rb:queue-probe").delete()
    Schedule.objects.update(next_run=timezone.now() - timedelta(seconds=1))
    scheduler()
    (queued,) = OrmQ.objects.all()
    task = SignedPackage.loads(queued.payload)
    assert task["func"] == "reasoningbank.tasks.queue_probe" and task["group"] == "rb:queue-probe"
    assert client.get("/readyz").json()["worker"]["status"] == "never_seen"
    health_cache_clear()
    queue_probe(*task["args"], **task["kwargs"])
    assert client.get("/readyz").json()["worker"]["status"] == "ok"


def test_a_probe_queued_under_its_old_dotted_path_still_runs_after_an_upgrade(client, transactional_db):
    """A task waiting in the queue keeps the dotted path it was queued with: one queued before the probe
    was renamed runs, and counts, instead of failing in the worker."""
    from django_q.tasks import async_task

    assert client.get("/readyz").json()["worker"]["status"] == "never_seen"
    health_cache_clear()
    async_task("reasoningbank.tasks.worker_heartbeat", sync=True)  # django-q2's worker, run in this process
    assert client.get("/readyz").json()["worker"]["status"] == "ok"


def test_queue_probe_results_never_push_other_tasks_out_of_the_kept_history(transactional_db, monkeypatch):
    """django-q2 keeps the last save_limit successes; counted per function, a beat a minute cannot
    evict the distillations and consolidations an operator looks for in the admin."""
    from django_q.brokers import get_broker
    from django_q.conf import Conf
    from django_q.models import Success
    from django_q.monitor import save_task

    monkeypatch.setattr(Conf, "SAVE_LIMIT", 2)

    def done(n: int, func: str) -> None:
        now = timezone.now()
        save_task(
            {
                "id": f"t{n}",
                "name": f"t{n}",
                "func": func,
                "args": (),
                "kwargs": {},
                "started": now,
                "stopped": now,
                "result": None,
                "success": True,
            },
            get_broker(),
        )

    done(0, "memories.tasks.session_distill")
    for n in range(1, 6):
        done(n, "reasoningbank.tasks.queue_probe")
    assert Success.objects.filter(func="memories.tasks.session_distill").count() == 1
    assert Success.objects.filter(func="reasoningbank.tasks.queue_probe").count() == 2


# --- queue ------------------------------------------------------------------------------------------


def test_an_empty_queue_is_ok(client, db):
    queue = client.get("/readyz").json()["queue"]
    assert queue == {
        "status": "ok",
        "detail": "nothing waiting",
        "depth": 0,
        "oldest_age_seconds": None,
        "stalled_after_seconds": 300.0,
        "tasks": {"depth": 0, "oldest_age_seconds": None},
        "consolidation_runs": {"depth": 0, "oldest_age_seconds": None},
        "sessions": {"depth": 0, "oldest_age_seconds": None},
        "webhook_tasks": {"depth": 0, "oldest_age_seconds": None},
    }


def test_a_broker_task_waiting_past_the_threshold_stalls_the_queue_and_readyz(client, db):
    beat(10)
    now = timezone.now()
    OrmQ.objects.create(key="reasoningbank", payload="x", lock=now - timedelta(minutes=6))
    OrmQ.objects.create(key="reasoningbank", payload="y", lock=now - timedelta(seconds=10))
    # pulled by a pusher (locked until its retry time): not waiting
    OrmQ.objects.create(key="reasoningbank", payload="z", lock=now + timedelta(minutes=10))
    queue = web_ready_worker_not(client, failing=["queue"])["queue"]
    assert queue["status"] == "stalled" and queue["depth"] == 2
    assert queue["tasks"]["depth"] == 2 and 355 < queue["tasks"]["oldest_age_seconds"] < 370
    assert queue["detail"] == "oldest waiting item: 6 minutes (stalled after 5 minutes)"


def test_fresh_work_in_the_queue_is_ok(client, db):
    OrmQ.objects.create(key="reasoningbank", payload="x", lock=timezone.now() - timedelta(seconds=30))
    queue = client.get("/readyz").json()["queue"]
    assert queue["status"] == "ok" and queue["depth"] == 1


def test_runs_and_sessions_stuck_in_queued_stall_the_queue(client, cast, settings):
    settings.QUEUE_STALLED_AFTER = 120
    old = timezone.now() - timedelta(minutes=3)
    ConsolidationRunFactory(project=cast.project_a, created_at=old)
    ConsolidationRunFactory(project=cast.project_b, status="completed", created_at=old)
    AgentSessionFactory(project=cast.project_b, external_id="s1", updated_at=old, created_at=old)
    queue = client.get("/readyz").json()["queue"]
    assert queue["status"] == "stalled" and queue["stalled_after_seconds"] == 120
    assert queue["consolidation_runs"]["depth"] == 1 and queue["consolidation_runs"]["oldest_age_seconds"] >= 180
    assert queue["sessions"]["depth"] == 1 and queue["sessions"]["oldest_age_seconds"] >= 180
    assert queue["depth"] == 2 and queue["oldest_age_seconds"] >= 180


def test_a_session_waiting_out_its_retry_backoff_is_not_stalled_work(client, cast):
    old = timezone.now() - timedelta(hours=1)
    AgentSessionFactory(
        project=cast.project_a,
        external_id="later",
        updated_at=old,
        next_attempt_at=timezone.now() + timedelta(minutes=2),
    )
    AgentSessionFactory(
        project=cast.project_a,
        external_id="due",
        updated_at=old,
        next_attempt_at=timezone.now() - timedelta(seconds=20),
    )
    queue = client.get("/readyz").json()["queue"]
    assert queue["sessions"]["depth"] == 1 and 15 < queue["sessions"]["oldest_age_seconds"] < 60
    assert queue["status"] == "ok"


# --- running work without a live worker -------------------------------------------------------------------


def test_a_run_left_running_by_a_dead_worker_turns_readyz_worker_red_while_the_worker_itself_beats(
    client, cast, settings
):
    """The red-team's case: the busy worker process was killed, django-q2 started another one (the
    cluster's heartbeat is fresh, nothing waits in the queue), and the run it had stayed "running"."""
    settings.WORK_HEARTBEAT_STALE_AFTER = 45
    beat(10)
    at = timezone.now() - timedelta(seconds=90)
    ConsolidationRunFactory(project=cast.project_a, status="running", started_at=at, heartbeat_at=at)

    body = web_ready_worker_not(client, failing=["running"])

    assert body["worker"]["status"] == "ok" and body["queue"]["status"] == "ok"
    running = body["running"]
    assert (running["status"], running["runs_without_worker"], running["sessions_without_worker"]) == ("orphaned", 1, 0)
    assert "without a live worker" in running["detail"] and "within a minute" in running["detail"]


def test_a_running_session_whose_worker_process_is_gone_turns_readyz_worker_red_at_once(client, cast):
    import socket
    import subprocess
    import sys

    beat(10)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    AgentSessionFactory(
        project=cast.project_a, status="running", started_at=timezone.now(), heartbeat_at=timezone.now(),
        worker=f"{socket.gethostname()}/{child.pid}",
    )  # fmt: skip

    body = client.get("/readyz/worker").json()

    assert body["failing"] == ["running"] and body["running"]["sessions_without_worker"] == 1


def test_work_running_with_a_fresh_heartbeat_is_ok(client, cast, settings):
    settings.WORK_HEARTBEAT_STALE_AFTER = 45
    beat(10)
    at = timezone.now() - timedelta(seconds=5)
    ConsolidationRunFactory(project=cast.project_a, status="running", started_at=at, heartbeat_at=at)

    response = client.get("/readyz")

    assert response.status_code == 200 and response.json()["running"]["status"] == "ok"


def test_health_reads_are_cached_briefly(client, db, django_assert_max_num_queries):
    client.get("/readyz")
    with django_assert_max_num_queries(1):  # SELECT 1 only: migrations, worker and queue come from the cache
        client.get("/readyz")


def test_readyz_says_unknown_and_fails_when_the_health_tables_cannot_be_read(client, db):
    beat(10)
    with mock.patch("system.views.worker_health_cached", side_effect=OperationalError("no table")):
        body = web_ready_worker_not(client, failing=["worker"])
    assert body["worker"]["status"] == "unknown"
    assert body["worker"]["detail"] == "cannot read the heartbeat (OperationalError)"


# --- llm --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LLM_PROVIDER": "none"}, ("none", "none")),
        ({"LLM_PROVIDER": "openai", "LLM_API_KEY": "sk-x"}, ("configured", "openai")),
        ({"LLM_PROVIDER": "anthropic", "LLM_API_KEY": None, "ANTHROPIC_API_KEY": "k"}, ("configured", "anthropic")),
        (
            {
                "LLM_PROVIDER": "openai",
                "LLM_API_KEY": None,
                "OPENAI_API_KEY": None,
                "LLM_BASE_URL": "http://127.0.0.1:9/v1",
            },
            ("configured", "openai"),
        ),
        (
            {"LLM_PROVIDER": "openai", "LLM_API_KEY": None, "OPENAI_API_KEY": None, "LLM_BASE_URL": None},
            ("missing_key", "openai"),
        ),
    ],
)
def test_the_llm_part_names_the_provider_and_is_never_fatal(client, db, settings, env, expected):
    beat(10)
    for name, value in env.items():
        setattr(settings, name, value)
    response = client.get("/readyz")
    llm = response.json()["llm"]
    assert response.status_code == 200 and response.json()["failing"] == []
    assert (llm["status"], llm["provider"]) == expected and llm["detail"]


def test_readyz_reveals_no_tenant_data(client, cast):
    AgentSessionFactory(project=cast.project_a, external_id="secret-run")
    for path in ("/readyz", "/readyz/worker"):
        text = client.get(path).content.decode()
        assert "secret-run" not in text and "acme" not in text and "web-app" not in text
