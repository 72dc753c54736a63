"""Settings as the deployed processes see them (not pytest's): each probe imports reasoningbank.settings in a
fresh interpreter with a chosen environment and command line. The embedded server is stubbed out, so no
PostgreSQL starts."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]
PROBE = """
import json, sys
argv = json.loads(sys.argv[1])
sys.argv = argv
import reasoningbank.embedded_db as embedded_db
embedded_db.embedded_database_settings = lambda *args, **kwargs: {
    "ENGINE": "django.db.backends.postgresql", "NAME": "postgres", "USER": "postgres", "PASSWORD": "",
    "HOST": "/nonexistent", "PORT": "",
}
from reasoningbank import settings
options = settings.DATABASES["default"]["OPTIONS"]
print(json.dumps({
    "pool": options.get("pool"),
    "connect_timeout": options.get("connect_timeout"),
    "secret_key": settings.SECRET_KEY,
    "session_cookie_secure": settings.SESSION_COOKIE_SECURE,
    "csrf_cookie_secure": settings.CSRF_COOKIE_SECURE,
    "site_url": settings.SITE_URL,
    "default": {k: settings.DATABASES["default"][k] for k in ("HOST", "OPTIONS")},
    "replica": settings.DATABASES.get("replica"),
    "routers": settings.DATABASE_ROUTERS,
    "startup_options": options.get("options"),
    "prepare_threshold": options.get("prepare_threshold", "unset"),
    "server_side_cursors_off": settings.DATABASES["default"].get("DISABLE_SERVER_SIDE_CURSORS", False),
}, default=str))
"""
WEB = ["/app/.venv/bin/uvicorn", "reasoningbank.asgi:application"]
WORKER = ["manage.py", "qcluster"]
KEY = {"SECRET_KEY": "s" * 50}  # for the probes about something else
_OURS = (
    "DEBUG",
    "SECRET_KEY",
    "DATABASE_URL",
    "DATABASE_REPLICA_URL",
    "DATABASE_POOLER",
    "SITE_URL",
    "RB_TESTING",
    "RB_DATA_DIR",
)


def probe(tmp_path: Path, argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in _OURS and not name.startswith(("DB_", "SESSION_", "CSRF_"))
    }
    environment.update({"RB_DATA_DIR": str(tmp_path / "data"), **env})
    return subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        cwd=BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )


def probed(tmp_path: Path, argv: list[str] = WEB, **env: str) -> dict[str, Any]:
    finished = probe(tmp_path, argv, **env)
    assert finished.returncode == 0, finished.stderr
    return dict(json.loads(finished.stdout.strip().splitlines()[-1]))


def test_the_web_gets_a_pool_that_gives_up_within_seconds(tmp_path):
    seen = probed(tmp_path, **KEY)
    assert seen["pool"]["timeout"] == 3
    assert seen["pool"]["reconnect_timeout"] == 10
    assert seen["connect_timeout"] == 3


def test_the_forking_worker_gets_plain_connections_not_the_pool(tmp_path):
    # a pool shared by qcluster's forked processes broke the pusher at the first schedule tick
    assert probed(tmp_path, WORKER, **KEY)["pool"] is None
    assert probed(tmp_path, WORKER, DB_POOL="true", **KEY)["pool"] is None


def test_a_replica_url_adds_a_replica_with_the_primarys_pool_timeouts_and_search_options(tmp_path):
    seen = probed(tmp_path, DATABASE_REPLICA_URL="postgres://reader:pw@replica.internal:5433/rb", **KEY)
    replica = seen["replica"]
    assert (replica["HOST"], replica["PORT"], replica["NAME"], replica["USER"]) == (
        "replica.internal",
        5433,
        "rb",
        "reader",
    )
    assert replica["OPTIONS"] == seen["default"]["OPTIONS"]  # the pool, connect_timeout, hnsw options
    assert replica["OPTIONS"]["pool"]["max_size"] == 20
    assert seen["routers"] == ["reasoningbank.db_replica.PrimaryReplicaRouter"]


def test_without_a_replica_url_there_is_only_the_primary(tmp_path):
    assert probed(tmp_path, **KEY)["replica"] is None


def test_a_replica_url_that_is_not_postgresql_is_refused_at_start(tmp_path):
    finished = probe(tmp_path, WEB, DATABASE_REPLICA_URL="mysql://reader@replica.internal/rb", **KEY)
    assert finished.returncode != 0
    assert "DATABASE_REPLICA_URL must point at PostgreSQL" in finished.stderr


def test_without_a_pooler_each_connection_asks_for_search_s_hnsw_settings_at_its_start(tmp_path):
    seen = probed(tmp_path, **KEY)
    assert seen["startup_options"] == "-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search=40"
    assert seen["server_side_cursors_off"] is False


@pytest.mark.parametrize("argv", [WEB, WORKER])
def test_behind_a_transaction_pooler_no_connection_state_outlives_a_transaction(tmp_path, argv):
    """PgBouncer refuses startup options; a WITH HOLD cursor or a prepared statement would stay on a server
    connection another client gets next (docs/operations.md#pgbouncer-in-transaction-pooling)."""
    seen = probed(tmp_path, argv, DATABASE_POOLER="transaction", **KEY)
    assert seen["startup_options"] is None
    assert seen["server_side_cursors_off"] is True
    assert seen["prepare_threshold"] is None


def test_an_unknown_pooler_is_refused_at_start(tmp_path):
    finished = probe(tmp_path, WEB, DATABASE_POOLER="session", **KEY)
    assert finished.returncode != 0
    assert "DATABASE_POOLER" in finished.stderr


def test_every_local_process_reads_one_generated_secret_key(tmp_path):
    web, worker = probed(tmp_path, WEB), probed(tmp_path, WORKER)
    command = probed(tmp_path, ["manage.py", "create_token", "acme"])

    key_file = tmp_path / "data" / "secret_key"
    assert web["secret_key"] == worker["secret_key"] == command["secret_key"] == key_file.read_text().strip()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_production_still_requires_a_secret_key(tmp_path):
    finished = probe(tmp_path, WEB, DATABASE_URL="postgres://rb:rb@db.example:5432/rb")
    assert finished.returncode != 0
    assert "SECRET_KEY must be set" in finished.stderr
    assert not (tmp_path / "data" / "secret_key").exists()


def test_a_command_beside_the_service_names_the_address_run_sh_serves_on(tmp_path):
    # create_org's sign-in link, typed in another shell after `PORT=9000 ./scripts/run.sh`
    command = ["manage.py", "create_org", "acme"]
    assert probed(tmp_path, command, **KEY)["site_url"] == "http://127.0.0.1:8000"  # nothing served yet
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "site_url").write_text("http://127.0.0.1:9000\n")

    assert probed(tmp_path, command, **KEY)["site_url"] == "http://127.0.0.1:9000"
    assert probed(tmp_path, command, SITE_URL="https://rb.example.com", **KEY)["site_url"] == "https://rb.example.com"


