"""The service's own connection settings through Debian's PgBouncer in transaction pooling, one server
connection shared by every client (docs/operations.md#pgbouncer-in-transaction-pooling). The whole service
behind it (two machines, web and worker) is tests/e2e/test_many_processes.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg_servers import PgServer, database_create, server_start
from tests.pgbouncer import PgBouncer, pgbouncer_start

REPO = Path(__file__).resolve().parents[2]
# Four threads, each its own Django connection, take turns through two server connections; every query
# runs often enough for psycopg to prepare it (after 5), and .iterator() would declare a WITH HOLD cursor.
SCRIPT = """
import threading
from django.db import connection
from django.contrib.auth.models import Group

failed = []
settings = []

def work(n):
    try:
        for i in range(12):
            with connection.cursor() as cursor:
                cursor.execute("SELECT %s::int + 1", [i])
                assert cursor.fetchone()[0] == i + 1
            assert list(Group.objects.filter(name=f"g{n}").iterator()) == []
        cursor = connection.cursor()
        cursor.execute("SELECT current_setting('hnsw.iterative_scan', true)")
        settings.append(cursor.fetchone()[0])
    except BaseException as exc:
        failed.append(exc)
        raise
    finally:
        connection.close()

threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
if failed:
    raise SystemExit(1)
# printed here, not in the threads: two threads' prints can interleave within a line
print(" ".join(settings), "ok")
"""
STORE = "from reasoningbank.db_session import session_defaults_store; session_defaults_store()"


@pytest.fixture(scope="module")
def bouncer() -> Iterator[tuple[PgServer, PgBouncer]]:
    # not pytest's tmp_path: another pytest run on the machine makes its parent private to root again, and
    # the server runs as another user under root (tests/pg_servers.py)
    root = Path(tempfile.mkdtemp(prefix="rb-pgbouncer-"))
    server = server_start(root / "server")
    try:
        database_create(server, "rb")
        # two: fewer than the clients below; one is too few for prepare_service, whose lock holds one while
        # it migrates on another (docs/operations.md#pgbouncer-in-transaction-pooling)
        pooler = pgbouncer_start(server, root / "bouncer", pool_size=2)
        try:
            yield server, pooler
        finally:
            pooler.stop()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _shell(pooler: PgBouncer, script: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "DB_", "RB_TESTING"))}
    environment.update(DATABASE_URL=pooler.url("rb"), SECRET_KEY="s" * 50, DB_POOL="false", **env)
    command = [sys.executable, "manage.py", *script, "--verbosity", "0"]
    return subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=300)


def test_without_the_pooler_setting_pgbouncer_refuses_the_service_s_connections(bouncer):
    _server, pooler = bouncer
    finished = _shell(pooler, ["shell", "-c", SCRIPT])
    assert finished.returncode != 0
    assert "unsupported startup parameter: options" in finished.stderr


def test_with_it_four_connections_share_two_server_connections_and_get_search_s_settings(bouncer):
    server, pooler = bouncer
    for command in (["migrate", "auth"], ["shell", "-c", STORE]):
        done = _shell(pooler, command, DATABASE_POOLER="transaction")
        assert done.returncode == 0, done.stderr[-3000:]
    # PgBouncer's server connections opened before the settings were stored keep what they started with
    server.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'rb'")

    finished = _shell(pooler, ["shell", "-c", SCRIPT], DATABASE_POOLER="transaction")

    assert finished.returncode == 0, finished.stderr[-3000:]
    assert finished.stdout.split() == ["relaxed_order"] * 4 + ["ok"]