def test_a_set_secret_key_is_used_as_is(tmp_path):
    assert probed(tmp_path, SECRET_KEY="k" * 50)["secret_key"] == "k" * 50
    assert not (tmp_path / "data" / "secret_key").exists()


@pytest.mark.parametrize(
    ("env", "secure"),
    [
        ({}, False),  # the default SITE_URL, http://127.0.0.1:8000: DEBUG off must still sign in
        ({"SITE_URL": "http://127.0.0.1:8765"}, False),
        ({"SITE_URL": "https://bank.example.com"}, True),
        ({"SITE_URL": "https://bank.example.com", "DEBUG": "true"}, True),
        ({"SITE_URL": "http://127.0.0.1:8765", "SESSION_COOKIE_SECURE": "true", "CSRF_COOKIE_SECURE": "true"}, True),
        ({"SITE_URL": "https://bank.example.com", "SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0"}, False),
    ],
)
def test_cookies_are_secure_when_the_site_is_served_over_https(tmp_path, env, secure):
    seen = probed(tmp_path, WEB, **KEY, **env)
    assert seen["session_cookie_secure"] is secure
    assert seen["csrf_cookie_secure"] is secure


def test_a_work_heartbeat_limit_below_two_beats_is_refused(tmp_path):
    """One late beat must not read as a dead worker (docs/operations.md)."""
    finished = probe(tmp_path, WEB, WORK_HEARTBEAT_INTERVAL="10s", WORK_HEARTBEAT_STALE_AFTER="15s", **KEY)
    assert finished.returncode != 0
    assert "WORK_HEARTBEAT_STALE_AFTER must be at least twice WORK_HEARTBEAT_INTERVAL" in finished.stderr


def test_a_failure_backoff_maximum_below_its_base_is_refused(tmp_path):
    finished = probe(tmp_path, WEB, CONSOLIDATION_FAILURE_BACKOFF="2h", CONSOLIDATION_FAILURE_BACKOFF_MAX="1h", **KEY)
    assert finished.returncode != 0
    assert "CONSOLIDATION_FAILURE_BACKOFF_MAX must be at least CONSOLIDATION_FAILURE_BACKOFF" in finished.stderr
